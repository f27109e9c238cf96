"""Property: a secret placed anywhere a user can put one never reaches a byte the suite writes
(issue #52 item 1: secrets tainted at the source, :mod:`agents.secrets`).

Hypothesis generates canary secrets of varied shapes (prefixed keys: ``sk-``, ``gsk_``, ``xai-``,
``AKIA`` ...; high-entropy tokens; ``user:password`` pairs) and places them

* in every credential slot of the LLM config: the API key and a secret header read from
  environment variables, header values under arbitrary names (``X-Auth`` ...), the userinfo and
  the query string of ``base_url`` (plus an environment variable nothing reads), then runs
  ``mtr synthesize`` (tiny corpus, spine included, self-audit included), ``mtr audit --prefect``,
  ``mtr abstention --prefect`` and ``mtr llm-check`` against the fake OpenAI-compatible server:
  every command succeeds, the server receives the credentials (the query as request parameters
  of a well-formed path), and
* in every other string field of the LLM config and of the run config (model ids, names,
  paths, ``api_key_env``, ...): every command refuses the config in one line, before any stage.

After each example every byte written is searched for every canary, as written, URL-encoded and
base64 (at each alignment, so a canary inside a larger base64 blob is found too): the run
directories (raw bytes, decoded Parquet, decoded SQLite), PREFECT_HOME and the Prefect database
(flow run parameters, states, logs, events), stdout, stderr and the log records.

Affordable by design: few examples (``derandomize`` for CI), the placements grouped into one
successful run of the four commands per example and one fast refused run per placement.
"""
from __future__ import annotations

import base64
import json
import logging
import math
import os
import re
import sqlite3
import string
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.reliability.helpers import sqlite_text
from agents.testing.fake_roles import RoleScriptedServer

ALNUM = string.ascii_letters + string.digits
PREFIXES = ("sk-proj-", "sk-", "gsk_", "xai-", "ghp_", "hf_", "AIza", "sk-ant-api03-", "glpat-", "nvapi-")
# few examples, each a whole run; derandomized for CI; no shrinking (a shrink step is a whole run too)
EXAMPLES = settings(max_examples=2, deadline=None, derandomize=True, database=None,
                    phases=(Phase.explicit, Phase.generate), suppress_health_check=list(HealthCheck))
REFUSALS = settings(EXAMPLES, max_examples=4)     # refused runs take milliseconds

DOCS = {
    "volcanoes": "Volcanoes form where magma rises through the crust. Shield volcanoes such as Mauna Loa have gentle "
                 "slopes built by fluid basalt lava. Stratovolcanoes like Mount Fuji are steep and explosive.",
    "glaciers": "Glaciers are rivers of ice that move under their own weight. They carve U-shaped valleys, leave "
                "moraines behind and store most of the fresh water on Earth in Antarctica and Greenland.",
    "coral": "Coral reefs are built by colonies of tiny animals called polyps. Reefs shelter a quarter of marine "
             "species. Warm water causes bleaching, when polyps expel the algae that feed them.",
    "deserts": "Deserts receive less than 250 millimetres of rain a year. The Sahara is the largest hot desert; "
               "Antarctica is the largest cold one. Cacti store water in their thick stems.",
    "rivers": "The Nile and the Amazon are the two longest rivers. A river's delta forms where it meets the sea "
              "and drops its sediment. Meanders form as the outer bank erodes and the inner bank fills.",
    "forests": "Tropical rainforests hold more than half of the species on land. Boreal forests of spruce and "
               "pine circle the far north. Forest canopies intercept rain and cool the ground below.",
}


# -- canaries (defined here, independently of agents.secrets: the shapes a user's keys have) ----------
def entropy(text: str) -> float:
    """Shannon entropy, bits per character."""
    return -sum(c / len(text) * math.log2(c / len(text)) for c in Counter(text).values()) if text else 0.0


def _random_token(t: str) -> bool:
    """A random-looking token: lower and upper case and digits, 0.85 x log2(length) bits per character."""
    return all(re.search(p, t) for p in ("[a-z]", "[A-Z]", "[0-9]")) and entropy(t) >= 0.85 * math.log2(len(t))


def _body(min_size: int = 24, max_size: int = 36):
    return st.text(ALNUM, min_size=min_size, max_size=max_size).filter(_random_token)


def key_canaries():
    """Values that look like keys: a known prefix + a random body, AWS key ids, bare high-entropy tokens."""
    prefixed = st.builds(lambda p, b: p + b, st.sampled_from(PREFIXES), _body())
    akia = st.builds(lambda b: "AKIA" + b, st.text(string.ascii_uppercase + string.digits, min_size=16,
                                                   max_size=16).filter(lambda b: entropy(b) >= 3.2))
    return st.one_of(prefixed, akia, _body())


def any_canaries():
    """Any credential: a key-shaped value or a ``user:password`` pair with a random password."""
    pw = st.text(ALNUM + "-_.~!$", min_size=12, max_size=20).filter(   # random, not a word of the code
        lambda p: all(re.search(c, p) for c in ("[a-z]", "[A-Z]", "[0-9]")) and entropy(p) >= 3.3)
    user_pass = st.builds(lambda u, p: f"{u}:{p}", st.text(string.ascii_lowercase, min_size=4, max_size=8), pw)
    return st.one_of(key_canaries(), user_pass)


HEADER_NAMES = st.from_regex(r"X-[A-Z][a-z]{2,8}(-[A-Z][a-z]{2,6})?", fullmatch=True).filter(
    lambda h: h.lower() not in ("x-api-key", "x-auth", "x-tenant-secret"))
PARAM_NAMES = st.from_regex(r"[a-z][a-z_]{1,8}", fullmatch=True).filter(lambda n: n != "key")


def _b64_variants(data: bytes) -> set[str]:
    """The base64 text of ``data`` at each of the three alignments inside a larger blob (std and URL-safe)."""
    out = set()
    for k in range(3):
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            s = enc(b"\0" * k + data).decode()
            skip = (0, 2, 3)[k]
            end = ((k + len(data)) * 8) // 6
            part = s[skip:end - 1]
            if len(part) >= 8:
                out.add(part)
    return out


def forms(*canaries: str) -> set[str]:
    """Every canary (and the password of a ``user:password`` one) as written, URL-encoded and base64."""
    out: set[str] = set()
    for c in canaries:
        parts = {c, c.partition(":")[2]} if ":" in c and not c.startswith("http") else {c}
        for p in parts:
            if len(p) < 8:
                continue
            out |= {p, quote(p, safe=""), quote(p)}
            out |= _b64_variants(p.encode())
    return out


# -- where bytes were written ------------------------------------------------------------------------
def _sqlite_text(path: Path) -> str:
    try:
        return sqlite_text(path)
    except sqlite3.Error:      # (a database being written by a server still running)
        return ""


def _prefect_roots() -> list[Path]:
    """PREFECT_HOME and the folder of the Prefect database (its -wal / -shm files included),
    after the logs and events this process still holds are sent."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import get_current_settings
    APILogWorker.drain_all()
    EventsWorker.drain_all()
    s = get_current_settings()
    url = s.server.database.connection_url.get_secret_value()
    return [Path(s.home), Path(url.split(":///", 1)[1]).parent]


def _flow_run_parameters(name_prefix: str) -> list[dict]:
    """The parameters of the flow runs whose name starts with ``name_prefix`` (the Prefect database)."""
    db = _prefect_roots()[1] / "prefect-test.db"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [json.loads(p) for (n, p) in con.execute("SELECT name, parameters FROM flow_run")
                if n.startswith(name_prefix)]
    finally:
        con.close()


def leaks(found_in: dict[str, str], roots: list[Path], canaries: list[str]) -> list[str]:
    """Where any form of any canary occurs: the given texts and every file under ``roots``."""
    fs = forms(*canaries)
    fb = [f.encode() for f in fs]
    hits = [f"{where}: {f!r}" for where, text in found_in.items() for f in fs if f in text]
    for root in roots:
        for p in (q for q in root.rglob("*") if q.is_file()):
            data = p.read_bytes()
            views = [data]
            if p.suffix == ".parquet":
                views.append(str(pq.read_table(p).to_pylist()).encode())
            if data[:16] == b"SQLite format 3\x00":
                views.append(_sqlite_text(p).encode())
            hits += [f"{p}: {f!r}" for v in views for f in fb if f in v]
    return sorted(set(hits))


# -- running mtr the way a user does ------------------------------------------------------------------
@pytest.fixture
def mtr(capfd, monkeypatch):
    """``flows.cli.main`` in-process; returns (exit code, stdout, stderr) captured at the file
    descriptors (Prefect's console handlers write there, whatever sys.stderr is)."""
    def run(*args: object) -> tuple[int, str, str]:
        from flows.cli import main
        monkeypatch.setattr(sys, "argv", ["mtr", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out, err = capfd.readouterr()
        return code, out, err
    return run


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("taint-corpus")
    for name, text in DOCS.items():
        (d / f"{name}.md").write_text(f"# {name.title()}\n\n{text}\n\n{text.replace('.', ' again.')}\n")
    return d


@pytest.fixture(scope="module")
def server():
    srv = RoleScriptedServer().start()
    yield srv
    srv.stop()


def _run_config(path: Path, emb_cache: Path, **extra: object) -> Path:
    """A tiny run: small chunks and clusters, one conversation of two turns, BM25 uniqueness."""
    cfg = {"embed": {"cache_dir": str(emb_cache)},
           "chunk": {"mode": "chars", "max_size": 300, "min_size": 120},
           "cluster": {"k": 4, "size": 2},
           "synth": {"turns": 2, "conversations": 1, "uniqueness_retriever": "bm25", "uniqueness_k": 2}}
    for dotted, value in extra.items():
        d = cfg
        *head, last = dotted.split(".")
        for k in head:
            d = d.setdefault(k, {})
        d[last] = value
    path.write_text(json.dumps(cfg))        # JSON is YAML
    return path


def _llm_config(path: Path, endpoint: dict, **top: object) -> Path:
    cfg = {"endpoints": {"fake": {"model": "fake-model", "timeout_s": 30, **endpoint}},
           "retry": {"max_attempts": 2, "backoff_base_s": 0.002, "backoff_max_s": 0.02}, **top}
    path.write_text(json.dumps(cfg))
    return path


# -- 1. credentials in their slots: the four commands work and write none of them -------------------------
@EXAMPLES
@given(api_key=any_canaries(), env_header=any_canaries(), x_auth=any_canaries(), header=key_canaries(),
       header_name=HEADER_NAMES, user=st.text(string.ascii_lowercase, min_size=4, max_size=8),
       password=key_canaries(), query_key=key_canaries(), param=PARAM_NAMES, param_value=key_canaries(),
       unused_env=any_canaries())
def test_credentials_in_their_slots_reach_no_byte_written(mtr, server, corpus, shared_emb_cache, tmp_path_factory,
                                                          prefect_harness, caplog, monkeypatch, api_key, env_header,
                                                          x_auth, header, header_name, user, password, query_key,
                                                          param, param_value, unused_env):
    caplog.set_level(logging.INFO)
    canaries = [api_key, env_header, x_auth, header, f"{user}:{password}", password, query_key, param_value,
                unused_env]
    inputs, work = tmp_path_factory.mktemp("taint-in"), tmp_path_factory.mktemp("taint-ok")  # inputs: not searched
    monkeypatch.setenv("MTR_TAINT_API_KEY", api_key)
    monkeypatch.setenv("MTR_TAINT_HEADER", env_header)
    monkeypatch.setenv("MTR_TAINT_UNUSED", unused_env)
    host = server.base_url.split("://", 1)[1]
    url = f"http://{user}:{quote(password, safe='')}@{host}?key={quote(query_key, safe='')}&{param}={param_value}"
    llm = _llm_config(inputs / "llm.yaml", {"base_url": url, "api_key_env": "MTR_TAINT_API_KEY",
                                          "headers": {"X-Auth": x_auth, header_name: header},
                                          "header_envs": {"X-Tenant-Secret": "MTR_TAINT_HEADER"}})
    run, before = work / "bench", server.count
    server.paths.clear()
    results = {"synthesize": mtr("synthesize", "--corpus", corpus, "--out", run, "-c",
                                 _run_config(inputs / "mtr.yaml", shared_emb_cache), "--llm-config", llm),
               "audit": mtr("audit", "-b", run, "-f", "ours", "--llm-config", llm, "--judge", "fake", "--metric",
                            "alignment", "--negatives", "bm25", "--limit", "2", "--out", work / "audit", "--prefect"),
               "abstention": mtr("abstention", "--benchmark", run, "--format", "ours", "--llm-config", llm,
                                 "--judge", "fake", "--retriever", "bm25-turn", "--limit", "2", "--review-n", "2",
                                 "--out", work / "abstention", "--prefect"),
               "llm-check": mtr("llm-check", "--llm-config", llm)}
    texts = {f"{name} {which}": t for name, r in results.items() for which, t in (("stdout", r[1]), ("stderr", r[2]))}
    texts["log records"] = caplog.text
    found = leaks(texts, [work, *_prefect_roots()], canaries)      # (checked also when a command failed)
    assert not found, "canaries found:\n" + "\n".join(found)
    for name, (code, out, err) in results.items():
        assert code == 0, f"{name}: {out}{err}"
    # the credentials were sent, the query as parameters of a well-formed path
    sent = server.requests[before:]
    assert sent and all(r.headers.get("x-auth") == x_auth and r.headers.get(header_name.lower()) == header
                        and r.headers.get("x-tenant-secret") == env_header for r in sent)
    posts = [p for p in server.paths if "/chat/completions" in p]
    assert posts and all(p.startswith("/v1/chat/completions?") and f"{param}={param_value}" in p for p in posts)
    # each command did its work, the LLM's included
    turns = pq.read_table(run / "turns.parquet").to_pylist()
    assert turns and {t["status"] for t in turns} == {"ok"}
    scores = pq.read_table(work / "audit" / "audit_scores.parquet").to_pylist()
    assert {x["judge"] for x in scores} == {"fake"} and {x["status"] for x in scores} != {"error"}
    assert "llm-check" in results and "structured" in results["llm-check"][1]
    # the audit's flow run carries the LLM config's file and digest, never the config
    params = [p for p in _flow_run_parameters("audit-") if p.get("run_dir") == str((work / "audit").resolve())]
    assert len(params) == 1 and params[0]["llm_config"] == str(llm.resolve()) and len(params[0]["llm_digest"]) == 16
    assert "endpoints" not in json.dumps(params[0])
    manifest = json.loads((run / "manifest.json").read_text())["llm"]["config"]["endpoints"]["fake"]
    assert manifest["headers"] == {"X-Auth": "***", header_name: "***"}
    assert manifest["base_url"] == f"http://***@{host}?key=***&{param}=***"


# -- 2. a key anywhere else: refused in one line, before any stage, never echoed ------------------------
def _llm_placements(c: str) -> dict[str, tuple[dict, dict]]:
    """LLM config field -> (endpoint fields, top-level fields) holding the canary ``c``."""
    return {"api_key_env": ({"api_key_env": c}, {}),
            "header_envs": ({"header_envs": {"X-Org": c}}, {}),
            "model": ({"model": c}, {}),
            "header name": ({"headers": {c: "v"}}, {}),
            "endpoint name": ({}, {"endpoints": {c: {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}}),
            "role name": ({}, {"roles": {c: {"kind": "judge"}}}),
            "role model": ({}, {"roles": {"judge": {"model": c}}}),
            "price model": ({}, {"prices": {c: {"input_per_1m": 1, "output_per_1m": 1}}}),
            "cache dir": ({}, {"cache": {"dir": f"/tmp/{c}"}}),
            "stop sequence": ({}, {"roles": {"judge": {"sampling": {"stop": [c]}}}})}


def _run_placements() -> dict[str, bool]:
    """Every string field of the run config, found in its model: dotted name -> holds a list."""
    from flows.config import MTRConfig
    fields: dict[str, bool] = {}

    def walk(model, prefix: str) -> None:
        for name, f in model.model_fields.items():
            ann = str(f.annotation)
            if getattr(f.annotation, "model_fields", None) is not None:
                walk(f.annotation, f"{prefix}{name}.")
            elif ann in ("<class 'str'>", "str | None", "typing.Optional[str]"):
                fields[f"{prefix}{name}"] = False
            elif ann in ("list[str]", "list[str] | None", "typing.Optional[list[str]]"):
                fields[f"{prefix}{name}"] = True
    walk(MTRConfig, "")
    return fields


@REFUSALS
@given(canary=key_canaries(), userpass=any_canaries())
def test_a_key_in_any_other_field_is_refused_unechoed(mtr, server, corpus, shared_emb_cache, tmp_path_factory,
                                                     prefect_harness, caplog, canary, userpass):
    caplog.set_level(logging.INFO)
    inputs, work = tmp_path_factory.mktemp("taint-in"), tmp_path_factory.mktemp("taint-refused")
    good_llm = _llm_config(inputs / "good-llm.yaml", {"base_url": server.base_url})
    runs: dict[str, tuple[int, str, str]] = {}

    def refused(name: str, r: tuple[int, str, str]) -> tuple[int, str, str]:
        code, out, err = r
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, f"{name}: exit {code}: {out}{err}"
        assert re.search(r"looks like a (secret|key)|NAME of an environment variable", err), f"{name}: {err}"
        return r
    fields = _run_placements()
    assert {"runs_root", "embed.model", "embed.cache_dir", "llm_config", "scale.dask_address"} <= set(fields)
    for i, (field, is_list) in enumerate(fields.items()):   # the run config: synthesize refuses it before the spine
        value = canary if field != "scale.dask_address" else f"tcp://{userpass}@10.0.0.1:8786"
        cfg = _run_config(inputs / f"run-{i}.yaml", shared_emb_cache, **{field: [value] if is_list else value})
        llm_opt = [] if field == "llm_config" else ["--llm-config", good_llm]   # the option would win
        runs[f"synthesize {field}"] = refused(f"synthesize {field}", mtr(
            "synthesize", "--corpus", corpus, "--out", work / f"run-{i}", "-c", cfg, *llm_opt))
    for i, (field, (ep, top)) in enumerate(_llm_placements(canary).items()):   # the LLM config: every command
        llm = _llm_config(inputs / f"llm-{i}.yaml", {"base_url": server.base_url, **ep}, **top)
        for cmd, args in (("synthesize", ("--corpus", corpus, "--out", work / f"s-{i}", "-c",
                                           _run_config(inputs / "ok.yaml", shared_emb_cache))),
                          ("audit", ("-b", corpus, "-f", "ours", "--out", work / f"a-{i}", "--prefect")),
                          ("abstention", ("--benchmark", corpus, "--format", "ours", "--out", work / f"b-{i}",
                                          "--prefect")),
                          ("llm-check", ())):
            runs[f"{cmd} llm {field}"] = refused(f"{cmd} llm {field}", mtr(cmd, *args, "--llm-config", llm))
    assert list(work.iterdir()) == []     # no stage ran: nothing written
    texts = {f"{name} {i}": t for name, r in runs.items() for i, t in enumerate(r[1:])}
    texts["log records"] = caplog.text
    found = leaks(texts, [work, *_prefect_roots()], [canary, userpass])
    assert not found, "canaries found:\n" + "\n".join(found)


def test_canary_forms_find_a_canary_inside_base64_and_url_encoding():
    """The search itself: a canary inside a larger base64 blob (any alignment) or URL-encoded is found."""
    c = "gsk_Zq8Lm2Vx9Tb4Nc7Rw1Ys5Kd3"
    for pad in (b"", b"x", b"xy", b'{"key": "'):
        blob = base64.b64encode(pad + c.encode() + b'", "more": 1}').decode()
        assert any(f in blob for f in forms(c)), pad
    assert any(f in quote("u:" + "p@ss/w0rd-Zz81Qx", safe="") for f in forms("u:p@ss/w0rd-Zz81Qx"))
    assert os.environ.get("MTR_TAINT_API_KEY") is None


def test_a_flow_run_carries_the_llm_config_file_and_digest_and_loads_it_inside(tmp_path, monkeypatch):
    from agents.config import LLMConfig
    from agents.errors import LLMConfigError
    from flows import prefect_env
    from flows.prefect_env import llm_flow_params, llm_from_flow_params
    p = _llm_config(tmp_path / "llm.yaml", {"base_url": "http://u:pw-Zq8Lm2Vx9@127.0.0.1:9/v1"})
    llm = LLMConfig.from_file(p)
    params = llm_flow_params(llm)
    assert params == {"llm_config": str(p.resolve()), "llm_digest": llm.digest()} and "pw-Zq8" not in str(params)
    assert llm_from_flow_params(**params) is llm                  # handed in: this process's object
    monkeypatch.setattr(prefect_env, "_HANDED", {})              # another process: loaded from the file
    assert llm_from_flow_params(**params) == llm
    _llm_config(p, {"base_url": "http://127.0.0.1:9/v1", "model": "changed"})
    with pytest.raises(LLMConfigError, match="changed after the run started"):
        llm_from_flow_params(**params)
    assert llm_flow_params(None) == {"llm_config": None, "llm_digest": None}
    assert llm_from_flow_params(None, None) is None

"""The LLM path of ``mtr synthesize`` / ``mtr audit`` as a user runs it (integrity #12: items
3, 5, 8, 10, 11, 15): a fake OpenAI-compatible endpoint on 127.0.0.1, the real CLI entry
point, the session's temporary Prefect API. Each test asserts the exact outcome and that
counts in = counts out (planned turns = ok + failed turns)."""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pyarrow.parquet as pq
import pytest

from tests.reliability.helpers import sqlite_text
from agents.testing.fake_roles import RoleScriptedServer
from agents.testing.fake_server import Reply

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def spine(tmp_path_factory, shared_emb_cache):
    """documents/chunks/embeddings/clusters of examples/wiki (built once for the module)."""
    from tests.spine import build_example_spine
    return build_example_spine(tmp_path_factory.mktemp("llm-spine"), shared_emb_cache)[0]


@pytest.fixture
def run_dir(spine, tmp_path):
    dst = tmp_path / "bench"
    shutil.copytree(spine, dst, ignore=shutil.ignore_patterns("cache"))
    return dst


@pytest.fixture
def server():
    srv = RoleScriptedServer().start()
    yield srv
    srv.stop()


def _config(tmp_path, shared_emb_cache, **synth) -> Path:
    """An mtr config: the shared embedding cache, BM25 uniqueness search, the given [synth] keys. These tests read
    the records of the turns they make fail, so a conversation with failed turns is not replaced by a spare
    (``min_turns_kept = 0``; the replacement has its own tests: tests/agents/synth/test_replace.py)."""
    synth = {"uniqueness_retriever": "bm25", "switch_ratio": 0.5, "uniqueness_k": 4, "min_turns_kept": 0.0, **synth}
    lines = ["[embed]", f'cache_dir = "{shared_emb_cache}"', "[synth]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in synth.items()]
    p = tmp_path / f"mtr-{len(list(tmp_path.glob('mtr-*.toml')))}.toml"
    p.write_text("\n".join(lines) + "\n")
    return p


def _llm(tmp_path, base_url: str, **endpoint) -> Path:
    ep = {"base_url": base_url, "model": "fake-model", "timeout_s": 30, **endpoint}
    cfg = {"endpoints": {"fake": ep}, "retry": {"backoff_base_s": 0.002, "backoff_max_s": 0.02}}
    p = tmp_path / "llm.yaml"
    p.write_text(json.dumps(cfg))           # JSON is YAML
    return p


def _tables(run: Path) -> dict[str, list[dict]]:
    return {t: pq.read_table(run / f"{t}.parquet").to_pylist() for t in ("conversations", "turns", "failures")}


def _counts_balance(tabs) -> None:
    for c in tabs["conversations"]:
        mine = [t for t in tabs["turns"] if t["conv_id"] == c["conv_id"]]
        assert len(mine) == c["n_turns"] == c["n_ok"] + c["n_failed"]
        assert [t["turn"] for t in mine] == list(range(1, c["n_turns"] + 1))


def _synthesize(mtr, run, cfg, llm, turns, conversations=2):
    return mtr("synthesize", "--out", run, "-c", cfg, "--llm-config", llm, "--turns", turns,
               "--conversations", conversations)


# -- item 15: `mtr fake-llm` with no script runs a whole synthesis -----------------------------
def test_fake_llm_command_serves_a_working_synthesis(mtr, run_dir, tmp_path, shared_emb_cache, prefect_harness):
    p = subprocess.Popen([sys.executable, "-m", "flows.cli", "fake-llm", "--port", "0"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = p.stdout.readline()
        url = line.split("listening on ", 1)[1].split()[0]
        r = _synthesize(mtr, run_dir, _config(tmp_path, shared_emb_cache), _llm(tmp_path, url), 3)
    finally:
        p.terminate()
        p.wait()
    assert r.exit_code == 0, r.output
    tabs = _tables(run_dir)
    assert len(tabs["conversations"]) == 2 and tabs["failures"] == []
    assert [t["status"] for t in tabs["turns"]] == ["ok"] * 6
    assert {json.loads(t["model"])["questioner"] for t in tabs["turns"]} == {"fake-model"}
    _counts_balance(tabs)


# -- item 5: a rerun with other settings never mixes old and new conversations -----------------
def test_rerun_with_more_turns_starts_fresh_and_same_settings_resume(mtr, run_dir, tmp_path, shared_emb_cache,
                                                                     server, prefect_harness):
    cfg, llm = _config(tmp_path, shared_emb_cache), _llm(tmp_path, server.base_url)
    assert _synthesize(mtr, run_dir, cfg, llm, 2).exit_code == 0
    first = server.count
    r = _synthesize(mtr, run_dir, cfg, llm, 3)
    assert r.exit_code == 0, r.output
    assert server.count > first                               # the new plan was synthesized, not read back
    tabs = _tables(run_dir)
    assert [c["n_turns"] for c in tabs["conversations"]] == [3, 3]
    for c in tabs["conversations"]:                           # switch turns of the new plan, on its turns
        switch = [t["turn"] for t in tabs["turns"] if t["conv_id"] == c["conv_id"] and t["is_switch"]]
        assert switch == ([c["switch_turn"]] if c["switch_turn"] is not None else [])
    _counts_balance(tabs)
    again = server.count
    assert _synthesize(mtr, run_dir, cfg, llm, 3).exit_code == 0
    assert server.count == again                              # same settings: resumed, zero repeated calls
    assert _tables(run_dir)["turns"] == tabs["turns"]


# -- item 8: partly failed uniqueness judgements are recorded; the policy decides -------------
@pytest.mark.parametrize("policy", ["flag", "fail"])
def test_partly_failed_uniqueness_judgements_are_recorded(mtr, run_dir, tmp_path, shared_emb_cache, server,
                                                          prefect_harness, policy):
    server.on("strict relevance assessor", Reply.status(400, "shard unavailable"),
              Reply.status(400, "shard unavailable"))
    cfg = _config(tmp_path, shared_emb_cache, uniqueness_partial_failure=policy)
    r = _synthesize(mtr, run_dir, cfg, _llm(tmp_path, server.base_url), 1, conversations=1)
    assert r.exit_code == 0, r.output
    tabs = _tables(run_dir)
    (turn,) = tabs["turns"]
    lost = [f for f in tabs["failures"] if f["step"] == "uniqueness"]
    if policy == "flag":
        assert turn["status"] == "ok" and turn["flags"] == "uniqueness_incomplete"
        assert turn["uniqueness_failed"] == 2 and turn["uniqueness_judged"] >= 3
        assert [f["kind"] for f in lost] == ["judgement_api_error"] * 2
        assert all("shard unavailable" in f["message"] for f in lost)
    else:
        assert turn["status"] == "failed" and "2 of" in turn["failure_reason"]
        assert [f["kind"] for f in lost] == ["partial_failure"]
    _counts_balance(tabs)


# -- item 11: a repeated unanswerable question is rejected by the verifier's novelty check ----
def test_repeated_unanswerable_question_is_rejected(mtr, run_dir, tmp_path, shared_emb_cache, server,
                                                    prefect_harness):
    same = {"doc_index": 0, "question": "Who will chair the committee in 2090?",
            "standalone_question": "Who will chair the committee in 2090?"}
    server.on("NONE of the passages", *[Reply.json(same)] * 10)
    cfg = _config(tmp_path, shared_emb_cache, unanswerable_ratio=1.0, switch_ratio=0.0, max_attempts=2)
    r = _synthesize(mtr, run_dir, cfg, _llm(tmp_path, server.base_url), 3, conversations=1)
    assert r.exit_code == 0, r.output
    tabs = _tables(run_dir)
    assert [(t["status"], t["answerability"]) for t in tabs["turns"]] == [
        ("ok", "ANSWERABLE"), ("ok", "UNANSWERABLE"), ("failed", None)]
    (f,) = tabs["failures"]
    assert (f["turn"], f["step"], f["kind"]) == (3, "verifier", "rejected")
    assert "repeats an earlier one (same text)" in f["message"]
    _counts_balance(tabs)


# -- item 10: self-preference exclusion fires on our own benchmarks ---------------------------
def test_audit_excludes_the_judge_whose_model_generated_the_benchmark(mtr, run_dir, tmp_path, shared_emb_cache,
                                                                      server, prefect_harness):
    llm = _llm(tmp_path, server.base_url)
    assert _synthesize(mtr, run_dir, _config(tmp_path, shared_emb_cache), llm, 2).exit_code == 0
    before = server.count
    out = tmp_path / "audit"
    r = mtr("audit", "-b", run_dir, "-f", "ours", "--llm-config", llm, "--judge", "fake", "--judge",
            "fake:other-model", "--metric", "alignment", "--negatives", "bm25", "--out", out)
    assert r.exit_code == 0, r.output
    rows = pq.read_table(out / "audit_scores.parquet").to_pylist()
    own = [x for x in rows if x["judge"] == "fake"]
    other = [x for x in rows if x["judge"] == "fake:other-model"]
    assert own and {x["status"] for x in own} == {"excluded_self"}
    assert other and "excluded_self" not in {x["status"] for x in other} and len(other) == len(own)
    sent = [q for q in server.requests[before:] if q.body.get("model") == "fake-model"]
    assert sent == []                                        # the generator's model judged nothing


# -- item 3: secrets in the wrong place never reach an error, log, file or the Prefect API -----
MISPLACED_KEY = "sk-proj-MISPLACED-7Qx2mV9rT4"
USER, PASSWORD = "alice", "pw-Zx81/Hunter:2"
HEADER_VALUE = "hdr-Session-4f9e1c2b7a"


def _forms(*secrets: str) -> set[str]:
    """Each secret as written, URL-encoded and base64 (also the Basic-auth form of user:password)."""
    out: set[str] = set()
    for s in (*secrets, f"{USER}:{PASSWORD}"):
        out |= {s, quote(s, safe=""), base64.b64encode(s.encode()).decode().rstrip("=")}
    return out


def _prefect_db() -> Path:
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.settings import get_current_settings
    APILogWorker.drain_all()                                # logs and events still queued in this process
    EventsWorker.drain_all()
    url = get_current_settings().server.database.connection_url.get_secret_value()
    return Path(url.split(":///", 1)[1])


def _leaks(forms: set[str], *texts: str, roots: tuple[Path, ...] = ()) -> list[str]:
    """Where any form of a secret occurs: the given texts, every file under ``roots`` (raw
    bytes, decoded Parquet, decoded SQLite) and the Prefect database."""
    found = [f"text {i}" for i, t in enumerate(texts) if any(f in t for f in forms)]
    files = [p for r in roots for p in r.rglob("*") if p.is_file()] + [_prefect_db()]
    for p in files:
        data = p.read_bytes()
        views = [data.decode("utf-8", "replace")]
        if p.suffix == ".parquet":
            views.append(str(pq.read_table(p).to_pylist()))
        if data[:16] == b"SQLite format 3\x00":
            views.append(sqlite_text(p))
        if any(f in v for v in views for f in forms):
            found.append(str(p))
    return found


def test_a_key_in_an_unknown_config_field_is_never_echoed(mtr, run_dir, tmp_path, shared_emb_cache, server,
                                                         prefect_harness):
    llm = _llm(tmp_path, server.base_url, api_key=MISPLACED_KEY)
    r = _synthesize(mtr, run_dir, _config(tmp_path, shared_emb_cache), llm, 2)
    assert r.exit_code == 2 and r.out == "" and len(r.err.strip().splitlines()) == 1
    assert "endpoints.fake: api_key holds what looks like a secret (a known key prefix)" in r.err
    assert server.count == 0 and _leaks(_forms(MISPLACED_KEY), r.output, roots=(run_dir,)) == []


def test_url_credentials_and_secret_headers_reach_no_file_log_or_prefect_row(mtr, run_dir, tmp_path,
                                                                             shared_emb_cache, server,
                                                                             prefect_harness):
    url = server.base_url.replace("://", f"://{USER}:{quote(PASSWORD, safe='')}@")
    llm = _llm(tmp_path, url, headers={"X-Session-Token": HEADER_VALUE, "X-Team": "retrieval"})
    r = _synthesize(mtr, run_dir, _config(tmp_path, shared_emb_cache), llm, 2)
    assert r.exit_code == 0, r.output
    assert server.requests[0].headers.get("x-session-token") == HEADER_VALUE       # the header was sent
    tabs = _tables(run_dir)
    assert [t["status"] for t in tabs["turns"]] == ["ok"] * 4
    man = json.loads((run_dir / "manifest.json").read_text())
    ep = man["llm"]["config"]["endpoints"]["fake"]
    # every header value is a Secret (agents.secrets): masked whatever its name
    assert ep["headers"] == {"X-Session-Token": "***", "X-Team": "***"} and "***@127.0.0.1" in ep["base_url"]
    assert _leaks(_forms(PASSWORD, HEADER_VALUE), r.output, roots=(run_dir,)) == []


def test_a_401_echoing_basic_credentials_is_one_line_without_them(mtr, run_dir, tmp_path, shared_emb_cache,
                                                                 prefect_harness):
    srv = RoleScriptedServer(api_key="the-real-key-123").start()   # echoes the Authorization it got
    try:
        url = srv.base_url.replace("://", f"://{USER}:{quote(PASSWORD, safe='')}@")
        r = _synthesize(mtr, run_dir, _config(tmp_path, shared_emb_cache), _llm(tmp_path, url), 2)
        sent = srv.requests[0].headers.get("authorization", "")
    finally:
        srv.stop()
    assert base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode() in sent      # the server did see them
    last = r.err.strip().splitlines()[-1]         # (earlier lines: Prefect's console log of the failed task)
    assert r.exit_code == 2 and last.startswith("error: LLM endpoint 'fake' answered HTTP 401")
    assert last.endswith("Incorrect API key provided: Basic ***.")
    assert _leaks(_forms(PASSWORD), r.output, roots=(run_dir,)) == []


def test_offline_rule_changes_start_fresh_checkpoints(monkeypatch):
    """No prompt version covers the offline backend's rules: its code hash is part of the
    checkpoint key, so a changed offline implementation never resumes old conversations."""
    from agents.config import LLMConfig
    from agents.synth import run as synth_run
    from agents.synth.config import SynthConfig
    corpus = {"d#0": {"text": "Alpha was founded in 1901."}}
    offline, cfg = LLMConfig(backend="offline"), SynthConfig()
    monkeypatch.setattr(synth_run, "offline_code_hash", lambda: "code-v1")
    k1 = synth_run.synthesis_key(corpus, offline, cfg)
    assert synth_run.synthesis_key(corpus, offline, cfg) == k1  # deterministic: a rerun resumes
    monkeypatch.setattr(synth_run, "offline_code_hash", lambda: "code-v2")
    assert synth_run.synthesis_key(corpus, offline, cfg) != k1

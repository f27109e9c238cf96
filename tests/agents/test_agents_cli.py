"""``mtr fake-llm`` serves until Ctrl-C; ``mtr llm-calls`` prints totals; the fake server
itself (schema instances, models route)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import openai
import pytest
from typer.testing import CliRunner

from agents.testing.fake_server import value_from_schema
from agents.session import run_batch

ROOT = Path(__file__).resolve().parents[2]


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sigint", ["default", "ignored"])
def test_mtr_fake_llm_serves_the_openai_client_until_ctrl_c(sigint):
    """``ignored``: started the way a background job of a shell without job control is (SIGINT
    inherited as ignored, e.g. ``cmd &`` in a CI script): Ctrl-C / ``kill -INT`` must still stop it."""
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}       # a hang is diagnosed below (SIGABRT dumps the stacks)
    p = subprocess.Popen([sys.executable, "-m", "flows.cli", "fake-llm", "--port", "0", "--latency-ms", "1"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         preexec_fn=_ignore_sigint if sigint == "ignored" else None)
    hung = ""
    try:
        line = p.stdout.readline()
        assert "listening on http://127.0.0.1:" in line, p.stderr.read()
        url = line.split(" on ")[1].split()[0]
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=120)
        r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert r.choices[0].message.content.startswith("fake answer") and r.usage.total_tokens > 0
        models = json.loads(urllib.request.urlopen(url + "/models", timeout=120).read())   # no short limit: loaded CI
        assert models["data"][0]["id"] == "fake-model"
        client.close()          # no keep-alive connection left open while the server stops
    finally:
        p.send_signal(signal.SIGINT)
        try:   # generous: a loaded 2-core machine may take a while; the process is ended either way
            out, _ = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGABRT)
            out, hung = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert not hung, f"mtr fake-llm did not stop within 120 s of SIGINT; its threads:\n{hung[-4000:]}"
    assert p.returncode == 0 and "served 1 chat completion request(s)" in out


def test_mtr_llm_calls_prints_totals(fake_llm, make_config, qa_step, tmp_path):
    from flows.cli import app
    run_batch(make_config(fake_llm), qa_step(), ["a", "b"], store=tmp_path / "run")
    res = CliRunner().invoke(app, ["llm-calls", str(tmp_path / "run")])
    assert res.exit_code == 0 and "qa" in res.output and "TOTAL (run)" in res.output
    res = CliRunner().invoke(app, ["llm-calls", str(tmp_path / "nope")])
    assert res.exit_code != 0


def test_schema_instances_are_deterministic_and_valid():
    from typing import Literal, Optional

    from pydantic import BaseModel, Field

    class Inner(BaseModel):
        tags: list[str]
        score: float

    class Outer(BaseModel):
        kind: Literal["a", "b"]
        inner: Inner
        maybe: Optional[int] = None
        count: int = Field(..., ge=3)
        ok: bool
        items: list[Inner]

    # enum -> first member, default kept, integer -> its minimum, number -> 0.5, bool -> true,
    # string -> "fake <field name> <seed>", arrays -> one item, $ref followed
    inner = {"tags": ["fake tags s1"], "score": 0.5}
    value = value_from_schema(Outer.model_json_schema(), seed="s1")
    assert value == {"kind": "a", "inner": inner, "maybe": None, "count": 3, "ok": True, "items": [inner]}
    assert Outer.model_validate(value).count == 3
    assert value_from_schema(Inner.model_json_schema()) == {"tags": ["fake tags"], "score": 0.5}


def test_the_cli_finds_the_fake_server_through_its_entry_point():
    """No shipped module imports ``agents/testing``: ``mtr fake-llm`` loads it as the entry point
    ``roles`` of the group ``mtr.fake_llm`` (pyproject.toml)."""
    from agents.testing.fake_roles import serve_roles
    from flows.cli_llm import fake_llm_server
    assert fake_llm_server() is serve_roles


def test_mtr_fake_llm_without_its_entry_point_is_one_clear_error(monkeypatch):
    import importlib.metadata

    from common.errors import UserError
    from flows.cli_llm import fake_llm_server
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: ())
    with pytest.raises(UserError, match=r"fake LLM server is not installed .*'mtr\.fake_llm'.*pip install -e \."):
        fake_llm_server()

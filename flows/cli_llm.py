"""``mtr fake-llm`` and ``mtr llm-calls``: try the LLM paths without an endpoint, and read a
run's LLM accounting.

``mtr fake-llm`` serves a fake OpenAI-compatible API (``POST /v1/chat/completions``,
``GET /v1/models``) on 127.0.0.1 until Ctrl-C. Point an endpoint at it::

    endpoints:
      fake: {base_url: "http://127.0.0.1:8089/v1", model: fake-model}

It answers the synthesis agents' requests the way a cooperative model would (the questioner
names one of the passages it was shown, the answerer quotes it, the verifier accepts:
``agents/testing/fake_roles.py``), so ``mtr synthesize --llm-config`` against it completes;
other JSON-schema requests get an object built from the schema. It honours logprobs and
reports usage; see ``agents/testing/fake_server.py`` for the scripting API used by the tests.

No shipped module imports the test doubles of ``agents/testing``: the fake server is found
through its entry point (``roles`` in the group ``mtr.fake_llm``, declared in pyproject.toml).
"""
from __future__ import annotations

import importlib.metadata
from pathlib import Path

import typer

from agents.accounting import format_totals, read_calls, totals_from_table
from common.errors import UserError
from storage.store import RunStore

FAKE_LLM_GROUP = "mtr.fake_llm"


def fake_llm_server(name: str = "roles"):
    """The ``serve(host, port, **options)`` function registered as entry point ``name`` of the group
    ``mtr.fake_llm``; a :class:`UserError` saying how to register it when it is not installed."""
    found = importlib.metadata.entry_points(group=FAKE_LLM_GROUP, name=name)
    if not found:
        raise UserError(f"the fake LLM server is not installed (no entry point {name!r} in the group "
                        f"{FAKE_LLM_GROUP!r}); reinstall MTR-Suite from its source tree: pip install -e .")
    return next(iter(found)).load()


def register(app: typer.Typer) -> None:
    @app.command("fake-llm")
    def fake_llm(
        host: str = typer.Option("127.0.0.1", help="Interface to bind (keep 127.0.0.1 unless you mean it)."),
        port: int = typer.Option(8089, help="TCP port (0 = any free port, printed at start)."),
        latency_ms: float = typer.Option(0.0, "--latency-ms", min=0, help="Milliseconds added to every request."),
        json_schema: str = typer.Option("honour", help="honour | reject (HTTP 400) | ignore response_format json_schema."),
        logprobs: str = typer.Option("honour", help="honour | reject (HTTP 400) | ignore logprob requests."),
    ) -> None:
        """Run a fake OpenAI-compatible LLM server until Ctrl-C (no endpoint or key needed)."""
        for name, value in (("--json-schema", json_schema), ("--logprobs", logprobs)):
            if value not in ("honour", "reject", "ignore"):
                raise UserError(f"{name} must be honour, reject or ignore (got {value!r})")
        serve = fake_llm_server()
        try:
            serve(host, port, latency=latency_ms / 1000.0, json_schema=json_schema, logprobs=logprobs)
        except OSError as exc:
            raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None

    @app.command("llm-calls")
    def llm_calls(run_dir: Path = typer.Argument(..., help="Run directory.")) -> None:
        """Print LLM call totals (per role and for the run) from a run's llm_calls table."""
        store = RunStore(str(run_dir))
        if not store.exists():
            raise UserError(f"no run directory at {run_dir}")
        table = read_calls(store)
        if table.num_rows == 0:
            typer.echo(f"run {store.run_id} has no LLM calls")
            return
        typer.echo(format_totals(totals_from_table(table), title=f"LLM calls of run {store.run_id}"))

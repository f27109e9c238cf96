"""``mtr llm-check``: probe the endpoints of an LLM config before spending anything on them.

For each endpoint (or the one named with ``--endpoint``) it lists the served models and
tests, with a few requests of at most 24 tokens each, what the server really does with
``response_format`` (json_schema, json_object, json_object with a schema), ``logprobs`` /
``top_logprobs`` and ``seed``, finds the context length where the server exposes it (or the
config's ``context_length``) and times one short call. See ``agents/capabilities.py``.

Examples::

    mtr llm-check --llm-config llm.yaml
    mtr llm-check --llm-config llm.yaml --endpoint local --json
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from agents.capabilities import probe_endpoint
from agents.config import LLMConfig
from common.errors import UserError, require_file
from flows.cli_common import console

_EXPLAIN = {"yes": "yes", "ignored": "ignored (accepted, not applied)", "rejected": "no (request rejected)",
            "error": "error (HTTP 5xx)", "unknown": "unknown"}


def capability_rows(caps) -> list[tuple[str, str]]:
    """(property, value) rows of the capability table."""
    models = ", ".join(caps.models) if caps.models else "(GET /models unavailable)"
    if caps.models and not caps.model_listed:
        models += f"  [configured model {caps.model!r} is not listed]"
    ctx = f"{caps.context_length} ({caps.context_source})" if caps.context_length else \
        "unknown (set context_length in the endpoint config)"
    lp = _EXPLAIN[caps.logprobs] + (f", top_logprobs {caps.top_logprobs}" if caps.logprobs == "yes" else "")
    return [
        ("base_url", caps.base_url),
        ("model", caps.model),
        ("models served", models),
        ("response_format json_schema", _EXPLAIN[caps.json_schema]),
        ("response_format json_object", _EXPLAIN[caps.json_object]),
        ("json_object + schema (grammar)", _EXPLAIN[caps.json_object_schema]),
        ("structured output used", caps.structured_mode),
        ("logprobs", lp),
        ("seed (same seed, same text)", _EXPLAIN[caps.seed]),
        ("context length", ctx),
        ("tokenizer route", caps.tokenize or "none (prompt length estimated, 4 chars/token)"),
        ("usage reported", "yes" if caps.usage else "no (tokens estimated)"),
        ("latency of one call", f"{caps.latency_s:.2f} s" if caps.latency_s is not None else "n/a"),
    ]


def register(app: typer.Typer) -> None:
    """Add ``llm-check`` to ``app``."""

    @app.command("llm-check")
    def llm_check(
        llm_config: Path = typer.Option(..., "--llm-config", help="LLM config YAML (see docs/how-to/endpoints.md)."),
        endpoint: Optional[str] = typer.Option(None, "--endpoint", help="Probe only this endpoint (default: all)."),
        as_json: bool = typer.Option(False, "--json", help="Print the capabilities as JSON instead of a table."),
    ) -> None:
        """Probe an LLM endpoint: models, JSON-schema / JSON mode, logprobs, seed, context length, latency.

        Example: mtr llm-check --llm-config llm.yaml
        """
        require_file(llm_config, "LLM config")
        cfg = LLMConfig.from_file(llm_config)
        if not cfg.endpoints:
            raise UserError(f"LLM config {llm_config} has no endpoints to check")
        names = [endpoint] if endpoint else sorted(cfg.endpoints)
        for n in names:
            if n not in cfg.endpoints:
                raise UserError(f"endpoint {n!r} is not in {llm_config} ({', '.join(sorted(cfg.endpoints))})")
        results = [asyncio.run(probe_endpoint(n, cfg.endpoints[n])) for n in names]
        if as_json:
            typer.echo(json.dumps({c.endpoint: c.to_dict() for c in results}, indent=2))
            return
        for caps in results:
            t = Table(title=f"LLM endpoint {caps.endpoint!r}", title_justify="left")
            t.add_column("capability")
            t.add_column("value")
            for k, v in capability_rows(caps):
                t.add_row(k, escape(str(v)))
            console.print(t)
            for note in caps.notes:
                console.print(f"note: {escape(note)}", highlight=False)

"""The ``mtr`` command line (Typer). Orchestration only: every command calls plain functions
or Prefect flows that live in the packages. Quick commands (scoring a run file, a query)
never start Prefect; pipeline commands run as flows.

Sub-command groups live in ``flows/cli_*.py`` modules, each exposing ``register(app)``.
"""
from __future__ import annotations

import importlib
import logging
import os
import sys

import typer

from agents.secrets import install_secret_masking, scrub
from common.errors import UserError, format_error
from storage.store import StoreError

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Prefect's temporary API server gets 20 s to start by default, too little on a loaded machine
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")

def _quiet_libraries() -> None:
    """Library chatter that says nothing to a user (bm25s debug lines, tokenizer length notes)."""
    for name in ("bm25s", "transformers", "sentence_transformers", "httpx", "httpx2"):
        logging.getLogger(name).setLevel(logging.WARNING)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


_quiet_libraries()

app = typer.Typer(
    name="mtr",
    help="MTR-Suite: synthesize, audit and evaluate multi-turn conversational retrieval benchmarks.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Sub-command modules; each has register(app). Order = order in --help.
_MODULES = ("flows.cli_pipeline", "flows.cli_runs", "flows.cli_eval", "flows.cli_llm", "flows.cli_llmcheck",
            "flows.cli_audit", "flows.cli_abstention", "flows.cli_compare")
for _name in _MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    """Entry point: clear one-sentence errors instead of tracebacks for expected failures.
    Every log record of the run is masked of secrets from the start (the filter of
    :func:`agents.secrets.install_secret_masking`), and so is the error line."""
    install_secret_masking()
    try:
        app(standalone_mode=True)
    except (UserError, StoreError) as exc:
        typer.secho(f"error: {scrub(format_error(exc))}", fg="red", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()

"""Helpers shared by CLI modules: config loading, run resolution, rich output."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable

import typer
from rich.console import Console
from rich.table import Table

from common.errors import UserError
from flows.progress import RichReporter, set_reporter

console = Console()
err_console = Console(stderr=True)

MAX_FAILURE_RATE_OPT = typer.Option(None, "--max-failure-rate", min=0.0, max=1.0,
                                    help="Fail (exit 2) when more than this share of the LLM calls failed "
                                         "(0..1); a run whose every call failed always fails.")


def resolve_run(run: str, runs_root: str = "mtr-runs") -> Path | str:
    """A run given as a path, or as a run id under ``runs_root``; an object-store run
    (``s3://bucket/prefix/run``, or a run id under an ``s3://`` runs root) is returned as its URI."""
    if "://" in run:
        return run
    if "://" in str(runs_root):
        return f"{str(runs_root).rstrip('/')}/{run}"
    p = Path(run)
    if p.is_dir():
        return p.resolve()
    q = Path(runs_root) / run
    if q.is_dir():
        return q.resolve()
    raise UserError(f"run {run!r} not found (looked at {p} and {q}); `mtr runs list` shows the runs")


def print_table(title: str, columns: Iterable[str], rows: Iterable[Iterable[Any]]) -> None:
    t = Table(title=title, title_justify="left")
    for c in columns:
        t.add_column(str(c))
    for r in rows:
        t.add_row(*[f"{v:.4f}" if isinstance(v, float) else str(v) for v in r])
    console.print(t)


@contextmanager
def progress_bars():
    """Rich progress bars fed by stage callbacks (flows.progress)."""
    # costly at CLI start-up: rich.progress
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    with Progress(TextColumn("[bold]{task.description:>8}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=False) as prog:
        set_reporter(RichReporter(prog))
        try:
            yield prog
        finally:
            set_reporter(None)


def report_outcome(outcome) -> None:
    """Print the one-line summary of a command's LLM calls (:class:`agents.outcome.CallOutcome`)."""
    line = outcome.summary()
    if line:
        console.print(line, style="yellow" if outcome.failed else None, highlight=False, soft_wrap=True)

"""``mtr evaluate``: score retrieval runs.

Modes (chosen by which options are given):

* ``--run RUN.trec --qrels QRELS.tsv [--per-query OUT.jsonl]``: score an existing TREC run
  file, like trec_eval (no Prefect).
* ``--benchmark PATH --retriever NAME ... --query-mode MODE [--depth N]``: run retrievers on a
  benchmark (:func:`evaluation.benchmark_eval.evaluate_and_report`): TREC runs, metric tables,
  plots and an HTML report.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from agents.config import LLMConfig
from agents.errors import LLMError
from common.errors import UserError, require_file
from evaluation.metrics import DEFAULT_KS, DEFAULT_METRICS, FAMILY_LABELS, parse_measure
from flows.cli_common import console, print_table, progress_bars
from storage.store import StoreError


def _print_summary(summary) -> None:
    result = summary.result
    means = summary.means
    ks: list[int] = []
    families: list[str] = []
    uncut = False
    for m in result.measures:
        fam, k = parse_measure(m)
        if fam not in families:
            families.append(fam)
        if k is None:
            uncut = True
        elif k not in ks:
            ks.append(k)
    ks.sort()
    table = Table()
    table.add_column("measure", style="bold")
    cols: list[int | None] = list(ks) + ([None] if uncut else [])
    for k in cols:
        table.add_column(f"@{k}" if k is not None else "no cut", justify="right")
    for fam in families:
        cells = []
        for k in cols:
            name = fam if k is None and fam == "recip_rank" else (f"{fam}_{k}" if k is not None else None)
            cells.append(f"{means[name]:.4f}" if name in means else "")
        table.add_row(FAMILY_LABELS[fam], *cells)
    screen = Console()
    screen.print(f"[bold]{escape(str(summary.run_path))}[/bold] vs [bold]{escape(str(summary.qrels_path))}[/bold]",
                 highlight=False)
    screen.print(table)
    screen.print(f"{result.n_queries} queries scored. {result.policy_note()}")
    if summary.per_query_path:
        screen.print(f"per-query values: {summary.per_query_path}")


def _evaluate_run_file(run: Path, qrels: Path | None, per_query: Path | None, metrics: list[str],
                       ks: list[int], missing: str) -> None:
    from evaluation.score import score_run_files   # costly at CLI start-up: evaluation.score, pyarrow formats

    if qrels is None:
        raise UserError("--run needs --qrels QRELS.tsv (the relevance judgments to score against)")
    for label, path in (("run", run), ("qrels", qrels)):
        require_file(path, f"{label} file")
    try:
        summary = score_run_files(run, qrels, metrics=metrics or _default_metrics(),
                                  ks=ks or _default_ks(), missing=missing, per_query_out=per_query)
    except ValueError as exc:  # includes storage.formats.FormatError (file, line, reason)
        raise UserError(str(exc)) from exc
    _print_summary(summary)


def _default_metrics() -> tuple[str, ...]:
    return DEFAULT_METRICS


def _default_ks() -> tuple[int, ...]:
    return DEFAULT_KS


def register(app: typer.Typer) -> None:
    """Add the ``evaluate`` command to ``app``."""

    @app.command("evaluate")
    def evaluate_cmd(
        run: Optional[Path] = typer.Option(None, "--run", help="TREC run file to score (qid Q0 doc rank score tag)."),
        qrels: Optional[Path] = typer.Option(None, "--qrels", help="Qrels: TREC (qid 0 doc grade) or BEIR TSV."),
        per_query: Optional[Path] = typer.Option(None, "--per-query",
                                                 help="Write per-query values (pytrec_eval names) as JSON lines."),
        metric: list[str] = typer.Option([], "--metric", "-m",
                                         help="Measure family (recall, ndcg_cut, mrr, P) or name (ndcg_cut_5, "
                                              "recip_rank); repeatable. Default: recall, ndcg_cut, mrr, P."),
        k: list[int] = typer.Option([], "--k", "-k", help="Cutoff for the families; repeatable. Default: 1 3 5 10 20."),
        missing: str = typer.Option("zero", "--missing",
                                    help="Qrels queries absent from the run: 'zero' (score 0, keep in means) "
                                         "or 'skip' (leave out, like pytrec_eval)."),
        benchmark: Optional[str] = typer.Option(None, "--benchmark", help="Benchmark folder to run retrievers on "
                                                                          "(a run of ours may be s3://bucket/prefix/run)."),
        retriever: list[str] = typer.Option([], "--retriever", help="Retriever to evaluate on --benchmark; repeatable."),
        query_mode: list[str] = typer.Option([], "--query-mode",
                                             help="Conversational query builder for --benchmark (last_turn, "
                                                  "all_user_turns, full_history, rewrite); repeatable."),
        fmt: str = typer.Option("ours", "--format", help="Benchmark format: ours | mtrag | beir."),
        domain: Optional[str] = typer.Option(None, "--domain", help="MTRAG domain (clapnq, cloud, ...)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Report folder for --benchmark "
                                                                "(default: <benchmark>/eval for ours, else ./mtr-eval)."),
        depth: int = typer.Option(20, "--depth", help="Retrieval depth (documents per query) for --benchmark."),
        rewriter: Optional[str] = typer.Option(None, "--rewriter",
                                               help="Fill missing rewrites in rewrite mode: 'offline' (rule-based) "
                                                    "or 'llm' (the query_rewriter role of --llm-config)."),
        llm_config: Optional[Path] = typer.Option(None, "--llm-config", help="LLM layer YAML for --rewriter llm."),
    ) -> None:
        """Score a run file against qrels (trec_eval semantics), or evaluate retrievers on a benchmark."""
        if missing not in ("zero", "skip"):
            raise UserError(f"--missing must be 'zero' or 'skip', got {missing!r}")
        if run is not None and benchmark is not None:
            raise UserError("use either --run/--qrels (score a run file) or --benchmark (run retrievers), not both")
        if run is not None:
            if retriever or query_mode:
                raise UserError("--retriever and --query-mode belong to --benchmark mode, not to --run")
            _evaluate_run_file(run, qrels, per_query, metric, k, missing)
            return
        if benchmark is not None:
            run_benchmark_eval(benchmark if "://" in benchmark else Path(benchmark), fmt, domain, retriever or ["bm25", "dense", "hybrid"],
                               query_mode or ["last_turn"], depth, out, _rewriter_config(rewriter, llm_config))
            return
        raise UserError("nothing to evaluate: give --run RUN.trec --qrels QRELS.tsv")


def _rewriter_config(rewriter: str | None, llm_config: Path | None):
    if rewriter is None:
        return None
    if rewriter == "offline":
        return LLMConfig(backend="offline")
    if rewriter != "llm":
        raise UserError(f"--rewriter must be 'offline' or 'llm', got {rewriter!r}")
    if llm_config is None:
        raise UserError("--rewriter llm needs --llm-config FILE (the endpoint of the query_rewriter role)")
    try:
        return LLMConfig.from_file(llm_config)
    except LLMError as exc:
        raise UserError(str(exc)) from exc


def run_benchmark_eval(benchmark: Path | str, fmt: str, domain: str | None, retrievers: list[str], modes: list[str],
                       depth: int, out: Path | None, rewriter=None) -> dict:
    """Run retrievers on a benchmark, print the table, write TREC runs and the report folder."""
    from evaluation.benchmark_eval import evaluate_and_report, summary_rows   # costly at CLI start-up: retrieval
    from retrieval.base import RetrievalError   # costly at CLI start-up: retrieval

    try:
        with progress_bars():
            bench, ev, files, out_dir = evaluate_and_report(benchmark, fmt, retrievers, modes, depth, out, domain,
                                                            rewriter=rewriter)
    except (StoreError, RetrievalError, ValueError) as exc:
        raise UserError(str(exc)) from exc
    print_table(f"{bench.name}: {ev.n_queries} turns with qrels (queries missing from a run score 0)",
                ["retriever", "query mode", "n", "nDCG@5", "R@5", "R@20", "MRR@10"], summary_rows(ev))
    for mode, note in ev.notes.items():
        console.print(f"{mode}: {note}")
    where = f"{benchmark}/eval" if isinstance(benchmark, str) and "://" in benchmark and out is None else None
    console.print(f"report: {files.html}; TREC runs: {out_dir / 'runs'}" + (f"; copied to {where}" if where else ""))
    return {"eval": ev, "out": out_dir}

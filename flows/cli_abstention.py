"""``mtr abstention``: content-based abstention evaluation of a benchmark along a retriever
ladder (see ``evaluation/abstention``). Runs as plain functions; ``--prefect`` runs the same
work as a Prefect flow with a Markdown artifact.

Examples:
    mtr abstention --benchmark tests/data/mtrag --format mtrag --domain clapnq
    mtr abstention --benchmark tests/data/mtrag --format mtrag --domain cloud \\
        --retriever bm25-turn --retriever bm25-history --retriever fusion --limit 60 --out runs/abst-cloud
    mtr abstention --benchmark data/mtrag --format mtrag --domain clapnq --llm-config llm.yaml \\
        --judge phi-4 --judge qwen3-14b --answer-model qwen3-4b --expander gpt-4o-mini
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from agents.config import LLMConfig
from agents.outcome import call_outcome
from common.configfile import read_config_file
from common.errors import UserError, require_file
from flows.cli_common import MAX_FAILURE_RATE_OPT, progress_bars, report_outcome
from flows.prefect_env import quiet_expected_failures
from flows.progress import report
from storage.store import new_run_id


def build_config(config: Optional[Path], overrides: dict):
    """:class:`AbstentionConfig` from an optional file plus command-line overrides."""
    from evaluation.abstention.config import AbstentionConfig   # costly at CLI start-up: evaluation.abstention
    base: dict = {}
    if config is not None:
        base = read_config_file(config, what="abstention config", section="abstention")
    data = {**base, **{k: v for k, v in overrides.items() if v not in (None, [], ())}}
    try:
        return AbstentionConfig.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        loc = ".".join(str(x) for x in e["loc"]) or "config"
        raise UserError(f"abstention setting {loc}: {e['msg']}") from None


_CONSOLE_COLUMNS = [("retriever", "retriever", "s"), ("ndcg", "nDCG", "f"), ("n_contexts", "ctx", "i"),
                   ("rule_unanswerable", "rule-unans", "i"), ("content_unanswerable", "content-unans", "i"),
                   ("false_miss_yes", "FM% yes", "%"), ("false_miss_yes_partial", "FM% y+p", "%"),
                   ("precision", "prec", "f"), ("youden_j", "J", "f"), ("near_dup_floor", "dup-floor%", "%"),
                   ("abstention_rule", "abst% rule", "%"), ("abstention_content", "abst% content", "%")]


def _print(res) -> None:
    from evaluation.abstention.report import fmt_value   # costly at CLI start-up: evaluation.abstention
    console = Console(width=max(Console().width, 140))
    if res.offline_demo:
        console.print(f"[bold red]{res.notes[0]}[/bold red]")
    t = Table(title=f"Abstention: {res.benchmark} (content labels: {res.config.primary_judge}; FM = false-miss, "
                    f"y+p = yes+partial)", title_justify="left")
    for _, h, _ in _CONSOLE_COLUMNS:
        t.add_column(h, justify="left" if h == "retriever" else "right")
    for r in res.per_retriever:
        t.add_row(*[fmt_value(r.get(k), kind) for k, _, kind in _CONSOLE_COLUMNS])
    console.print(t)
    a = Table(title="AUROC of unanswerability detectors (positive: unanswerable)", title_justify="left")
    for h in ("retriever", "detector", "vs rule labels", "vs content labels"):
        a.add_column(h, justify="left" if h in ("retriever", "detector") else "right")
    dets = list(dict.fromkeys(c.split(":", 1)[1].rsplit(":", 1)[0] for c in res.auroc_columns))
    for r in res.per_retriever:
        for d in dets:
            a.add_row(r["retriever"], d, fmt_value(r.get(f"auroc:{d}:rule"), "f"),
                      fmt_value(r.get(f"auroc:{d}:content"), "f"))
    console.print(a)
    for s in res.flip_summaries:
        console.print(f"flips {s.labelling_a} -> {s.labelling_b}: {s.n_changed} of {s.n_comparisons} comparisons "
                      f"change ({s.n_direction} reverse direction)", highlight=False)
    for n in (res.notes[1:] if res.offline_demo else res.notes):
        console.print(f"note: {n}", highlight=False)
    console.print(f"report: {res.files['html']}\nsummary: {res.files['markdown']}\n"
                  f"human review: {res.files['review_csv']}\nrelabel suggestions: {res.files['relabel_csv']}",
                  highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``abstention`` command to ``app``."""

    @app.command("abstention")
    def abstention_cmd(
        benchmark: Path = typer.Option(..., "--benchmark", help="Benchmark folder (MTRAG layout, BEIR folder or a "
                                                                "synthesis run directory)."),
        fmt: str = typer.Option(..., "--format", help="Benchmark format: mtrag | ours | beir."),
        domain: Optional[str] = typer.Option(None, "--domain", help="MTRAG domain, e.g. clapnq or cloud."),
        retriever: list[str] = typer.Option([], "--retriever", help="Ladder rung, weakest first; repeatable. Default: "
                                            "bm25-turn bm25-history fusion hybrid. Also bm25-rewrite, dense, and "
                                            "<bm25|dense|hybrid|rrf>:<query mode>."),
        judge: list[str] = typer.Option([], "--judge", help="Content judge (first = primary, second = another model "
                                        "family); an LLM role/model of --llm-config, or heuristic-support / "
                                        "heuristic-overlap offline. Default: the two heuristics."),
        answer_model: list[str] = typer.Option([], "--answer-model", help="Answer model scored by its first-token "
                                               "P(ANSWERABLE) (needs logprobs); repeatable. Default: "
                                               "heuristic-answerer (offline)."),
        expander: Optional[str] = typer.Option(None, "--expander", help="LLM role/model writing the fusion "
                                               "expansions, or prf (offline, default)."),
        llm_config: Optional[Path] = typer.Option(None, "--llm-config", help="LLM config YAML (endpoints, roles)."),
        config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML with abstention settings "
                                              "(evaluation.abstention.config.AbstentionConfig)."),
        limit: Optional[int] = typer.Option(None, "--limit", help="Analyse only the first N turns."),
        out: Optional[Path] = typer.Option(None, "--out", help="Output run directory (default mtr-runs/abstention-*)."),
        answer_check: bool = typer.Option(False, "--answer-check", help="Run the optional answer check (step 7)."),
        ceiling: Optional[float] = typer.Option(None, "--negative-ceiling", help="Yes-rate on other conversations' "
                                                "contexts above which a judge is unfit (default 0.10)."),
        review_n: Optional[int] = typer.Option(None, "--review-n", help="Contexts in the human-review export "
                                               "(default 150)."),
        embedding_cache: Optional[Path] = typer.Option(None, "--embedding-cache", help="Embedding cache folder "
                                                       "for dense rungs."),
        include_unanswerable: bool = typer.Option(False, "--include-unanswerable", help="Also analyse turns the "
                                                  "benchmark marks unanswerable (content label: no)."),
        prefect: bool = typer.Option(False, "--prefect/--no-prefect",
                                     help="Run as a Prefect flow with a Markdown artifact."),
        max_failure_rate: Optional[float] = MAX_FAILURE_RATE_OPT,
    ) -> None:
        """Label retrieved contexts by content and measure how wrong the "no gold in top-5" abstention rule is,
        per retriever. Example: mtr abstention --benchmark tests/data/mtrag --format mtrag --domain clapnq"""
        from evaluation.abstention.run import load_for_abstention, run_abstention   # costly at CLI start-up: evaluation
        from retrieval.base import RetrievalError       # costly at CLI start-up: retrieval
        from retrieval.queries import QueryBuildError   # costly at CLI start-up: retrieval

        if fmt not in ("mtrag", "ours", "beir"):
            raise UserError(f"--format must be mtrag, ours or beir, got {fmt!r}")
        if not benchmark.exists():
            raise UserError(f"benchmark path {benchmark} does not exist")
        if fmt == "mtrag" and not domain:
            raise UserError("--format mtrag needs --domain (e.g. clapnq or cloud)")
        cfg = build_config(config, {"retrievers": list(retriever), "judges": list(judge),
                                    "answer_models": list(answer_model), "expander": expander, "limit": limit,
                                    "answer_check": answer_check or None, "negative_control_ceiling": ceiling,
                                    "review_n": review_n, "include_unanswerable_turns": include_unanswerable or None,
                                    "embedding_cache": str(embedding_cache) if embedding_cache else None})
        if llm_config is not None:
            require_file(llm_config, "LLM config")
        llm = LLMConfig.from_file(llm_config) if llm_config is not None else None
        out_dir = out or Path("mtr-runs") / new_run_id("abstention")
        started = datetime.datetime.now(datetime.timezone.utc)
        try:
            if prefect:
                from flows.abstention_flow import run_abstention_flow   # costly: prefect
                with quiet_expected_failures(UserError, FileNotFoundError, QueryBuildError,
                                             RetrievalError):   # reported below as one line
                    res = run_abstention_flow(benchmark, fmt, domain, out_dir, cfg, llm_config)
            else:
                bench, hn = load_for_abstention(benchmark, fmt, domain)
                with progress_bars():
                    res = run_abstention(bench, out_dir, cfg, llm, hard_negatives=hn, progress=report)
        except (FileNotFoundError, QueryBuildError, RetrievalError) as exc:
            raise UserError(str(exc)) from None
        outcome = call_outcome(out_dir, started, llm)   # the endpoint calls of this run (none offline)
        if not outcome.calls or outcome.ok:      # nothing to show when no LLM judgement came back
            _print(res)
            report_outcome(outcome)
        outcome.check(max_failure_rate)

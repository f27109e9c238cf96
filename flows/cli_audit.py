"""``mtr audit`` (MTR-Eval: audit benchmarks with an ensemble of judges) and ``mtr audit-human``.

By default the command calls the plain function :func:`evaluation.audit.run_audit` directly
(no Prefect start-up: faster, same outputs); ``--prefect`` runs the same steps as the
``mtr-audit`` Prefect flow (``flows/audit_flow.py``: one task per judge batch, a Markdown
artifact).

Examples::

    # offline heuristic judges (no endpoint), BM25 negatives, 50 sampled turns
    mtr audit --benchmark tests/data/mtrag --format mtrag --domain clapnq --negatives bm25 --sample 50

    # two LLM judges from an LLM config, both MTRAG domains, reversed-order pass
    mtr audit -b ../data/mtrag -f mtrag --domain clapnq --domain cloud \\
        --llm-config llm.yaml --judge qwen72 --judge mistral-large --reverse --out mtr-runs/audit-mtrag

    # ChatRAG-Bench rows with their own candidate lists as a second mode
    mtr audit -b qrecc/test.jsonl -f chatrag --domain qrecc --candidates both --judge overlap
"""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any, Optional

import typer
from pydantic import ValidationError
from rich.markup import escape

from agents.config import LLMConfig
from agents.errors import LLMConfigError, LLMFatalError
from agents.outcome import call_outcome
from common.configfile import read_config_file
from common.errors import UserError, require_file
from flows.cli_common import MAX_FAILURE_RATE_OPT, console, print_table, report_outcome
from flows.prefect_env import quiet_expected_failures
from storage.store import new_run_id

DEFAULT_SPLIT = {"topiocqa": "dev"}


def benchmark_specs(paths: list[Path], formats: list[str], domains: list[str],
                    split: str | None) -> list[dict[str, Any]]:
    """``[{"path", "format", "domain", "split"}]``: one format (and domain) for all benchmarks
    or one per benchmark; one path with several domains = one benchmark per domain."""
    from storage.benchmark import iter_formats   # costly at CLI start-up: storage.benchmark
    if not paths:
        raise UserError("give at least one --benchmark PATH")
    if not formats:
        raise UserError(f"give --format ({' | '.join(iter_formats())})")
    if len(paths) == 1 and len(domains) > 1:
        paths = paths * len(domains)
    if len(formats) not in (1, len(paths)):
        raise UserError(f"{len(formats)} --format values for {len(paths)} benchmarks: give one, or one per benchmark")
    if len(domains) not in (0, 1, len(paths)):
        raise UserError(f"{len(domains)} --domain values for {len(paths)} benchmarks: give one, or one per benchmark")
    out = []
    for i, p in enumerate(paths):
        fmt = formats[0] if len(formats) == 1 else formats[i]
        if fmt not in iter_formats():
            raise UserError(f"unknown --format {fmt!r}; use {' | '.join(iter_formats())}")
        dom = (domains[0] if len(domains) == 1 else domains[i]) if domains else None
        out.append({"path": str(p), "format": fmt, "domain": dom, "split": split or DEFAULT_SPLIT.get(fmt, "test")})
    return out


def audit_config(config_file: Path | None, overrides: dict[str, Any]):
    """``AuditConfig`` from an optional YAML/TOML file plus the options given on the command line."""
    from evaluation.audit import AuditConfig   # costly at CLI start-up: evaluation.audit
    data: dict[str, Any] = {}
    if config_file is not None:
        data = read_config_file(config_file, what="audit config", section="audit")
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return AuditConfig.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise UserError(f"invalid audit setting {'.'.join(map(str, e['loc']))}: {e['msg']}") from None


_SHORT = {"alignment": "align", "distinguishability": "dist", "faithfulness": "faith", "quality": "quality"}


def _short(metric: str, variant: str) -> str:
    """Compact metric label for narrow terminals: ``dist/retr-rev``."""
    v = variant.replace("retrieved", "retr").replace("benchmark", "bench").replace("reversed", "rev")
    return f"{_SHORT[metric]}/{v}" if v else _SHORT[metric]      # no brackets: rich markup


def print_result(res) -> None:
    if res.offline:
        names = ", ".join(j.name for j in res.judges if j.heuristic)
        console.print(f"[bold red]Offline heuristic judges ({escape(names)}) stand in for LLM judges: lexical and "
                      "retrieval signals, not judgments of meaning.[/bold red]")
    judges = [j.name for j in res.judges] + ["ensemble"]
    for b in res.benchmarks:
        rows = []
        cells = {(r["metric"], r["variant"], r["judge"]): r for r in res.summary if r["benchmark"] == b["name"]}
        for key in dict.fromkeys((r["metric"], r["variant"]) for r in res.summary if r["benchmark"] == b["name"]):
            rs = [cells[(*key, j)] for j in judges]
            rows.append([_short(*key), rs[-1]["n"], rs[-1]["n_skipped"],
                         *[("–" if r["mean"] is None else f"{r['mean']:.3f}") for r in rs],
                         sum(r["n_parse_failures"] for r in rs[:-1])])
        unscored = b["selected"] - b.get("scored", b["selected"])
        print_table(f"{b['name']}: {b.get('scored', b['selected'])} of {b['turns']} turns audited"
                    + (f" ({unscored} selected turns no judge scored)" if unscored else "")
                    + " (means; ensemble = per-item mean / majority)", ["metric", "n", "skip", *judges, "pf"], rows)
    console.print("n = ensemble units; skip = turns not judged (no / missing gold, no answer); pf = parse failures. "
                  "dist = distinguishability (retr = retrieved negatives, bench = the benchmark's list, rev = "
                  "reversed order).", highlight=False)
    console.print(f"report: {res.files.get('html')}; tables: {res.out_dir}; "
                  f"candidate missing positives: {len(res.missing_positives)} in {res.files.get('missing_positives_csv')}")
    if res.llm.get("stopped_reason"):
        console.print(f"[bold red]The LLM budget stopped the audit early: {escape(res.llm['stopped_reason'])}[/bold red]")


def register(app: typer.Typer) -> None:
    """Add ``audit`` and ``audit-human`` to ``app``."""

    @app.command("audit")
    def audit_cmd(
        benchmark: list[Path] = typer.Option([], "--benchmark", "-b", help="Benchmark path; repeatable."),
        fmt: list[str] = typer.Option([], "--format", "-f",
                                      help="mtrag | beir | chatrag | coral | topiocqa | ours; one for all "
                                           "benchmarks or one per --benchmark."),
        domain: list[str] = typer.Option([], "--domain",
                                         help="MTRAG domain (several with one path = one benchmark each); for "
                                              "chatrag the benchmark's name."),
        split: Optional[str] = typer.Option(None, "--split", help="Split file to read (default test; dev for topiocqa)."),
        judge: list[str] = typer.Option([], "--judge", "-j",
                                        help="Judge: a role / endpoint / ENDPOINT:MODEL / model of --llm-config, or "
                                             "an offline heuristic (overlap, support, retrieval); repeatable. Default: "
                                             "every endpoint of --llm-config, else the three heuristics."),
        llm_config: Optional[Path] = typer.Option(None, "--llm-config", help="LLM config YAML (see docs/how-to/endpoints.md)."),
        config_file: Optional[Path] = typer.Option(None, "--config", help="YAML of AuditConfig fields; options win."),
        metric: list[str] = typer.Option([], "--metric", "-m",
                                         help="alignment | distinguishability | faithfulness | quality; repeatable "
                                              "(default all four)."),
        negatives: Optional[str] = typer.Option(None, "--negatives",
                                                help="Hard-negative retriever: hybrid (default) | rrf | bm25 | dense."),
        n_negatives: Optional[int] = typer.Option(None, "--n-negatives", help="Hard negatives per item (default 7)."),
        candidates: Optional[str] = typer.Option(None, "--candidates",
                                                 help="retrieved (default) | benchmark (its own list) | both."),
        reverse: bool = typer.Option(False, "--reverse", help="Second distinguishability pass in reversed order."),
        positions: Optional[str] = typer.Option(None, "--positions",
                                                help="Gold positions: counterbalanced (default; every slot equally "
                                                     "often per benchmark) | shuffled (per item)."),
        seed: Optional[int] = typer.Option(None, "--seed", help="Shuffle / sampling seed (default 13)."),
        sample: Optional[int] = typer.Option(None, "--sample", help="Audit a seeded sample of N turns per benchmark."),
        limit: Optional[int] = typer.Option(None, "--limit", help="Audit at most the first N turns per benchmark."),
        human: Optional[Path] = typer.Option(None, "--human-ratings", help="Human ratings CSV to correlate with."),
        out: Optional[Path] = typer.Option(None, "--out", help="Output run directory (default mtr-runs/audit-<id>)."),
        prefect: bool = typer.Option(False, "--prefect/--no-prefect",
                                     help="Run as the mtr-audit Prefect flow (default: plain function, faster)."),
        dry_run: bool = typer.Option(False, "--dry-run",
                                     help="Print the LLM calls, tokens and cost the audit would spend; send nothing."),
        max_failure_rate: Optional[float] = MAX_FAILURE_RATE_OPT,
    ) -> None:
        """Audit benchmarks with an ensemble of judges on four metrics (MTR-Eval).

        Example: mtr audit --benchmark tests/data/mtrag --format mtrag --domain clapnq --negatives bm25
        """
        from evaluation.audit import JudgeConfigError   # costly at CLI start-up: evaluation.audit
        from evaluation.audit.human import HumanRatingsError   # costly at CLI start-up: evaluation.audit
        from retrieval.base import RetrievalError   # costly at CLI start-up: retrieval
        from storage.benchmark import load_benchmarks   # costly at CLI start-up: storage.benchmark

        specs = benchmark_specs(benchmark, fmt, domain, split)
        cfg = audit_config(config_file, {"metrics": metric or None, "negatives": negatives, "n_negatives": n_negatives,
                                         "candidates": candidates, "reverse_pass": reverse or None,
                                         "positions": positions, "seed": seed, "sample": sample, "limit": limit})
        if human is not None:
            require_file(human, "human ratings file")
        llm = None
        if llm_config is not None:
            require_file(llm_config, "LLM config")
            try:
                llm = LLMConfig.from_file(llm_config)
            except LLMConfigError as exc:
                raise UserError(str(exc)) from None
        out_dir = out or Path("mtr-runs") / new_run_id("audit")
        started = datetime.datetime.now(datetime.timezone.utc)
        try:
            if dry_run:
                from evaluation.audit import estimate_audit   # costly at CLI start-up: evaluation.audit
                report = estimate_audit(load_benchmarks(specs), judge or None, llm_config=llm, config=cfg, out=out)
                console.print(report.format(), highlight=False)
                return
            if prefect:
                from flows.audit_flow import run_audit_flow   # costly: prefect
                with quiet_expected_failures(UserError, JudgeConfigError, LLMConfigError, HumanRatingsError,
                                             RetrievalError, LLMFatalError):   # reported below as one line
                    res = run_audit_flow(specs, judge or None, out=out_dir, llm_config=llm, config=cfg,
                                         human_ratings=human)
            else:
                from evaluation.audit import run_audit   # costly at CLI start-up: evaluation.audit
                res = run_audit(load_benchmarks(specs), judge or None, out=out_dir, llm_config=llm, config=cfg,
                                human_ratings=human)
        except (JudgeConfigError, LLMConfigError, HumanRatingsError, RetrievalError) as exc:
            raise UserError(str(exc)) from None
        except LLMFatalError as exc:
            raise UserError(f"the LLM endpoint refused the audit: {exc}") from None
        outcome = call_outcome(res.out_dir, started, llm,
                               [r["failure_message"] for r in res.scores if r["status"] == "failed"])
        if not outcome.calls or outcome.ok:      # nothing to show when no LLM judgment came back
            print_result(res)
            report_outcome(outcome)
        outcome.check(max_failure_rate)

    @app.command("audit-human")
    def audit_human_cmd(
        run_dir: Path = typer.Argument(..., help="An audit run directory."),
        ratings: Path = typer.Argument(..., help="Human ratings CSV (sample_id, [doc_id], metric columns)."),
    ) -> None:
        """Correlate an audit's judges and ensemble with human ratings (Pearson, Spearman).

        Example: mtr audit-human mtr-runs/audit-mtrag ratings.csv
        """
        from evaluation.audit import human_agreement_from_run   # costly at CLI start-up: evaluation.audit
        from evaluation.audit.human import HumanRatingsError   # costly at CLI start-up: evaluation.audit
        require_file(ratings, "human ratings file")
        try:
            rows = human_agreement_from_run(run_dir, ratings)
        except HumanRatingsError as exc:
            raise UserError(str(exc)) from None
        print_table("Agreement with human ratings", ["metric", "rater", "n", "Pearson", "p", "Spearman", "p"],
                    [[r["metric"], r["rater"], r["n"], r["pearson"], r["pearson_p"], r["spearman"], r["spearman_p"]]
                     for r in rows])

    @app.command("audit-missing")
    def audit_missing_cmd(
        run_dir: Path = typer.Argument(..., help="An audit run directory."),
        checks: list[Path] = typer.Argument(..., help="Filled copies of missing_positives.csv, one per annotator "
                                                      "(human_verdict: yes / no / 1 / 0, empty = not rated)."),
        qrels_dir: Optional[Path] = typer.Option(None, "--qrels-dir",
                                                 help="Where to write the qrels supplement (default "
                                                      "RUN_DIR/qrels_supplement)."),
    ) -> None:
        """Read human checks of the candidate missing positives: precision, annotator agreement
        (Fleiss' kappa, Krippendorff's alpha), each judge's agreement with the majority; writes
        the confirmed positives as a qrels supplement (the benchmark's qrels are not touched).

        Example: mtr audit-missing mtr-runs/audit-mtrag checks-ann1.csv checks-ann2.csv
        """
        from evaluation.audit.missing_check import check_run   # costly at CLI start-up: evaluation.audit
        for c in checks:
            require_file(c, "human checks file")
        res = check_run(run_dir, checks, qrels_dir)
        s = res.summary
        print_table("Candidate missing positives checked by people", ["measure", "value"], [
            ["candidates (checked / with a majority / ties)", f"{s['n_candidates']} ({s['n_checked']} / "
                                                             f"{s['n_decided']} / {s['n_ties']})"],
            ["confirmed relevant", s["n_confirmed"]],
            ["precision (majority relevant)", s["precision"]],
            [f"precision, ensemble-flagged ({s['n_flagged_decided']})", s["precision_flagged"]],
            [f"Fleiss kappa ({s['n_annotators']} annotators, {s['n_complete']} complete items)", s["fleiss_kappa"]],
            ["Krippendorff alpha (nominal, missing allowed)", s["krippendorff_alpha"]]])
        print_table("Annotators", ["annotator", "rated", "share relevant"],
                    [[a["annotator"], a["n_rated"], a["share_relevant"]] for a in res.annotators])
        print_table("Judges against the annotators' majority (among candidates)",
                    ["judge", "n", "agreement", "picks", "precision of picks"],
                    [[j["rater"], j["n"], j["agreement"], j["n_picks"], j["precision"]] for j in res.judges])
        files = s.get("qrels_supplement") or {}
        console.print("qrels supplement: " + (", ".join(files.values()) if files else "none (nothing confirmed)"),
                      highlight=False)

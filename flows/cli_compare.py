"""``mtr compare``: the same retrievers and query modes on several benchmarks (Figure 2).

Calls :func:`evaluation.compare.compare_benchmarks` directly (no Prefect). Benchmarks are
given like ``mtr audit``'s (``--benchmark/--format/--domain``, any format of
``storage.benchmark``); ``--audit RUN`` adds an audit run's ensemble means per benchmark.

Example::

    mtr compare -b tests/data/mtrag -f mtrag --domain clapnq --domain cloud \\
        -b mtr-runs/synth-cloud -f ours --retriever bm25 --retriever dense --out mtr-eval/compare
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from common.errors import UserError
from flows.cli_audit import benchmark_specs
from flows.cli_common import console, print_table
from storage.store import StoreError


def register(app: typer.Typer) -> None:
    """Add ``compare`` to ``app``."""

    @app.command("compare")
    def compare_cmd(
        benchmark: list[Path] = typer.Option([], "--benchmark", "-b", help="Benchmark path; repeatable."),
        fmt: list[str] = typer.Option([], "--format", "-f",
                                      help="mtrag | beir | chatrag | coral | topiocqa | ours; one for all "
                                           "benchmarks or one per --benchmark."),
        domain: list[str] = typer.Option([], "--domain",
                                         help="MTRAG domain (several with one path = one benchmark each)."),
        split: Optional[str] = typer.Option(None, "--split", help="Split file to read (default test; dev for topiocqa)."),
        retriever: list[str] = typer.Option([], "--retriever", help="Retriever; repeatable (default bm25, dense)."),
        query_mode: list[str] = typer.Option([], "--query-mode",
                                             help="Query mode; repeatable (default all_user_turns)."),
        audit: list[Path] = typer.Option([], "--audit", help="Audit run directory (Figure 2a); repeatable."),
        max_conversations: Optional[int] = typer.Option(None, "--max-conversations",
                                                        help="Evaluate a seeded sample of N conversations per "
                                                             "benchmark (whole conversations)."),
        seed: int = typer.Option(0, "--seed", help="Seed of the conversation sample and the randomisation test."),
        alpha: float = typer.Option(0.05, "--alpha", help="Significance level of the pair counts."),
        holm: bool = typer.Option(False, "--holm", help="Holm-Bonferroni correction over the retriever pairs."),
        depth: int = typer.Option(20, "--depth", help="Retrieval depth."),
        out: Path = typer.Option(Path("mtr-eval/compare"), "--out", help="Output folder (tables, figures)."),
    ) -> None:
        """Evaluate retrievers on several benchmarks: Recall@20 / nDCG@5 per benchmark, how many
        retriever pairs each benchmark separates, and audit scores (the paper's Figure 2).

        Example: mtr compare -b tests/data/mtrag -f mtrag --domain clapnq --domain cloud --retriever bm25 --retriever dense
        """
        # costly at CLI start-up: evaluation.compare
        from evaluation.compare import LABELS, compare_benchmarks, subsample_conversations, write_comparison
        from retrieval.base import RetrievalError   # costly at CLI start-up: retrieval
        from storage.benchmark import load_benchmarks   # costly at CLI start-up: storage.benchmark

        retrievers = retriever or ["bm25", "dense"]
        if len(retrievers) < 2:
            raise UserError("give at least two --retriever values: discrimination compares retrievers")
        if max_conversations is not None and max_conversations < 1:
            raise UserError("--max-conversations must be at least 1")
        specs = benchmark_specs(benchmark, fmt, domain, split)
        benches = load_benchmarks(specs)
        notes = {}
        if max_conversations is not None:
            sampled = []
            for b in benches:
                s = subsample_conversations(b, max_conversations, seed)
                n_all = len({t.conv_id for t in b.turns})
                if s is not b:
                    notes[b.name] = f"seeded sample of {max_conversations} of {n_all} conversations (seed {seed})"
                sampled.append(s)
            benches = sampled
        try:
            comp = compare_benchmarks(benches, retrievers, query_mode or ["all_user_turns"], depth=depth,
                                      work_dir=out / "cache", alpha=alpha, correction="holm" if holm else "none",
                                      seed=seed, audit_runs=audit, notes=notes,
                                      progress=lambda line: console.print(line, highlight=False))
        except (RetrievalError, ValueError, StoreError) as exc:
            raise UserError(str(exc)) from None
        write_comparison(comp, out)
        names = [b["name"] for b in comp.benchmarks]
        cell = {(r["benchmark"], r["retriever"], r["mode"]): r for r in comp.scores}
        meas = comp.settings["measures"]
        for mode in comp.settings["modes"]:
            print_table(f"{' / '.join(LABELS.get(m, m) for m in meas)}, query mode {mode}", ["retriever", *names],
                        [[r, *[" / ".join(f"{cell[(b, r, mode)][m]:.3f}" for m in meas) for b in names]]
                         for r in retrievers])
        print_table("Discrimination (spread, std of the retrievers' means; significant retriever pairs)",
                    ["benchmark", "mode", "measure", "spread", "std", "significant"],
                    [[d["benchmark"], d["mode"], LABELS.get(d["measure"], d["measure"]), d["spread"], d["std"],
                      f"{d['n_significant']}/{d['n_pairs']}"] for d in comp.discrimination])
        if comp.audit:
            if comp.audit_offline_judges:
                console.print("Audit scores from offline heuristic judges: not judgments of meaning.", style="red")
            acell = {(r["benchmark"], r["metric"]): r["mean"] for r in comp.audit}
            print_table("Audit ensemble means", ["metric", *names],
                        [[m, *[acell.get((b, m)) for b in names]] for m in ("alignment", "distinguishability",
                                                                             "faithfulness", "quality")])
        for b, note in notes.items():
            console.print(f"{b}: {note}", highlight=False)
        console.print(f"tables and figures: {out} (comparison.md, figure2b.png"
                      f"{', figure2a.png' if comp.audit else ''})", highlight=False)

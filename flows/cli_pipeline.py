"""Pipeline commands: curate, chunk, embed, cluster, build, demo (each runs the spine flow)."""
from __future__ import annotations

import datetime
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from agents.dryrun import dry_run
from agents.errors import LLMError
from agents.outcome import call_outcome
from common.errors import UserError
from corpus.load import CorpusError
from embedding.encoder import EmbeddingError
from evaluation.card import add_difficulty_to_card
from flows.cli_common import MAX_FAILURE_RATE_OPT, console, print_table, progress_bars, report_outcome, resolve_run
from flows.cli_eval import run_benchmark_eval
from flows.config import MTRConfig, load_config
from flows.prefect_env import quiet_expected_failures
from storage.filesystems import is_remote
from storage.locks import claim_run
from storage.run_files import location, pull_dir, push_dir
from storage.store import RunStore, StoreError, new_run_id

CONFIG_OPT = typer.Option(None, "--config", "-c", help="TOML/YAML config file (unknown keys are rejected)")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RUNNER_OPT = typer.Option(None, "--runner", help="default | dask | ray: run the embedding batches (and "
                                                 "`synthesize`'s batches, scale.dask_workers / ray_workers at a "
                                                 "time) on a Dask cluster (prefect-dask; a local cluster unless "
                                                 "--dask-address) or "
                                                 "on Ray (prefect-ray; a local instance unless --ray-address)")
DASK_OPT = typer.Option(None, "--dask-address", help="scheduler address of a running Dask cluster, e.g. "
                                                     "tcp://10.0.0.5:8786 (implies --runner dask)")
RAY_OPT = typer.Option(None, "--ray-address", help="address of a running Ray cluster, e.g. ray://10.0.0.5:10001 "
                                                   "(implies --runner ray)")


def _scale(runner: Optional[str], dask_address: Optional[str], ray_address: Optional[str] = None) -> dict:
    implied = "dask" if dask_address else "ray" if ray_address else None
    return {"scale.runner": runner or implied, "scale.dask_address": dask_address, "scale.ray_address": ray_address}


def _cfg(config: Optional[Path], overrides: dict) -> MTRConfig:
    return load_config(config, overrides)


def _run_and_report(run_dir: Path | str, cfg: MTRConfig, stages: list[str], input_path: str | None) -> dict:
    from flows.pipeline import preflight, run_spine   # costly: prefect
    expected = (UserError, StoreError, CorpusError, EmbeddingError, ValueError)
    try:
        preflight(str(run_dir), stages, input_path)   # before the run directory is created or locked
        # one mtr process per run directory; a directory this call created goes again if nothing was written
        with claim_run(run_dir), quiet_expected_failures(*expected), progress_bars():
            results = run_spine(str(run_dir), cfg, stages, input_path)
    except UserError:
        raise
    except expected as exc:
        raise UserError(str(exc)) from exc
    print_summary(run_dir, results)
    return results


def print_summary(run_dir: Path | str, results: dict) -> None:
    rows = []
    for stage, r in results.items():
        s = r["summary"]
        text = ", ".join(f"{k}={v}" for k, v in s.items() if not isinstance(v, dict))
        rows.append((stage, "cache hit" if r["cached"] else "ran", text))
    print_table("Stages", ["stage", "status", "summary"], rows)
    curate = results.get("curate", {}).get("summary", {})
    if curate.get("rejected_by_reason"):
        print_table("Rejected inputs (table `rejected`)", ["reason", "count"],
                    sorted(curate["rejected_by_reason"].items()))
    store = RunStore(str(run_dir))
    man = store.read_manifest()
    print_table("Artifacts", ["table", "rows", "file"],
                [(n, s["rows"], location(store, f"{n}.parquet") if s["files"] == 1 else f"{store.path}/{n}/")
                 for n, s in man.get("tables", {}).items()])
    console.print(f"Run directory: [bold]{run_dir}[/bold]  (inspect: mtr runs show {run_dir}; "
                  f"mtr query {run_dir} \"SELECT ...\")")


def run_path(run: str | Path) -> Path | str:
    """A run directory as given: an object-store URI (``s3://bucket/prefix/run``) stays a string end to end
    (a ``Path`` would turn it into a local folder ``s3:/...``), a local path is a ``Path``."""
    return str(run) if is_remote(run) else Path(run)


def _under_root(runs_root: str, run: str) -> Path | str:
    return f"{str(runs_root).rstrip('/')}/{run}" if is_remote(runs_root) else Path(runs_root) / run


def _absolute(run_dir: Path | str) -> str:
    return str(run_dir) if is_remote(run_dir) else str(Path(run_dir).resolve())


def _new_run_dir(cfg: MTRConfig, run: Optional[str], prefix: str) -> Path | str:
    if run:
        if is_remote(run):
            return run
        p = Path(run)
        return p if (p.is_absolute() or p.parent != Path(".")) else _under_root(cfg.runs_root, run)
    return _under_root(cfg.runs_root, new_run_id(prefix))


def register(app: typer.Typer) -> None:
    @app.command(help="Load, clean and MinHash-dedup a corpus into a new run.\n\n"
                      "Example: mtr curate examples/wiki --run my-run")
    def curate(input: Path = typer.Argument(..., help="directory of .txt/.md/.html, or .jsonl/.parquet/.csv"),
               run: Optional[str] = typer.Option(None, help="run id or directory (default: a new id)"),
               config: Optional[Path] = CONFIG_OPT,
               text_field: Optional[str] = typer.Option(None, help="text field of table inputs"),
               id_field: Optional[str] = typer.Option(None, help="id field of table inputs"),
               title_field: Optional[str] = typer.Option(None, help="title field of table inputs"),
               min_chars: Optional[int] = typer.Option(None, help="reject documents shorter than this")):
        cfg = _cfg(config, {"load.text_field": text_field, "load.id_field": id_field,
                            "load.title_field": title_field, "clean.min_chars": min_chars})
        _run_and_report(_new_run_dir(cfg, run, "run"), cfg, ["curate"], str(input))

    @app.command(help="Chunk a curated run (recursive splitter; chars or tokens).\n\n"
                      "Example: mtr chunk my-run --max-size 1024")
    def chunk(run: str = typer.Argument(..., help="run id or directory"), config: Optional[Path] = CONFIG_OPT,
              mode: Optional[str] = typer.Option(None, help="chars | tokens"),
              max_size: Optional[int] = typer.Option(None), min_size: Optional[int] = typer.Option(None)):
        cfg = _cfg(config, {"chunk.mode": mode, "chunk.max_size": max_size, "chunk.min_size": min_size})
        _run_and_report(resolve_run(run, cfg.runs_root), cfg, ["chunk"], None)

    @app.command(help="Embed the chunks of a run (cached by model + content hash).\n\nExample: mtr embed my-run")
    def embed(run: str = typer.Argument(...), config: Optional[Path] = CONFIG_OPT,
              batch_size: Optional[int] = typer.Option(None), runner: Optional[str] = RUNNER_OPT,
              dask_address: Optional[str] = DASK_OPT, ray_address: Optional[str] = RAY_OPT):
        cfg = _cfg(config, {"embed.batch_size": batch_size, **_scale(runner, dask_address, ray_address)})
        _run_and_report(resolve_run(run, cfg.runs_root), cfg, ["embed"], None)

    @app.command(help="kNN + greedy-traversal clusters and HDBSCAN topics.\n\nExample: mtr cluster my-run --size 8")
    def cluster(run: str = typer.Argument(...), config: Optional[Path] = CONFIG_OPT,
                size: Optional[int] = typer.Option(None, help="C: chain length"),
                k: Optional[int] = typer.Option(None, help="neighbours per chunk"),
                seed: Optional[int] = typer.Option(None)):
        cfg = _cfg(config, {"cluster.size": size, "cluster.k": k, "cluster.seed": seed})
        _run_and_report(resolve_run(run, cfg.runs_root), cfg, ["cluster"], None)

    @app.command(help="Run the whole spine (curate -> chunk -> embed -> cluster) on a corpus.\n\n"
                      "Example: mtr build corpus.jsonl --text-field body --run nightly")
    def build(input: Path = typer.Argument(...), run: Optional[str] = typer.Option(None),
              config: Optional[Path] = CONFIG_OPT, text_field: Optional[str] = typer.Option(None),
              id_field: Optional[str] = typer.Option(None), runner: Optional[str] = RUNNER_OPT,
              dask_address: Optional[str] = DASK_OPT, ray_address: Optional[str] = RAY_OPT):
        cfg = _cfg(config, {"load.text_field": text_field, "load.id_field": id_field,
                            **_scale(runner, dask_address, ray_address)})
        _run_and_report(_new_run_dir(cfg, run, "run"), cfg, ["curate", "chunk", "embed", "cluster"], str(input))

    @app.command(help="Synthesize a multi-turn benchmark (LangGraph agents) on a corpus or an existing run.\n\n"
                      "Runs the spine first when needed (cached), then the synthesis flow, then the exports.\n\n"
                      "Example: mtr synthesize --corpus docs/ --out mtr-runs/bench --turns 8 --conversations 50")
    def synthesize(corpus: Optional[Path] = typer.Option(None, help="corpus path (omit to reuse --out's spine)"),
                   out: str = typer.Option(..., help="run directory of the benchmark (or s3://bucket/prefix/run)"),
                   config: Optional[Path] = CONFIG_OPT,
                   turns: Optional[int] = typer.Option(None, help="T: turns per conversation (default 12)"),
                   conversations: Optional[int] = typer.Option(None, help="number of conversations (default: all clusters)"),
                   grouping: Optional[str] = typer.Option(None, help="passages of a conversation: greedy (default) | "
                                                                     "random | knn-ball (ablations)"),
                   llm_config: Optional[Path] = typer.Option(None, help="LLM layer YAML; omitted = offline backend"),
                   text_field: Optional[str] = typer.Option(None), id_field: Optional[str] = typer.Option(None),
                   runner: Optional[str] = RUNNER_OPT, dask_address: Optional[str] = DASK_OPT,
                   ray_address: Optional[str] = RAY_OPT,
                   llm_concurrency_limit: Optional[str] = typer.Option(
                       None, help="Prefect global concurrency limit held by each synthesis batch "
                                  "(create it first: prefect gcl create NAME --limit N)"),
                   dry_run: bool = typer.Option(False, "--dry-run", help="estimate LLM calls, tokens and cost "
                                                "(needs the spine; spends nothing)"),
                   max_failure_rate: Optional[float] = MAX_FAILURE_RATE_OPT,
                   gate: Optional[str] = typer.Option(None, "--gate", help="the quality gate after the verifier, for "
                                                      "every backend: default | strict | off (synth.gate.mode)"),
                   no_audit: bool = typer.Option(False, "--no-audit", help="skip the self-audit (MTR-Eval on the new "
                                                 "benchmark, written to its dataset card)")):
        cfg = _cfg(config, {"synth.turns": turns, "synth.conversations": conversations, "cluster.grouping": grouping,
                            "llm_config": str(llm_config) if llm_config else None,
                            "load.text_field": text_field, "load.id_field": id_field,
                            "scale.llm_concurrency_limit": llm_concurrency_limit,
                            **_scale(runner, dask_address, ray_address),
                            "synth.gate.mode": gate, "self_audit.enabled": False if no_audit else None})
        out = run_path(out)
        if dry_run:
            from flows.synthesis import llm_config_for   # costly: prefect
            llm_config_for(cfg)   # a missing or invalid --llm-config fails before the spine runs
            if corpus is not None:
                _run_and_report(out, cfg, ["curate", "chunk", "embed", "cluster"], str(corpus))
            synthesis_dry_run(out, cfg)
            return
        run_synthesis_cmd(out, cfg, corpus, max_failure_rate)

    @app.command(help="Run everything on the bundled example corpus with the embedded (offline) defaults:\n\n"
                      "spine -> synthesis (offline agents) -> BM25/dense/hybrid evaluation.\n\n"
                      "Example: mtr demo --run demo")
    def demo(run: str = typer.Option("demo", help="run id (re-running reuses cached stages)"),
             runs_root: Optional[str] = typer.Option(None, help="where runs live (default mtr-runs)")):
        cfg = _cfg(EXAMPLES / "demo.toml", {"runs_root": runs_root})
        console.print("[bold]MTR-Suite demo[/bold] on examples/wiki with the embedded offline defaults "
                      "(bundled MiniLM embeddings; [bold]offline backend[/bold] for every agent: no network, "
                      "no LLM endpoint).")
        out = _under_root(cfg.runs_root, run)
        run_synthesis_cmd(out, cfg, EXAMPLES / "wiki")
        res = run_benchmark_eval(run_path(_absolute(out)), "ours", None, cfg.eval.retrievers, cfg.eval.query_modes,
                                 cfg.eval.depth, None)
        store = RunStore(str(out))
        card = pull_dir(store, "export") / "README.md"      # (a local run: its own export folder)
        if add_difficulty_to_card(card, res["eval"]):
            push_dir(store, "export")
            console.print(f"dataset card: {location(store, 'export', 'README.md')} "
                          "(with the retrievers' difficulty per turn)")
        console.print("[yellow]Offline backend: questions come from rule-based parsing of the passages (no LLM), "
                      "so these numbers demonstrate the pipeline; they do not rank retrievers.[/yellow]")


def run_synthesis_cmd(out: Path | str, cfg: MTRConfig, corpus: Optional[Path],
                      max_failure_rate: Optional[float] = None) -> dict:
    """Spine (when ``corpus``) + synthesis; exits 2 (one line) when every LLM call failed or more
    than ``max_failure_rate`` of them (:mod:`agents.outcome`), else prints their summary."""
    from flows.synthesis import llm_config_for, run_synthesis   # costly: prefect
    llm_config_for(cfg)   # a missing or invalid --llm-config fails here, before the spine runs
    if corpus is None and not RunStore(str(out)).has_table("clusters"):
        raise UserError(f"{out} has no clusters yet; pass --corpus PATH to build the spine first")
    try:
        with claim_run(out):   # the spine and the synthesis under one lock of the run directory
            if corpus is not None:
                _run_and_report(out, cfg, ["curate", "chunk", "embed", "cluster"], str(corpus))
            started = datetime.datetime.now(datetime.timezone.utc)
            with quiet_expected_failures(UserError, LLMError, ValueError, StoreError), progress_bars():
                res = run_synthesis(_absolute(out), cfg)
    except UserError:
        raise
    except (LLMError, ValueError, StoreError) as exc:
        raise UserError(str(exc)) from exc
    store = RunStore(str(out))
    failures = store.read_table("failures", columns=["message"]).column("message").to_pylist() \
        if store.has_table("failures") else []
    outcome = call_outcome(store, started, llm_config_for(cfg), failures)
    if not outcome.calls or outcome.ok:          # nothing to show when no LLM call was answered
        s = res["summary"]
        print_table(f"Synthesis ({s['backend']} backend)", ["statistic", "value"], list(s.items()))
        if res.get("stopped"):
            console.print(f"[red]stopped early:[/red] {res['stopped']} (everything so far is saved; re-run to resume)")
        console.print(f"benchmark exports: {res['export'].get('location') or res['export']['export_dir']}")
        print_self_audit(res)
        report_outcome(outcome)
    outcome.check(max_failure_rate)
    return res


def print_self_audit(res: dict) -> None:
    """One line on the quality gate and the self-audit of a synthesis run (the card has both in full)."""
    s = res.get("summary") or {}
    if "gate_rejections" in s:
        console.print(f"quality gate: {s['gate_rejections']} rejection(s), {s.get('turns_failed_by_gate', 0)} turn(s) "
                      "failed on it (table gate_rejections)")
    audit = res.get("audit")
    if audit is None:
        return
    if audit.get("skipped"):
        console.print(f"[yellow]self-audit: not audited ({audit['skipped']})[/yellow]")
        return
    means = escape(", ".join(f"{m} {v['mean']:.2f}" for m, v in (audit.get("ensemble") or {}).items()
                             if v.get("mean") is not None))
    heur = " (offline heuristic judges)" if audit.get("offline_judges") and len(audit["offline_judges"]) == len(
        audit.get("judges") or []) else ""
    cost = audit.get("cost") or {}
    console.print(f"self-audit{heur}: {means}; cost ${cost.get('cost_usd', 0.0):.4f} ({cost.get('calls', 0)} calls); "
                  f"report {audit.get('out_dir')}/report.html")


def synthesis_dry_run(out: Path | str, cfg: MTRConfig) -> None:
    """Estimate the synthesis workload offline (prompt sizes from the real passages)."""
    from agents.synth.run import load_plan_inputs, plan_conversations   # costly: langgraph
    from agents.synth.workload import planned_workload
    from flows.synthesis import llm_config_for   # costly: prefect
    store = RunStore(str(out))
    if not store.has_table("clusters"):
        raise UserError(f"{out} has no clusters yet; pass --corpus PATH to build the spine first")
    clusters, cvecs, corpus = load_plan_inputs(store)
    plans = plan_conversations(clusters, cvecs, cfg.synth)
    report = dry_run(llm_config_for(cfg), planned_workload(plans, corpus, cfg.synth), repair_rate=0.05)
    console.print(report.format())
    console.print(f"{len(plans)} conversations x {cfg.synth.turns} turns; first attempts only (verifier retries and "
                  "regenerations add to this).")

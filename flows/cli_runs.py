"""Quick commands over run directories (no Prefect): runs list/show, query."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Optional

import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import typer

from common.errors import UserError
from flows.cli_common import console, print_table, resolve_run
from flows.serve import serve as run_serve
from storage.store import RunStore, StoreError, list_runs


def register(app: typer.Typer) -> None:
    register_serve(app)
    runs = typer.Typer(help="List and inspect run directories.", no_args_is_help=True)
    app.add_typer(runs, name="runs")

    @runs.command("list", help="List runs under a root.\n\nExample: mtr runs list --root mtr-runs")
    def list_(root: str = typer.Option("mtr-runs", help="runs root")):
        rows = []
        for r in list_runs(root):
            m = r.read_manifest()
            tabs = m.get("tables", {})
            rows.append((r.run_id, m.get("created_at", "")[:19], ",".join(m.get("stages", {}).keys()),
                         tabs.get("documents", {}).get("rows", ""), tabs.get("chunks", {}).get("rows", ""),
                         r.path))
        if not rows:
            console.print(f"no runs under {root}")
            return
        print_table(f"Runs under {root}", ["run", "created", "stages", "docs", "chunks", "path"], rows)

    @runs.command("show", help="Show a run's manifest summary.\n\nExample: mtr runs show demo")
    def show(run: str, root: str = typer.Option("mtr-runs"), json_out: bool = typer.Option(False, "--json")):
        store = RunStore(str(resolve_run(run, root)))
        man = store.read_manifest()
        if not man:
            raise UserError(f"{store.path} has no manifest.json; is it a run directory?")
        if json_out:
            console.print_json(json.dumps(man, default=str))
            return
        print_table(f"Run {store.run_id}", ["table", "rows", "bytes", "sha256"],
                    [(n, s["rows"], s["bytes"], s["sha256"][:12]) for n, s in man.get("tables", {}).items()])
        for stage, info in man.get("stages", {}).items():
            s = info.get("summary", {})
            console.print(f"[bold]{stage}[/bold]: " + ", ".join(f"{k}={v}" for k, v in s.items()))

    @app.command(help="Read-only SQL (DuckDB) over a run's Parquet tables; writes are refused.\n\n"
                      "Only the tables named in the run's manifest are read (regular files, no links); each query "
                      "runs under --timeout and --memory-limit.\n\n"
                      "Example: mtr query demo \"SELECT cluster_id, count(*) FROM clusters GROUP BY 1\"")
    def query(run: str, sql: str, root: str = typer.Option("mtr-runs"),
              limit: int = typer.Option(50, help="max rows printed"),
              output: Optional[str] = typer.Option(None, help="write the full result to .parquet/.csv/.jsonl "
                                                              "(never under the runs root)"),
              force: bool = typer.Option(False, "--force", help="replace an existing --output file"),
              timeout: float = typer.Option(60.0, "--timeout", help="seconds before the query is stopped"),
              memory_limit: str = typer.Option("2GB", "--memory-limit", help="DuckDB memory limit; also the "
                                                                             "largest result")):
        from storage.duck import query as run_query   # costly: duckdb
        store = RunStore(str(resolve_run(run, root)))
        if timeout <= 0:
            raise UserError("--timeout must be a positive number of seconds")
        target = _output_path(output, force, [Path(root), Path(store.path)]) if output else None
        skipped: list = []
        try:
            table = run_query(store, sql, timeout_s=timeout, memory_limit=memory_limit, skipped=skipped)
        except StoreError as exc:
            raise UserError(str(exc)) from exc
        if skipped:
            console.print("skipped (not read): " + "; ".join(f"{e} ({why})" for e, why in skipped), highlight=False)
        if target is not None:
            _write(table, target)
            console.print(f"wrote {table.num_rows} rows to {output}")
        rows = table.slice(0, limit).to_pylist()
        print_table(f"{table.num_rows} rows", table.column_names,
                    [[_short(v) for v in r.values()] for r in rows])


def _output_path(output: str, force: bool, protected: list[Path]) -> Path:
    """The resolved ``--output`` path, refused (one line) under the runs root or the run, when it
    exists (unless ``force``), or when its directory is missing."""
    if not output.endswith((".parquet", ".csv", ".jsonl")):
        raise UserError("--output must end in .parquet, .csv or .jsonl")
    p = Path(output).expanduser()
    parent = p.parent.resolve()
    if not parent.is_dir():
        raise UserError(f"--output {output}: the directory {p.parent} does not exist")
    target = (parent / p.name).resolve()     # follows a link at the file name itself too
    for d in protected:
        if d.exists() and target.is_relative_to(d.resolve()):
            raise UserError(f"--output {output} is inside the run directory or the runs root ({d}); runs are "
                            "read-only here, write the result elsewhere")
    if os.path.lexists(p) or target.exists():
        if target.is_dir():
            raise UserError(f"--output {output} is a directory")
        if not force:
            raise UserError(f"--output {output} already exists; pass --force to replace it")
    return target


def _short(v):
    s = v if isinstance(v, float) else str(v)
    return s if isinstance(s, float) or len(s) <= 80 else s[:77] + "..."


def _write(table, path: Path) -> None:
    """Write ``table`` to ``path`` atomically (a temp file in the same directory, then a rename)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        if path.name.endswith(".parquet"):
            pq.write_table(table, tmp)
        elif path.name.endswith(".csv"):
            pcsv.write_csv(table, tmp)
        else:
            with open(tmp, "w", encoding="utf-8") as f:
                for r in table.to_pylist():
                    f.write(json.dumps(r, default=str) + "\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def register_serve(app: typer.Typer) -> None:
    @app.command(help="Start a local Prefect server (127.0.0.1), the process work pool, the deployments of "
                      "deploy/prefect.yaml and a worker; prints the UI address; Ctrl-C stops everything "
                      "(worker first).\n\nExample: mtr serve --port 4200")
    def serve(port: int = typer.Option(4200), host: str = typer.Option("127.0.0.1"),
              home: Optional[str] = typer.Option(None, help="PREFECT_HOME for the server (default: Prefect's)")):
        try:
            run_serve(host=host, port=port, home=home, echo=console.print)
        except (RuntimeError, TimeoutError) as exc:
            raise UserError(str(exc)) from exc

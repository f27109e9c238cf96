"""End to end: a real Prefect server on a free loopback port, the process pool, the
deployments of deploy/prefect.yaml, a worker; trigger `regenerate-benchmark/nightly` on the
example corpus (offline backend), wait through the API, check artifacts; trigger again and
check every cached stage was reused; shut everything down (worker first).

Marked ``e2e``; it runs in the default suite (`make test`)."""
from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from flows.serve import PROJECT_DIR, LocalStack, free_port

pytestmark = pytest.mark.e2e

SMALL = """
[topics]
min_cluster_size = 8
[synth]
conversations = 2
turns = 3
[eval]
retrievers = ["bm25"]
query_modes = ["last_turn", "rewrite"]
"""


async def _run_and_wait(api_url: str, params: dict, timeout: float = 420):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings
    with temporary_settings(updates={PREFECT_API_URL: api_url}):
        async with get_client() as client:
            dep = await client.read_deployment_by_name("regenerate-benchmark/nightly")
            fr = await client.create_flow_run_from_deployment(dep.id, parameters=params)
            deadline = time.time() + timeout
            while time.time() < deadline:
                fr = await client.read_flow_run(fr.id)
                if fr.state and fr.state.is_final():
                    break
                await asyncio.sleep(2)
            arts = await client.read_artifacts()
            return fr, [a for a in arts if a.flow_run_id == fr.id]


def test_regenerate_deployment_end_to_end(tmp_path):
    out_root = tmp_path / "benchmarks"
    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL)
    stack = LocalStack(port=free_port(), home=str(tmp_path / "prefect-home"), log_dir=tmp_path / "logs")
    params = {"corpus": str(PROJECT_DIR / "examples" / "wiki"), "output_root": str(out_root),
              "config_file": str(cfg)}
    try:
        stack.start_server()
        stack.create_pool()
        out = stack.deploy()
        assert "regenerate-benchmark/nightly" in out
        stack.start_worker()
        fr, arts = asyncio.run(_run_and_wait(stack.api_url, params))
        logs = "".join(p.read_text(errors="replace")[-3000:] for p in (tmp_path / "logs").glob("*.log"))
        assert fr.state.is_completed(), f"{fr.state}\n{logs}"
        version = (out_root / "LATEST").read_text().strip()
        vdir = out_root / version
        assert (vdir / "_SUCCESS").exists() and (vdir / "diff.md").exists()
        assert (vdir / "turns.parquet").exists() and (vdir / "eval" / "report.html").exists()
        md = [a for a in arts if a.type == "markdown" and a.key == "regeneration"]
        assert md and version in md[0].data

        fr2, arts2 = asyncio.run(_run_and_wait(stack.api_url, params))
        assert fr2.state.is_completed()
        md2 = [a for a in arts2 if a.type == "markdown" and a.key == "regeneration"][0].data
        assert "{'curate': True, 'chunk': True, 'embed': True, 'cluster': True}" in md2   # every stage reused
        assert (out_root / "LATEST").read_text().strip() == version
    finally:
        stack.stop()
    assert all(p.poll() is not None for p in stack.procs.values())

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


@pytest.fixture(scope="module")
def e2e(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("e2e")
    out_root = tmp_path / "benchmarks"
    cfg = tmp_path / "small.toml"
    cfg.write_text(SMALL)
    stack = LocalStack(port=free_port(), home=str(tmp_path / "prefect-home"), log_dir=tmp_path / "logs")
    params = {"corpus": str(PROJECT_DIR / "examples" / "wiki"), "output_root": str(out_root),
              "config_file": str(cfg)}
    try:
        stack.start_server()
        stack.create_pool()
        deploy_out = stack.deploy()
        stack.start_worker()
        first = asyncio.run(_run_and_wait(stack.api_url, params))
        second = asyncio.run(_run_and_wait(stack.api_url, params))
        logs = "".join(p.read_text(errors="replace")[-3000:] for p in (tmp_path / "logs").glob("*.log"))
        yield {"stack": stack, "out_root": out_root, "deploy_out": deploy_out, "first": first, "second": second,
               "logs": logs, "tmp": tmp_path}
    finally:
        stack.stop()
        assert all(p.poll() is not None for p in stack.procs.values())


def test_regenerate_deployment_end_to_end(e2e):
    assert "regenerate-benchmark/nightly" in e2e["deploy_out"]
    fr, arts = e2e["first"]
    assert fr.state.is_completed(), f"{fr.state}\n{e2e['logs']}"
    out_root = e2e["out_root"]
    version = (out_root / "LATEST").read_text().strip()
    vdir = out_root / version
    assert (vdir / "_SUCCESS").exists() and (vdir / "diff.md").exists()
    assert (vdir / "turns.parquet").exists() and (vdir / "eval" / "report.html").exists()
    md = [a for a in arts if a.type == "markdown" and a.key == "regeneration"]
    assert md and version in md[0].data

    fr2, arts2 = e2e["second"]
    assert fr2.state.is_completed()
    md2 = [a for a in arts2 if a.type == "markdown" and a.key == "regeneration"][0].data
    assert "{'curate': True, 'chunk': True, 'embed': True, 'cluster': True}" in md2   # every stage reused
    assert (out_root / "LATEST").read_text().strip() == version


def test_ui_shows_the_completed_flow_run(e2e):
    """Headless Chromium renders the UI's flow-run page; the rendered page says Completed."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Chromium is not installed (Debian package `chromium`; .ci/run installs it); nothing installed here")
    fr, _ = e2e["first"]
    url = f"{e2e['stack'].ui_url}/runs/flow-run/{fr.id}"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
             f"--user-data-dir={e2e['tmp'] / 'chromium-profile'}", "--window-size=1400,900",
             "--virtual-time-budget=15000"]
    png = e2e["tmp"] / "flow-run.png"
    subprocess.run([chromium, *flags, f"--screenshot={png}", url], capture_output=True, timeout=120)
    dom = subprocess.run([chromium, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    assert png.exists() and png.stat().st_size > 10_000
    assert fr.name in dom and "Completed" in dom

"""Scale-out on Ray: ``mtr build`` and ``mtr synthesize`` with ``--runner ray`` write the same tables as
the default runner, and Ray leaves no process behind.

One local Ray instance (2 CPUs, 100 MB object store, no dashboard, no usage stats) serves the module:
prefect-ray's ``RayTaskRunner`` uses an instance this process already started, so the runs do not
pay Ray's start-up each. The Ray run gets its own empty embedding cache, so every vector is encoded
by ``embed-batch`` Ray tasks (3 of them, on 6 articles of examples/wiki); the synthesis batches run as Ray tasks, 2 at a time (``ray_workers``).
"""
import os
import re
import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("prefect_ray")

from typer.testing import CliRunner  # noqa: E402

from flows.cli import app  # noqa: E402
from flows.config import load_config  # noqa: E402
from storage.store import RunStore  # noqa: E402
from tests.flows.test_dask_runner import _assert_same_artifacts  # noqa: E402
from tests.process_guard import descendants, kill_all, leftovers  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RAY_PROCESS = re.compile(r"ray|raylet|gcs_server")


@pytest.fixture(scope="module")
def ray_instance():
    """A local Ray instance for the module, shut down in a finally; no Ray process may outlive it."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray
    before = descendants()
    try:
        ray.init(num_cpus=2, object_store_memory=100 * 1024 * 1024, include_dashboard=False,
                 log_to_driver=False, namespace="prefect")
        yield ray
    finally:
        ray.shutdown()
        deadline = time.monotonic() + 30
        while (left := {p: c for p, c in leftovers(before).items() if RAY_PROCESS.search(c)}) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        kill_all(left)
        assert not left, f"Ray processes outlived ray.shutdown(): {left}"


def _config(tmp: Path, name: str, runner: str) -> Path:
    """demo.toml, small: a config file of its own per runner (its own empty embedding cache)."""
    text = (EXAMPLES / "demo.toml").read_text()
    text = text.replace('runs_root = "mtr-runs"', f'runs_root = "{tmp}"')
    text = text.replace("[chunk]", f'[embed]\ncache_dir = "{tmp / ("emb-" + name)}"\nbatch_size = 4\n\n'
                                   f'[scale]\nrunner = "{runner}"\nray_workers = 2\nembed_batch_chunks = 32\n\n[chunk]')
    text = re.sub(r"conversations = \d+", "conversations = 4", text)
    text = re.sub(r"turns = \d+", "turns = 3", text) + "\n"
    path = tmp / f"{name}.toml"
    path.write_text(text.replace("[synth]", "[synth]\nbatch_size = 2"))
    return path


def _mtr(*args) -> None:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, f"mtr {' '.join(map(str, args))}: exit {res.exit_code}\n{res.output}{res.exception!r}"


@pytest.fixture(scope="module")
def spines(tmp_path_factory, prefect_harness, ray_instance):
    """``mtr build`` of examples/wiki on the default runner and with ``--runner ray``."""
    tmp = tmp_path_factory.mktemp("ray-runner")
    corpus = tmp / "wiki6"                  # the 6 shortest articles: ~80 chunks, 3 embed batches
    corpus.mkdir()
    for f in sorted((EXAMPLES / "wiki").glob("*.md"), key=lambda f: f.stat().st_size)[:6]:
        shutil.copy(f, corpus / f.name)
    t0 = time.perf_counter()
    _mtr("build", corpus, "--run", "default", "-c", _config(tmp, "default", "default"))
    t1 = time.perf_counter()
    _mtr("build", corpus, "--run", "ray", "-c", _config(tmp, "ray", "default"), "--runner", "ray")
    print(f"\nmtr build (6 articles of examples/wiki): default {t1 - t0:.1f} s, ray (2 CPUs) {time.perf_counter() - t1:.1f} s")
    return tmp


def test_ray_runner_config():
    from flows.pipeline import task_runner_for
    local = task_runner_for(load_config(None, {"scale.runner": "ray", "scale.ray_workers": 3}))
    assert type(local).__name__ == "RayTaskRunner" and local.address is None
    assert local.init_kwargs["num_cpus"] == 3 and local.init_kwargs["include_dashboard"] is False
    remote = task_runner_for(load_config(None, {"scale.runner": "ray", "scale.ray_address": "ray://10.0.0.5:10001"}))
    assert remote.address == "ray://10.0.0.5:10001"
    assert load_config(None, {"scale.runner": "ray", "scale.ray_workers": 3}).scale.workers == 3
    assert os.environ["RAY_USAGE_STATS_ENABLED"] == "0"
    from flows.cli_pipeline import _scale
    assert _scale(None, None, "ray://h:10001")["scale.runner"] == "ray"     # --ray-address implies --runner ray


def test_ray_build_gives_identical_artifacts(spines):
    a, b = RunStore(str(spines / "default")), RunStore(str(spines / "ray"))
    assert a.read_manifest()["config"]["scale"]["runner"] == "default"
    assert b.read_manifest()["config"]["scale"]["runner"] == "ray"
    n = a.num_rows("chunks")
    assert n > 64                                              # 3 embed-batch tasks of 32 chunks
    assert b.read_manifest()["stages"]["embed"]["summary"]["newly_embedded"] == n   # encoded by Ray tasks
    _assert_same_artifacts(a, b)


def test_ray_synthesize_gives_identical_conversations(spines, monkeypatch):
    import flows.synthesis as fs
    pids: list[int] = []
    real = fs.run_batches

    def spy(run_dir, config, batches, prep, total, on_done):
        return real(run_dir, config, batches, prep, total, lambda r: (pids.append(r["pid"]), on_done(r)))
    monkeypatch.setattr(fs, "run_batches", spy)
    for name in ("default", "ray"):
        shutil.copytree(spines / name, spines / f"synth-{name}")
    _mtr("synthesize", "--out", spines / "synth-default", "-c", spines / "default.toml", "--no-audit")
    assert set(pids) == {os.getpid()}
    pids.clear()
    _mtr("synthesize", "--out", spines / "synth-ray", "-c", spines / "ray.toml", "--no-audit", "--runner", "ray")
    assert len(pids) == 2 and os.getpid() not in pids          # both batches ran as Ray tasks
    a, b = RunStore(str(spines / "synth-default")), RunStore(str(spines / "synth-ray"))
    for name, key in (("conversations", "conv_id"), ("turns", "sample_id"), ("qrels", "sample_id")):
        ra = sorted(a.read_table(name).to_pylist(), key=lambda r: (r[key], str(r.get("doc_id"))))
        rb = sorted(b.read_table(name).to_pylist(), key=lambda r: (r[key], str(r.get("doc_id"))))
        assert len(ra) == len(rb) > 0 and ra == rb, name

"""The object store's credentials never reach a run (issue #51, extending the secrets guarantee of #52): with
canary AWS credentials in the environment, ``mtr build`` on an ``s3://`` run writes them nowhere: not in any
object of the run on the store (Parquet decoded too), not in any file of its local directory, not in the output."""
from __future__ import annotations

import io
import uuid
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq
from typer.testing import CliRunner

from storage.store import RunStore

ROOT = Path(__file__).resolve().parents[2]
WIKI = ROOT / "examples" / "wiki"


def _texts(name: str, data: bytes) -> list[str]:
    out = [data.decode("utf-8", "replace")]
    if name.endswith(".parquet"):
        out.append(str(pq.read_table(io.BytesIO(data)).to_pylist()))     # values inside compressed pages
    return out


def test_aws_credentials_reach_no_object_no_local_file_and_no_output(s3_store, tmp_path, shared_emb_cache,
                                                                      prefect_harness, monkeypatch):
    from flows.cli import app
    bucket, env = s3_store
    key_id, secret = "AKIA" + uuid.uuid4().hex[:16].upper(), "cAnArY" + uuid.uuid4().hex
    for k, v in {**env, "AWS_ACCESS_KEY_ID": key_id, "AWS_SECRET_ACCESS_KEY": secret}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("MTR_LOCAL_CACHE", str(tmp_path / "local-cache"))
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "mtr.toml"
    cfg.write_text(f'[embed]\ncache_dir = "{shared_emb_cache}"\n')
    run = f"{bucket}/secrets-{uuid.uuid4().hex[:8]}/run"
    res = CliRunner().invoke(app, ["build", str(WIKI), "--run", run, "-c", str(cfg)])
    assert res.exit_code == 0, res.output
    canaries = (key_id, secret)
    assert not any(c in res.output for c in canaries)

    store = RunStore(run)
    objects = [i for i in store.fs.get_file_info(pafs.FileSelector(store._p(), recursive=True))
               if i.type == pafs.FileType.File]
    assert any(i.path.endswith("chunks.parquet") for i in objects) and any(i.path.endswith("manifest.json")
                                                                         for i in objects)
    for info in objects:
        with store.fs.open_input_stream(info.path) as f:
            for text in _texts(info.path, f.read()):
                assert not any(c in text for c in canaries), info.path
    local = [p for p in (tmp_path / "local-cache").rglob("*") if p.is_file()]
    assert local                                                    # the run's local directory was used
    for p in local:
        for text in _texts(p.name, p.read_bytes()):
            assert not any(c in text for c in canaries), p

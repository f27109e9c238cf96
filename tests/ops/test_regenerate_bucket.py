"""The scheduled regeneration with its versions in a bucket (``output_root = s3://bucket/prefix``), against
a real S3 server (moto on localhost): the version's tables in the bucket equal the ones built locally,
``_SUCCESS`` and ``LATEST`` are written there, the next version diffs against the bucket's, and the flow
run carries a link artifact to the version that holds no credential."""
import re
import shutil
from pathlib import Path

import pytest

from flows.version_bucket import LINK_KEY, root_fs, version_link
from storage.errors import StoreError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_version_link_aws_console_or_endpoint_never_with_credentials(monkeypatch):
    for k in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert version_link("s3://bench/nightly", "20260101-ab-cd") == (
        "https://s3.console.aws.amazon.com/s3/buckets/bench?region=eu-west-1&prefix=nightly/20260101-ab-cd/"
        "&showversions=false")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://admin:s3cr3t-Pw@minio.local:9000")
    link = version_link("s3://bench/", "v1")
    assert link == "http://minio.local:9000/bench/v1/" and "s3cr3t" not in link and "admin" not in link
    with pytest.raises(StoreError, match="must not hold credentials") as err:
        root_fs("s3://AKIAEXAMPLE:s3cr3t-Pw@bench/nightly")
    assert "s3cr3t" not in str(err.value)
    with pytest.raises(ValueError, match="AWS_ENDPOINT_URL"):
        root_fs("s3://bench/nightly?endpoint_override=localhost:9000")


def test_a_failed_publish_is_one_line_and_leaves_latest(tmp_path, s3_store, monkeypatch):
    from flows.version_bucket import latest_of, publish_version
    bucket, env = s3_store
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "diff.md").write_text("x")
    with pytest.raises(StoreError) as err:
        publish_version(tmp_path / "v1", "s3://no-such-bucket-mtr/nightly", "v1")
    assert str(err.value).startswith("cannot publish version v1 to s3://no-such-bucket-mtr/nightly/v1: ")
    assert "\n" not in str(err.value) and env["AWS_SECRET_ACCESS_KEY"] not in str(err.value)
    assert latest_of("s3://no-such-bucket-mtr/nightly") is None


def _config(tmp: Path) -> Path:
    text = (EXAMPLES / "demo.toml").read_text()
    text = re.sub(r"conversations = \d+", "conversations = 2", text)
    text = re.sub(r"turns = \d+", "turns = 2", text)
    text = re.sub(r"retrievers = .*", 'retrievers = ["bm25"]', text)
    text = re.sub(r"query_modes = .*", 'query_modes = ["last_turn"]', text)
    path = tmp / "regen.toml"
    path.write_text(text + "\n[self_audit]\nenabled = false\n")
    return path


def test_regeneration_publishes_versions_to_the_bucket_with_a_link_artifact(tmp_path, s3_store, prefect_harness,
                                                                            monkeypatch):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from flows.regenerate import good_versions, latest, regenerate_benchmark
    from flows.version_bucket import SUCCESS, version_files
    from storage.store import RunStore
    bucket, env = s3_store
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("MTR_LOCAL_CACHE", str(tmp_path / "local"))
    corpus = tmp_path / "corpus"              # the 3 shortest articles of examples/wiki
    corpus.mkdir()
    for f in sorted((EXAMPLES / "wiki").glob("*.md"), key=lambda f: f.stat().st_size)[:3]:
        shutil.copy(f, corpus / f.name)
    root = f"{bucket}/nightly"
    cfg = str(_config(tmp_path))

    first = regenerate_benchmark(corpus=str(corpus), output_root=root, config_file=cfg, date="20260101")
    v1 = first["version"]
    assert first["uri"] == f"{root}/{v1}" and Path(first["dir"]).is_relative_to(tmp_path / "local")
    local, remote = RunStore(first["dir"]), RunStore(first["uri"])
    names = local.tables()
    assert {"documents", "chunks", "clusters", "conversations", "turns", "qrels"} <= set(names)
    assert remote.tables() == names
    for name in names:
        assert remote.read_table(name).equals(local.read_table(name)), name
    fs, base = root_fs(root)
    from pyarrow.fs import FileSelector
    in_bucket = sorted(i.path.removeprefix(f"{base}/{v1}/") for i in fs.get_file_info(
        FileSelector(f"{base}/{v1}", recursive=True)) if i.type.name == "File")
    assert in_bucket == sorted(version_files(Path(first["dir"])) + [SUCCESS])
    assert "diff.json" in in_bucket and "eval/metrics.parquet" in in_bucket
    assert not any(p.startswith("cache/") or "/." in f"/{p}" for p in in_bucket)   # local caches and locks stay
    assert latest(root) == v1 and good_versions(root) == [v1]

    # the next version (a new date) diffs against the bucket's previous one and moves LATEST
    second = regenerate_benchmark(corpus=str(corpus), output_root=root, config_file=cfg, date="20260102")
    v2 = second["version"]
    assert second["diff"]["previous"] == v1 and second["diff"]["documents_added"] == []
    assert latest(root) == v2 and good_versions(root) == [v1, v2]

    assert first["link"] == f"{env['AWS_ENDPOINT_URL']}/mtr-test/nightly/{v1}/"
    with get_client(sync_client=True) as client:
        arts = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[LINK_KEY])))
    links = sorted(a.data for a in arts if a.type == "markdown" or a.type == "link")
    assert len(links) == 2 and all(env["AWS_SECRET_ACCESS_KEY"] not in d for d in links)
    assert any(f"({first['link']})" in d for d in links) and any(f"({second['link']})" in d for d in links)

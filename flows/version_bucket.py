"""Benchmark versions of the scheduled regeneration in a bucket (``output_root = s3://bucket/prefix``).

The version is built in a local staging root (:func:`staging_root`, which also keeps the shared
embedding and LLM caches between runs), then published through ``pyarrow.fs``
(:func:`publish_version`): every file of the version except its local caches (``cache/``) and lock
files is copied to ``<output_root>/<version>/``, then ``_SUCCESS`` is written there and ``LATEST``
replaced (one PUT each, atomic on S3). A run that fails before publishing leaves no ``_SUCCESS`` and
the old ``LATEST``. :func:`version_link` is the address a person opens to see the version (the AWS
console for AWS, ``<endpoint>/<bucket>/<key>`` for MinIO and other endpoints), never with credentials;
:func:`publish_link` puts it on the flow run as a Prefect link artifact.

The endpoint comes from ``AWS_ENDPOINT_URL`` (or ``AWS_ENDPOINT_URL_S3``), credentials only from the
environment (:func:`storage.filesystems.s3_filesystem` refuses a URI that holds some).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import os
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pyarrow.fs as pafs

from storage.errors import StoreError
from storage.filesystems import _resolve, is_remote, local_cache_root

SUCCESS = "_SUCCESS"
LATEST = "LATEST"
LINK_KEY = "benchmark-version"
_LOCAL_ONLY = ("cache",)        # top-level folders of a version that stay on the machine that built it


def root_fs(root: str | os.PathLike) -> tuple[pafs.FileSystem, str]:
    """The filesystem of an output root (local path or ``s3://bucket/prefix``) and its path there."""
    if is_remote(root):
        if not str(root).startswith("s3://") or "?" in str(root):
            raise ValueError(f"{root}: a bucket output root is s3://bucket/prefix (the endpoint comes from "
                             "AWS_ENDPOINT_URL)")
    return _resolve(root)


def staging_root(output_root: str) -> Path:
    """The local directory where versions for the bucket root ``output_root`` are built (and its caches kept):
    ``<local cache root>/regenerate/<bucket>-<hash of the URI>`` (``MTR_LOCAL_CACHE``, see
    :func:`storage.filesystems.local_cache_root`)."""
    bucket = urlsplit(output_root).netloc or "bucket"
    key = hashlib.sha256(output_root.rstrip("/").encode()).hexdigest()[:12]
    p = local_cache_root() / "regenerate" / f"{bucket}-{key}"
    p.mkdir(parents=True, exist_ok=True)
    return p


def _read(fs: pafs.FileSystem, path: str) -> str | None:
    if fs.get_file_info(path).type != pafs.FileType.File:
        return None
    with fs.open_input_stream(path) as fh:
        return fh.read().decode()


def _write(fs: pafs.FileSystem, path: str, text: str) -> None:
    with fs.open_output_stream(path) as fh:
        fh.write(text.encode())


def latest_of(root: str | os.PathLike) -> str | None:
    """The version ``LATEST`` names under a local or bucket output root."""
    fs, base = root_fs(root)
    text = _read(fs, f"{base}/{LATEST}")
    return text.strip() if text else None


def good_versions_of(root: str | os.PathLike) -> list[str]:
    """The published versions (with ``_SUCCESS``) under a local or bucket output root, sorted."""
    fs, base = root_fs(root)
    if fs.get_file_info(base).type != pafs.FileType.Directory:
        return []
    dirs = [i.base_name for i in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
            if i.type == pafs.FileType.Directory and not i.base_name.startswith(".")]
    marks = fs.get_file_info([f"{base}/{d}/{SUCCESS}" for d in dirs])
    return sorted(d for d, m in zip(dirs, marks) if m.type == pafs.FileType.File)


def version_files(local_vdir: Path) -> list[str]:
    """The files of a built version that are published (relative paths): all but its local caches,
    lock and temporary files (a name starting with ``.``) and an old ``_SUCCESS``."""
    out = []
    for f in sorted(Path(local_vdir).rglob("*")):
        rel = f.relative_to(local_vdir)
        if f.is_file() and rel.parts[0] not in _LOCAL_ONLY and rel.as_posix() != SUCCESS \
                and not any(p.startswith(".") for p in rel.parts):
            out.append(rel.as_posix())
    return out


def publish_version(local_vdir: str | os.PathLike, output_root: str, version: str) -> str:
    """Copy a built version to ``<output_root>/<version>/`` through ``pyarrow.fs``, then mark it good
    (``_SUCCESS``) and point ``LATEST`` at it; returns the version's URI."""
    fs, base = root_fs(output_root)
    local = pafs.LocalFileSystem()
    dest = f"{base}/{version}"
    src = Path(local_vdir).resolve()
    uri = f"{output_root.rstrip('/')}/{version}"
    try:
        for rel in version_files(src):
            pafs.copy_files(str(src / rel), f"{dest}/{rel}", source_filesystem=local, destination_filesystem=fs)
        _write(fs, f"{dest}/{SUCCESS}", _dt.datetime.now(_dt.timezone.utc).isoformat())
        _write(fs, f"{base}/{LATEST}", version + "\n")
    except OSError as exc:      # unreachable endpoint, no such bucket, access denied: one line, LATEST unchanged
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise StoreError(f"cannot publish version {version} to {uri}: {first}") from None
    return uri


def version_link(output_root: str, version: str) -> str:
    """An https address of the version for a person: the S3 console on AWS, else the endpoint's
    ``<endpoint>/<bucket>/<prefix>/<version>/``; user info in the endpoint is dropped."""
    parts = urlsplit(output_root)
    bucket, prefix = parts.netloc, parts.path.strip("/")
    key = f"{prefix}/{version}/" if prefix else f"{version}/"
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint or urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}").hostname.endswith(
            "amazonaws.com"):
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        return (f"https://s3.console.aws.amazon.com/s3/buckets/{quote(bucket)}?region={quote(region)}"
                f"&prefix={quote(key)}&showversions=false")
    ep = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    host = (ep.hostname or "") + (f":{ep.port}" if ep.port else "")
    return urlunsplit((ep.scheme, host, f"{ep.path.rstrip('/')}/{quote(bucket)}/{quote(key)}", "", ""))


def publish_link(output_root: str, version: str) -> str:
    """The Prefect link artifact ``benchmark-version`` of this flow run, pointing at the version in the
    bucket; returns the link. Best effort, as every artifact: the version is published already, so an
    unavailable API is a warning, not a failed run."""
    from prefect import get_run_logger
    from prefect.artifacts import create_link_artifact   # costly: prefect
    link = version_link(output_root, version)
    try:
        create_link_artifact(link=link, link_text=f"{version} ({output_root.rstrip('/')}/{version})",
                             key=LINK_KEY, description=f"Benchmark version {version}, published to the bucket")
    except Exception as exc:  # noqa: BLE001 - artifacts are best effort
        get_run_logger().warning("no link artifact for version %s: %s", version, type(exc).__name__)
    return link

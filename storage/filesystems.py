"""Where a run lives: a local path or an ``s3://bucket/prefix`` URI resolved to a ``pyarrow.fs`` filesystem
(the endpoint from ``AWS_ENDPOINT_URL``, credentials never from the URI), and the local directory of an
object-store run (:meth:`storage.store.RunStore.local_dir`)."""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from storage.errors import StoreError


def is_remote(uri: str | os.PathLike) -> bool:
    """Whether ``uri`` names a run on a filesystem other than the local one (``s3://...``)."""
    return "://" in str(uri) and not str(uri).startswith("file://")


def s3_filesystem(uri: str) -> tuple[pafs.S3FileSystem, str]:
    """The ``S3FileSystem`` of an ``s3://bucket/prefix`` URI and its ``bucket/prefix`` path.

    The endpoint is ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` (an ``http://`` endpoint
    gives scheme http: MinIO, moto), else AWS itself; a query string of the URI
    (``?endpoint_override=...``) is left to pyarrow. Credentials are never taken from the URI:
    user info in it is refused, so that no secret reaches a manifest, a path or a log line.
    """
    parts = urlsplit(uri)
    if parts.username or parts.password or "@" in parts.netloc:
        raise StoreError("an object-store URI must not hold credentials; set AWS_ACCESS_KEY_ID / "
                         "AWS_SECRET_ACCESS_KEY or AWS_PROFILE instead")
    if not parts.netloc:
        raise StoreError(f"{uri}: an object-store URI needs a bucket (s3://bucket/prefix)")
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if parts.query or not endpoint:
        fs, path = pafs.FileSystem.from_uri(uri)
        return fs, path
    ep = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    fs = pafs.S3FileSystem(endpoint_override=ep.netloc, scheme=ep.scheme or "https", region=region,
                           connect_timeout=5, request_timeout=60,
                           retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=3))
    return fs, f"{parts.netloc}{parts.path}".rstrip("/")


def _resolve(uri: str | os.PathLike) -> tuple[pafs.FileSystem, str]:
    uri = str(uri)
    if uri.startswith("s3://"):
        return s3_filesystem(uri)
    if "://" in uri:
        fs, path = pafs.FileSystem.from_uri(uri)
        return fs, path
    return pafs.LocalFileSystem(), str(Path(uri).expanduser().resolve())


def local_cache_root() -> Path:
    """Where the local directories of object-store runs live (:meth:`RunStore.local_dir`):
    ``MTR_LOCAL_CACHE``, else ``~/.cache/mtr-suite/runs``."""
    return Path(os.environ.get("MTR_LOCAL_CACHE") or Path.home() / ".cache" / "mtr-suite" / "runs")

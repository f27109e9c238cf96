"""Runs on an S3-compatible object store: conditional writes, and the run's lease object.

Tables are written through ``pyarrow.fs`` (see :mod:`storage.store`): each table object is
written under a temp key and then copied over the final key (CopyObject) and the temp key
deleted. A single object appears whole or not at all on S3 (a PUT, a completed multipart
upload and a CopyObject are each atomic; S3 has been strongly read-after-write consistent
since 2020), so a reader sees the old table or the new one, never a partial one; the temp key
keeps a writer that fails mid-way (an exception: pyarrow would complete the upload on close)
from ever publishing a partial object at the final key.

What an object store lacks is ``flock``. Two things need more than an atomic PUT, and both use
S3's *conditional writes* (``If-None-Match: *``: create only if absent; ``If-Match: <etag>``:
replace only the version read), which AWS S3, MinIO and moto implement:

* the manifest's read-merge-write (:func:`update_object`): optimistic concurrency, the write
  is conditional on the ETag read and the merge starts again when another writer got in
  between, so no update is lost (the local store serialises the same step with ``flock``);
* the run lock (:func:`acquire_lease`): a lease object ``<run>/.lock`` created with
  ``If-None-Match: *`` - exactly one of two writers gets it, the other gets
  :class:`storage.locks.RunLocked` naming the holder. The holder renews the lease (a
  conditional replace on its own ETag) every third of its time to live; a lease whose time
  ran out (a holder killed with ``kill -9``, a lost machine) may be taken over by one
  claimant, again by a conditional replace on the stale lease's ETag, so two claimants never
  both win. Unlike ``flock``, a dead holder's lease stays for up to its time to live
  (``MTR_S3_LEASE_TTL_S``, default 120 s).

A lease was chosen over a conditional-write-only "create and delete" lock because a crashed
holder would otherwise leave the run locked for ever; over a DynamoDB-style lock table because
it needs nothing but the bucket.

The conditional requests go through boto3 (pyarrow's ``S3FileSystem`` has no conditional PUT),
configured from the same standard variables as pyarrow (``AWS_ENDPOINT_URL``, credentials,
region or profile).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from storage.errors import StoreError

RunStore = Any     # a storage.store.RunStore on an object store (not imported: store imports this module)

LEASE_NAME = ".lock"
DEFAULT_LEASE_TTL_S = 120.0


class LeaseHeld(StoreError):
    """Another process holds the run's lease (see :class:`storage.locks.RunLocked`)."""


def _client():
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:     # pragma: no cover - boto3 is a dependency of the package
        raise StoreError("object-store runs need boto3 (pip install boto3)") from exc
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    cfg = Config(connect_timeout=5, read_timeout=60, retries={"max_attempts": 3, "mode": "standard"})
    return boto3.session.Session().client("s3", endpoint_url=endpoint, region_name=region, config=cfg)


def _split(store: RunStore, name: str) -> tuple[str, str]:
    bucket, _, prefix = store._root.partition("/")
    return bucket, f"{prefix}/{name}" if prefix else name


def _code(exc: Exception) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def _conflict(exc: Exception) -> bool:
    """A conditional write lost: 412 PreconditionFailed, or 409 ConditionalRequestConflict."""
    return _code(exc) in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


def _fail(store: RunStore, exc: Exception) -> StoreError:
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return StoreError(f"object store error on {store.path}: {first}")


def get_object(store: RunStore, name: str, client=None) -> tuple[bytes | None, str | None]:
    """The bytes and ETag of object ``name`` of the run, or ``(None, None)`` when absent."""
    from botocore.exceptions import BotoCoreError, ClientError
    client = client or _client()
    bucket, key = _split(store, name)
    try:
        r = client.get_object(Bucket=bucket, Key=key)
        return r["Body"].read(), r["ETag"]
    except ClientError as exc:
        if _code(exc) in ("NoSuchKey", "404"):
            return None, None
        raise _fail(store, exc) from None
    except BotoCoreError as exc:
        raise _fail(store, exc) from None


def put_object(store: RunStore, name: str, data: bytes, *, if_match: str | None = None,
               if_absent: bool = False, client=None) -> str | None:
    """PUT ``data`` at object ``name`` of the run, conditionally; the new ETag, or None when the
    condition did not hold (another writer's version is there)."""
    from botocore.exceptions import BotoCoreError, ClientError
    client = client or _client()
    bucket, key = _split(store, name)
    kwargs = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"} if if_absent else {}
    try:
        return client.put_object(Bucket=bucket, Key=key, Body=data, **kwargs)["ETag"]
    except ClientError as exc:
        if _conflict(exc):
            return None
        raise _fail(store, exc) from None
    except BotoCoreError as exc:
        raise _fail(store, exc) from None


def update_object(store: RunStore, name: str, merge: Callable[[bytes | None], bytes],
                  attempts: int = 50) -> bytes:
    """Read-merge-write object ``name`` without losing a concurrent writer's update: ``merge``
    gets the current bytes (None when absent) and returns the new ones, written only if the
    object is still the version read; otherwise it runs again on the newer version."""
    client = _client()
    for i in range(attempts):
        data, etag = get_object(store, name, client)
        new = merge(data)
        if put_object(store, name, new, if_match=etag, if_absent=etag is None, client=client) is not None:
            return new
        time.sleep(min(0.5, 0.01 * (i + 1)))
    raise StoreError(f"{store.path}/{name}: gave up after {attempts} conflicting concurrent updates")


def lease_ttl() -> float:
    try:
        return max(1.0, float(os.environ.get("MTR_S3_LEASE_TTL_S", DEFAULT_LEASE_TTL_S)))
    except ValueError:
        return DEFAULT_LEASE_TTL_S


@dataclass
class Lease:
    """A held run lease; renewed by a daemon thread until :meth:`release`."""

    store: RunStore
    token: str
    etag: str
    ttl: float
    lost: bool = False
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    def _body(self) -> bytes:
        expires = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=self.ttl)
        return _lease_body(self.token, expires)

    def _renew_loop(self) -> None:
        client = None
        while not self._stop.wait(self.ttl / 3):
            try:
                client = client or _client()
                etag = put_object(self.store, LEASE_NAME, self._body(), if_match=self.etag, client=client)
            except StoreError:
                continue                       # the store is unreachable now: try again next time
            if etag is None:                   # taken over: our lease ran out while we were cut off
                self.lost = True
                return
            self.etag = etag

    def start(self) -> "Lease":
        self._thread = threading.Thread(target=self._renew_loop, name="mtr-run-lease", daemon=True)
        self._thread.start()
        return self

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:
            data, _ = get_object(self.store, LEASE_NAME)
            if data is not None and json.loads(data).get("token") == self.token:
                bucket, key = _split(self.store, LEASE_NAME)
                _client().delete_object(Bucket=bucket, Key=key)
        except Exception:  # noqa: BLE001 - the lease then runs out on its own
            pass


def _lease_body(token: str, expires: _dt.datetime) -> bytes:
    return json.dumps({"token": token, "pid": os.getpid(), "host": socket.gethostname(),
                       "expires_at": expires.isoformat()}).encode("utf-8")


def acquire_lease(store: RunStore, ttl: float | None = None) -> Lease:
    """Take the run's lease object or raise :class:`LeaseHeld` at once (see the module doc)."""
    ttl = ttl or lease_ttl()
    client = _client()
    token = uuid.uuid4().hex
    for _ in range(5):
        expires = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(seconds=ttl)
        etag = put_object(store, LEASE_NAME, _lease_body(token, expires), if_absent=True, client=client)
        if etag is not None:
            return Lease(store, token, etag, ttl).start()
        data, held_etag = get_object(store, LEASE_NAME, client)
        if data is None:
            continue                           # released in between: try to create it again
        try:
            held = json.loads(data)
            held_until = _dt.datetime.fromisoformat(held["expires_at"])
        except (ValueError, KeyError, TypeError):
            held, held_until = {}, _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)   # garbage: stale
        if held_until > _dt.datetime.now(_dt.timezone.utc):
            raise LeaseHeld(f"run {store.path} is in use by another mtr process (pid {held.get('pid', 'unknown')} "
                            f"on {held.get('host', 'unknown host')}, lease until {held_until:%H:%M:%S} UTC); "
                            "wait for it to finish or use another run id")
        etag = put_object(store, LEASE_NAME, _lease_body(token, expires), if_match=held_etag, client=client)
        if etag is not None:                   # took over a stale lease
            return Lease(store, token, etag, ttl).start()
    raise LeaseHeld(f"run {store.path} is in use by another mtr process (the lease keeps changing hands)")

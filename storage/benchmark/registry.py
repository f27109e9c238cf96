"""The benchmark formats, declared once: :data:`Format` names them, :data:`LOADERS` maps each
to its loader with one signature ``(path, domain, split) -> Benchmark``."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Literal, get_args

from storage.benchmark.beir import load_beir
from storage.benchmark.chatrag import load_chatrag
from storage.benchmark.coral import load_coral
from storage.benchmark.model import Benchmark
from storage.benchmark.mtrag import load_mtrag
from storage.benchmark.ours import load_ours
from storage.benchmark.topiocqa import load_topiocqa
from storage.store import StoreError

Format = Literal["ours", "mtrag", "beir", "chatrag", "coral", "topiocqa"]
FORMATS: tuple[str, ...] = get_args(Format)

Loader = Callable[[Path, "str | None", str], Benchmark]


def _mtrag(path: Path, domain: str | None, split: str) -> Benchmark:
    if not domain:
        raise StoreError("the mtrag format needs a domain (e.g. --domain clapnq)")
    return load_mtrag(path, domain)


LOADERS: dict[str, Loader] = {
    "ours": lambda path, domain, split: load_ours(path),
    "mtrag": _mtrag,
    "beir": lambda path, domain, split: load_beir(path, split),
    "chatrag": lambda path, domain, split: load_chatrag(path, split=split, name=domain),   # domain = its name
    "coral": lambda path, domain, split: load_coral(path, split=split),
    "topiocqa": lambda path, domain, split: load_topiocqa(path, split=split),
}


def iter_formats() -> Iterable[str]:
    """The supported format names, in the order the CLI lists them."""
    return FORMATS


def load_benchmark(path: str | Path, format: str, domain: str | None = None, split: str = "test") -> Benchmark:
    """Load any supported benchmark (see :func:`iter_formats`); ``domain`` is required for MTRAG.

    Raises:
        StoreError: the path does not exist, the format is unknown, or a source file is
            malformed (:class:`~storage.formats.FormatError`).
    """
    loader = LOADERS.get(format)
    if "://" in str(path) and format == "ours":     # a run on an object store: read through its RunStore
        if loader is None:
            raise StoreError(f"unknown benchmark format {format!r}; use {', '.join(iter_formats())}")
        return loader(str(path), domain, split)
    p = Path(path)
    if not p.exists():
        raise StoreError(f"benchmark path {p} does not exist")
    if loader is None:
        raise StoreError(f"unknown benchmark format {format!r}; use {', '.join(iter_formats())}")
    return loader(p, domain, split)


def load_benchmarks(specs: list[dict[str, Any]]) -> list[Benchmark]:
    """Load several benchmarks from ``[{"path", "format", "domain", "split"}]``.

    Two benchmarks with the same name (two files with the same stem) get ``-<position>``
    suffixes (1-based), so names stay distinct.

    Raises:
        StoreError: any benchmark cannot be loaded (a missing file or an unreadable one
            included); the message is the underlying one.
    """
    out = []
    for s in specs:
        try:
            out.append(load_benchmark(s["path"], s["format"], domain=s["domain"], split=s["split"]))
        except StoreError:
            raise
        except (ValueError, OSError) as exc:
            raise StoreError(str(exc)) from exc
    names = [b.name for b in out]
    for i, b in enumerate(out):
        if names.count(b.name) > 1:
            b.name = f"{b.name}-{i + 1}"
    return out

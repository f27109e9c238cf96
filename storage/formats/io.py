"""Generic file I/O shared by every format reader and writer.

Gzip is decided here, once: a path ending in ``.gz`` is read and written through
:mod:`gzip`, anything else as a plain file. Readers yield 1-based line numbers so that a
:class:`FormatError` can name the exact place of a malformed line.
"""
from __future__ import annotations

import gzip
import json
import math
import os
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, Mapping, Sequence

from common.types import Qrels
from storage.store import StoreError

PathLike = str | os.PathLike


class FormatError(StoreError, ValueError):
    """A malformed input file; the message names the file and (when known) the line.

    Attributes:
        path: the file that was being read.
        line: 1-based line number of the offending line, or ``None`` for whole-file errors.
        reason: what is wrong, without the location prefix.
    """

    def __init__(self, path: PathLike, line: int | None, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


def _open(path: PathLike, mode: str, gz: bool | None = None, **kwargs: Any) -> IO:
    """``gzip.open`` when ``gz`` (default: the name ends in ``.gz``), else ``open``.

    The one place that decides about gzip.
    """
    if gz is None:
        gz = Path(path).suffix == ".gz"
    return (gzip.open if gz else open)(path, mode, **kwargs)


def open_text(path: PathLike, mode: str = "rt"):
    """Open a UTF-8 text file, gunzipping transparently when the name ends with ``.gz``.

    Args:
        path: file to open.
        mode: ``"rt"`` or ``"wt"``.

    Returns:
        A text stream.

    Raises:
        FileNotFoundError: when reading a file that does not exist.
    """
    return _open(Path(path), mode, encoding="utf-8", newline="" if "w" in mode else None)


@contextmanager
def atomic_text_writer(path: PathLike) -> Iterator[Any]:
    """Write a UTF-8 text file atomically (temp file + rename); gzip when ``path`` ends in ``.gz``.

    Parents are created. On error the temp file is removed and ``path`` is left untouched.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        # the temp name ends in ".tmp-<pid>": gzip is chosen from the final name
        with _open(tmp, "wt", gz=out.suffix == ".gz", encoding="utf-8", newline="") as f:
            yield f
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()


def iter_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` for every non-blank line (line numbers are 1-based).

    Lines are decoded one by one, so a decoding error names the exact line. A UTF-8 byte
    order mark at the start of the file is skipped.

    Raises:
        FileNotFoundError: the file does not exist.
        FormatError: a line is not UTF-8, or the gzip stream is corrupt.
    """
    lineno = 0
    try:
        with _open(Path(path), "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                try:
                    line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                except UnicodeDecodeError as exc:
                    raise FormatError(path, lineno, f"not UTF-8 text ({exc.reason})") from None
                if line.strip():
                    yield lineno, line.rstrip("\r\n")
    except (gzip.BadGzipFile, EOFError) as exc:
        raise FormatError(path, lineno + 1, f"corrupt gzip data: {exc}") from exc


def iter_jsonl(path: PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each JSON-lines record (blank lines skipped).

    Raises:
        FormatError: on a line that is not a JSON object.
    """
    for lineno, line in iter_lines(path):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(path, lineno, f"invalid JSON ({exc.msg} at column {exc.colno})") from exc
        if not isinstance(obj, dict):
            raise FormatError(path, lineno, f"expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def read_json_rows(path: PathLike) -> list[tuple[int | None, dict[str, Any]]]:
    """Rows of a JSON array file or a JSON-lines file: ``[(line or None, object)]``.

    A file whose first non-blank line starts with ``[`` is read as one JSON array of objects
    (rows then carry no line number); anything else as JSON lines.

    Raises:
        FormatError: invalid JSON, or an array holding something other than objects.
    """
    first = next(iter_lines(path), (None, ""))[1].lstrip()
    if first.startswith("["):
        with _open(Path(path), "rt", encoding="utf-8-sig") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as exc:
                raise FormatError(path, exc.lineno, f"invalid JSON ({exc.msg})") from None
        if not all(isinstance(x, dict) for x in data):
            raise FormatError(path, None, "expected a JSON array of objects")
        return [(None, x) for x in data]
    return list(iter_jsonl(path))


def first_file(*paths: Path) -> Path | None:
    """The first of ``paths`` that is an existing file, else ``None``."""
    for p in paths:
        if p.is_file():
            return p
    return None


def get_field(path: PathLike, lineno: int, obj: Mapping[str, Any], key: str, kind: type | tuple = str,
              default: Any = ..., nullable: bool = False) -> Any:
    """``obj[key]`` checked to be of ``kind`` (``default`` when absent and given).

    Raises:
        FormatError: the key is missing (and no default), or the value has the wrong type.
    """
    if key not in obj:
        if default is not ...:
            return default
        raise FormatError(path, lineno, f"missing field {key!r}")
    value = obj[key]
    if value is None and nullable:
        return None
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        want = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise FormatError(path, lineno, f"field {key!r} must be {want}, got {type(value).__name__}")
    return value


def parse_grade(path: PathLike, lineno: int, text: str) -> int:
    """A relevance grade: an integer, or a float with an integral value (``"2.0"``).

    Raises:
        FormatError: anything else.
    """
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value != int(value):
        raise FormatError(path, lineno, f"relevance grade {text!r} is not an integer")
    return int(value)


def add_judgment(qrels: Qrels, first_line: dict[tuple[str, str], int], path: PathLike, lineno: int, qid: str,
                 doc_id: str, grade: int) -> None:
    """Add one judgment to ``qrels``; the same pair judged again must have the same grade.

    Raises:
        FormatError: the pair was judged before with a different grade.
    """
    docs = qrels.setdefault(qid, {})
    if doc_id in docs and docs[doc_id] != grade:
        raise FormatError(path, lineno, f"document {doc_id!r} judged twice for query {qid!r} with "
                                        f"different grades (first on line {first_line[(qid, doc_id)]})")
    docs[doc_id] = grade
    first_line.setdefault((qid, doc_id), lineno)


def pick_split_file(folder: Path, split: str, what: str, patterns: Sequence[str]) -> Path:
    """The first existing ``folder/pattern`` (``{split}`` substituted), else the folder's only
    JSON / JSON-lines file (plain or gzipped).

    Raises:
        StoreError: none of the patterns exists and the folder holds zero or several such files.
    """
    for pat in patterns:
        f = folder / pat.format(split=split)
        if f.is_file():
            return f
    found = sorted(f for f in folder.iterdir()
                   if f.is_file() and f.name.endswith((".json", ".jsonl", ".json.gz", ".jsonl.gz")))
    if len(found) == 1:
        return found[0]
    raise StoreError(f"{folder}: cannot tell which file holds the {what} "
                     f"(looked for {', '.join(p.format(split=split) for p in patterns)})")

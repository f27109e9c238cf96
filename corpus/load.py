"""Load a corpus from a directory of text files or from a JSONL / Parquet / CSV table.

Nothing is silently dropped: every input that cannot become a document (empty, binary,
undecodable, oversized, malformed line, missing text field, duplicate id, unsupported
file type) is returned as a :class:`storage.records.Rejected` with its source and reason.
Every entry of a corpus directory is accounted for (:func:`_walk`): symbolic links are followed
once (loop-safe), and dangling links, special files (FIFOs, sockets, devices) and hidden entries
are rejected with a reason, so input entries = documents + rejected.

Doc ids are the given id field when present, else a content hash (stable across runs).
"""
from __future__ import annotations

import codecs
import csv
import errno
import os
import stat
import gzip
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Iterable, Iterator

from pydantic import BaseModel, ConfigDict, Field, field_validator

from common.text import visible
from storage.records import Document, Rejected, hash_doc_id

TEXT_EXTS = {".txt", ".md", ".markdown", ".text"}
HTML_EXTS = {".html", ".htm"}
TABLE_EXTS = {".jsonl", ".ndjson", ".jsonl.gz", ".parquet", ".csv", ".json"}


class LoadConfig(BaseModel):
    """How to read the corpus."""
    model_config = ConfigDict(extra="forbid")
    id_field: str = Field("id", description="id column/key of table inputs (falls back to doc_id, _id)")
    title_field: str = Field("title", description="title column/key of table inputs")
    text_field: str = Field("text", description="text column/key of table inputs")
    max_bytes: int = Field(5_000_000, gt=0, description="documents larger than this are rejected as oversized")
    encoding: str = Field("utf-8", description="text encoding of the input files (any Python codec name)")

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, v: str) -> str:
        try:
            codecs.lookup(v)
        except LookupError:
            raise ValueError(f"unknown text encoding {v!r} (use a Python codec name such as utf-8 or latin-1)") from None
        return v


class CorpusError(ValueError):
    """The corpus path itself is unusable (missing, not readable, no supported files)."""


def _suffix(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".jsonl.gz"):
        return ".jsonl.gz"
    return path.suffix.lower()


class _HTMLText(HTMLParser):
    SKIP = {"script", "style", "noscript", "head", "nav", "footer"}
    BLOCK = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article", "pre",
             "blockquote", "ul", "ol", "table"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self._in_title = True
        elif tag in self.SKIP:
            self._skip += 1
        elif tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        elif tag in self.SKIP and self._skip:
            self._skip -= 1
        elif tag in self.BLOCK:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if self._in_title:
            self.title.append(data)
        elif not self._skip:
            self.parts.append(data)


def html_to_text(raw: str) -> tuple[str, str]:
    """(title, text) of an HTML page: scripts/styles/nav dropped, blocks become paragraphs."""
    p = _HTMLText()
    p.feed(raw)
    p.close()
    text = "".join(p.parts)
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    text = re.sub(r" *\n *", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return html.unescape(" ".join("".join(p.title).split())), text


def _looks_binary(data: bytes) -> bool:
    head = data[:8192]
    if b"\x00" in head:
        return True
    if not head:
        return False
    ctrl = sum(1 for b in head if b < 32 and b not in (9, 10, 12, 13))
    return ctrl / len(head) > 0.10


def _md_title(text: str, fallback: str) -> str:
    for line in text.splitlines()[:5]:
        s = line.strip()
        if s.startswith("# "):
            return s[2:].strip()
    return fallback


def _read_text_file(path: Path, cfg: LoadConfig, source: str) -> Document | Rejected:
    try:
        size = path.stat().st_size
    except OSError as exc:
        return Rejected(source, "unreadable", f"could not stat the file: {exc}")
    if size > cfg.max_bytes:
        return Rejected(source, "oversized", f"{size} bytes exceeds load.max_bytes={cfg.max_bytes}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        return Rejected(source, "unreadable", f"could not read the file: {exc}")
    if _looks_binary(data):
        return Rejected(source, "binary", "the file contains NUL or control bytes, so it is not text")
    try:
        raw = data.decode(cfg.encoding)
    except UnicodeDecodeError as exc:
        return Rejected(source, "undecodable", f"not valid {cfg.encoding} at byte {exc.start}")
    raw = raw.lstrip("\ufeff")
    if _suffix(path) in HTML_EXTS:
        title, text = html_to_text(raw)
        title = title or path.stem
    else:
        text = raw.replace("\r\n", "\n").replace("\r", "\n").strip()
        title = _md_title(text, path.stem) if _suffix(path) in {".md", ".markdown"} else path.stem
    if not text.strip():
        return Rejected(source, "empty", "the document has no text")
    return Document(doc_id=hash_doc_id(text), title=title, text=text, source=source)


def _records_jsonl(path: Path, cfg: LoadConfig) -> Iterator[tuple[str, dict | Rejected]]:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        fh = opener(path, "rb")
        lines = fh.read().split(b"\n")
        fh.close()
    except (OSError, EOFError) as exc:
        raise CorpusError(f"cannot read {path}: {exc}") from exc
    for i, line in enumerate(lines, 1):
        src = f"{path}:{i}"
        if not line.strip():
            continue
        try:
            obj = json.loads(line.decode(cfg.encoding))
        except UnicodeDecodeError as exc:
            yield src, Rejected(src, "undecodable", f"line is not valid {cfg.encoding} at byte {exc.start}")
            continue
        except json.JSONDecodeError as exc:
            yield src, Rejected(src, "malformed", f"invalid JSON: {exc.msg} at column {exc.colno}")
            continue
        if not isinstance(obj, dict):
            yield src, Rejected(src, "malformed", "the line is JSON but not an object")
            continue
        yield src, obj


def _records_json(path: Path, cfg: LoadConfig) -> Iterator[tuple[str, dict | Rejected]]:
    try:
        data = json.loads(path.read_text(encoding=cfg.encoding))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorpusError(f"{path} is not a valid JSON file: {exc}") from exc
    if not isinstance(data, list):
        raise CorpusError(f"{path}: a .json corpus must be a list of objects (use .jsonl for one object per line)")
    for i, obj in enumerate(data):
        src = f"{path}[{i}]"
        yield src, obj if isinstance(obj, dict) else Rejected(src, "malformed", "the item is not an object")


def _records_parquet(path: Path, cfg: LoadConfig) -> Iterator[tuple[str, dict | Rejected]]:
    import pyarrow.parquet as pq   # costly: pyarrow (Parquet corpora only)
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types
        raise CorpusError(f"{path} is not a readable Parquet file: {exc}") from exc
    row = 0
    for batch in pf.iter_batches(batch_size=4096):
        for rec in batch.to_pylist():
            yield f"{path}#row{row}", rec
            row += 1


def _records_csv(path: Path, cfg: LoadConfig) -> Iterator[tuple[str, dict | Rejected]]:
    """Strict CSV: a row with a broken quote or the wrong number of fields is rejected with its
    line number; parsing resumes on the next line, so one bad row never swallows the rest."""
    csv.field_size_limit(max(cfg.max_bytes * 2, 1 << 20))
    try:
        text = path.read_text(encoding=cfg.encoding)
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path} is not valid {cfg.encoding} at byte {exc.start}") from exc
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    try:
        header = next(csv.reader(lines[:1], strict=True))
    except (StopIteration, csv.Error) as exc:
        raise CorpusError(f"{path}:1: the CSV header is missing or malformed") from exc
    if len(set(header)) != len(header) or any(not h.strip() for h in header):
        raise CorpusError(f"{path}:1: the CSV header has empty or repeated column names: {header}")
    pos = 1  # index (0-based) of the next physical line to parse
    while pos < len(lines):
        reader = csv.reader(iter(lines[pos:]), strict=True)
        done = 0  # physical lines of lines[pos:] consumed by complete records
        try:
            for row in reader:
                first = pos + done + 1  # 1-based line where this record starts
                done = reader.line_num
                if not row:
                    continue
                src = f"{path}:{first}"
                if len(row) != len(header):
                    yield src, Rejected(src, "malformed", f"CSV row has {len(row)} fields but the header has "
                                                          f"{len(header)} (check quoting and delimiters)")
                    continue
                yield src, dict(zip(header, row))
            break
        except csv.Error as exc:
            bad = pos + done + 1
            yield f"{path}:{bad}", Rejected(f"{path}:{bad}", "malformed", f"CSV parse error: {exc}")
            pos = pos + done + 1


_BAD_ID = re.compile(r"[\s\x00-\x1f\x7f#]")


def id_problem(doc_id: str) -> str | None:
    """Why ``doc_id`` cannot be used as a document id, or None. Ids end up in TREC lines
    (whitespace-separated), BEIR TSVs and ``doc_id#n`` chunk ids."""
    if len(doc_id) > 512:
        return "is longer than 512 characters"
    if not visible(doc_id):
        return "is empty once invisible characters (zero-width spaces, format characters) are removed"
    m = _BAD_ID.search(doc_id)
    if m:
        ch = m.group()
        what = "'#' (reserved for chunk ids)" if ch == "#" else "whitespace or control characters"
        return f"contains {what}"
    return None


def _table_records(path: Path, cfg: LoadConfig) -> Iterator[tuple[str, Document | Rejected]]:
    suf = _suffix(path)
    gen = {".jsonl": _records_jsonl, ".ndjson": _records_jsonl, ".jsonl.gz": _records_jsonl,
           ".json": _records_json, ".parquet": _records_parquet, ".csv": _records_csv}[suf]
    id_keys = [cfg.id_field, "doc_id", "_id", "id"]
    for src, rec in gen(path, cfg):
        if isinstance(rec, Rejected):
            yield src, rec
            continue
        if cfg.text_field not in rec:
            yield src, Rejected(src, "missing_field", f"no {cfg.text_field!r} field (set load.text_field); "
                                                    f"fields present: {', '.join(map(str, list(rec)[:8]))}")
            continue
        text = rec.get(cfg.text_field)
        if not isinstance(text, str):
            yield src, Rejected(src, "malformed", f"field {cfg.text_field!r} is not a string")
            continue
        given = next((rec[k] for k in id_keys if rec.get(k) not in (None, "")), None)
        doc_id = str(given) if given is not None else None
        if doc_id is not None and (problem := id_problem(doc_id)):
            yield src, Rejected(src, "invalid_id", f"doc id {doc_id[:80]!r} {problem}; TREC/BEIR exports cannot "
                                                   "carry it: fix the id, or drop the id field to get content-hash ids")
            continue
        if len(text.encode("utf-8", "surrogatepass")) > cfg.max_bytes:
            yield src, Rejected(src, "oversized", f"text exceeds load.max_bytes={cfg.max_bytes}", doc_id=doc_id)
            continue
        if "\x00" in text:
            yield src, Rejected(src, "binary", "the text contains NUL characters", doc_id=doc_id)
            continue
        text = text.replace("\r\n", "\n").strip()
        if not text:
            yield src, Rejected(src, "empty", "the document has no text", doc_id=doc_id)
            continue
        title = rec.get(cfg.title_field)
        yield src, Document(doc_id=doc_id or hash_doc_id(text), title="" if title is None else str(title),
                            text=text, source=src)


def _rejected_entry(rel: str, st: os.stat_result) -> Rejected:
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
            else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
    return Rejected(rel, "special_file", f"{kind}, not a regular file: not read")


def _walk(root: Path) -> tuple[list[tuple[Path, str]], list[Rejected]]:
    """Every entry under ``root`` accounted for: ``([(file, source)], [Rejected])``.

    Regular files are returned (sorted by source, the path relative to ``root``); every other
    entry is a ``Rejected`` row with its reason, never skipped silently: hidden entries (name
    starting with '.'), special files (FIFOs, sockets, devices: never opened), dangling links,
    directories that could not be listed. Symbolic links are followed once: a link to a
    directory is walked unless that directory is already being walked or was walked (a loop, or
    a second way to the same files), and a second path to a file already loaded is rejected, so
    every file is read at most once and a link loop ends.
    """
    files: list[tuple[Path, str]] = []
    rejected: list[Rejected] = []
    seen_dirs: dict[tuple[int, int], str] = {}     # (st_dev, st_ino) -> source of the walked directory
    seen_files: dict[tuple[int, int], str] = {}

    def visit(path: Path, rel: str) -> None:
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            rejected.append(Rejected(rel or ".", "unreadable", f"could not list the directory: {exc.strerror or exc}"))
            return
        for e in entries:
            src = f"{rel}/{e.name}" if rel else e.name
            if e.name.startswith("."):
                rejected.append(Rejected(src, "hidden", "hidden entry (its name starts with '.'): not read; "
                                                        "rename it to include it"))
                continue
            link = e.is_symlink()
            try:
                st = os.stat(e.path)          # follows a link
            except OSError as exc:
                if link:
                    target = os.readlink(e.path)
                    why = ("a symbolic link loop" if exc.errno == errno.ELOOP
                           else f"a symbolic link to {target}, which does not exist")
                    rejected.append(Rejected(src, "broken_link", f"{why}: not read"))
                else:
                    rejected.append(Rejected(src, "unreadable", f"could not stat the entry: {exc.strerror or exc}"))
                continue
            key = (st.st_dev, st.st_ino)
            if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
                is_dir = stat.S_ISDIR(st.st_mode)
                seen = seen_dirs if is_dir else seen_files
                if key in seen:       # a second path to what was walked or read already: not twice
                    rejected.append(Rejected(src, "link_loop", f"links to the directory {seen[key] or '.'}, already "
                                                               "walked: not read twice") if is_dir else
                                    Rejected(src, "duplicate_link", f"the same file as {seen[key]}, already read: "
                                                                    "not read twice"))
                    continue
                seen[key] = src
                if is_dir:
                    visit(Path(e.path), src)
                else:
                    files.append((Path(e.path), src))
            else:
                rejected.append(_rejected_entry(src, st))

    st = os.stat(root)
    seen_dirs[(st.st_dev, st.st_ino)] = ""
    visit(root, "")
    return sorted(files, key=lambda f: f[1]), sorted(rejected, key=lambda r: r.source)


def iter_corpus(path: str | Path, cfg: LoadConfig | None = None) -> Iterator[Document | Rejected]:
    cfg = cfg or LoadConfig()
    p = Path(path)
    if not p.exists():
        raise CorpusError(f"corpus path {p} does not exist")
    if p.is_file():
        if _suffix(p) in TABLE_EXTS:
            for _, item in _table_records(p, cfg):
                yield item
        elif _suffix(p) in TEXT_EXTS | HTML_EXTS:
            yield _read_text_file(p, cfg, str(p))
        else:
            raise CorpusError(f"unsupported corpus file type {_suffix(p) or '(none)'} for {p}; "
                              "use a directory of .txt/.md/.html files or a .jsonl/.parquet/.csv table")
        return
    if not p.is_dir():
        raise CorpusError(f"corpus path {p} is neither a regular file nor a directory (a FIFO, socket or device?)")
    files, rejected = _walk(p)
    yield from rejected
    if not files and not rejected:
        raise CorpusError(f"corpus directory {p} contains no files")
    for f, rel in files:
        suf = _suffix(f)
        if suf in TEXT_EXTS | HTML_EXTS:
            yield _read_text_file(f, cfg, rel)
        elif suf in TABLE_EXTS:
            try:
                for _, item in _table_records(f, cfg):
                    yield item
            except CorpusError as exc:  # one broken table file does not abort the whole corpus
                yield Rejected(rel, "unreadable", str(exc))
        else:
            yield Rejected(rel, "unsupported_type", f"file type {suf or '(none)'} is not a supported corpus format")


def unique_ids(items: Iterable[Document | Rejected], seen: dict[str, str]) -> Iterator[Document | Rejected]:
    """``items`` with every repeated doc id turned into a ``duplicate_id`` rejection (the first
    occurrence is kept); ``seen`` (doc id -> source) carries over between calls."""
    for item in items:
        if isinstance(item, Document) and item.doc_id in seen:
            yield Rejected(item.source, "duplicate_id", f"doc id {item.doc_id!r} already used by "
                           f"{seen[item.doc_id]}", doc_id=item.doc_id, duplicate_of=item.doc_id)
            continue
        if isinstance(item, Document):
            seen[item.doc_id] = item.source
        yield item


def load_corpus(path: str | Path, cfg: LoadConfig | None = None) -> tuple[list[Document], list[Rejected]]:
    """Read every document; duplicate ids keep the first occurrence, the rest are rejected."""
    docs: list[Document] = []
    rejected: list[Rejected] = []
    for item in unique_ids(iter_corpus(path, cfg), {}):
        (rejected if isinstance(item, Rejected) else docs).append(item)
    return docs, rejected

"""Pools of genres the offline generator's rules were not written on, and the targets that need no human benchmark.

    # manual pages of this machine (no titles, option lists, prose; 1,500 passages of about 120 words)
    python benchmarks/unseen_pools.py manpages /tmp/man.jsonl.gz
    # the long descriptions (READMEs) of the installed Python packages (product documentation)
    python benchmarks/unseen_pools.py readmes /tmp/pkg.jsonl.gz
    # the paragraphs of HTML books found on this machine (tutorials in the second person, e.g. a toolchain's books)
    python benchmarks/unseen_pools.py books /tmp/books.jsonl.gz --root ~/.rustup/toolchains
    # the GNU Info manuals of this machine (reference prose: coreutils, grep, sed, gnupg, wget, ...)
    python benchmarks/unseen_pools.py info /tmp/info.jsonl.gz
    # synthesize with benchmarks/realism.py synthesize ..., then:
    python benchmarks/unseen_pools.py check mtr-runs/rt-man mtr-runs/rt-pkg

``check`` prints the targets that hold without people's conversations on the same corpus: failed turns, the least
kept conversation, history dependence, pronoun share, BM25 nDCG@5 rewrite / last turn (and the Recall@20s of bm25 /
dense / hybrid, for reading only: the order target needs a human benchmark).
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import random
import re
import shutil
import subprocess
from collections import Counter
from html.parser import HTMLParser
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WORDS = 120         # a passage: paragraphs up to about this many words


def _passages(name: str, paras: list[str], most: int) -> list[dict]:
    out, chunk, n = [], [], 0
    for p in paras:
        chunk.append(p)
        n += len(p.split())
        if n >= WORDS:
            out.append({"doc_id": f"{name}-{len(out)}", "title": "", "text": "\n".join(chunk)})
            chunk, n = [], 0
            if len(out) >= most:
                break
    return out


def manpages(dst: str, n: int = 1500, seed: int = 7) -> int:
    """Up to 3 passages per page of sections 1, 5 and 8 (without the header line and the section headings),
    pages in a seeded random order; the families of generated pages (cloud CLIs, compilers) are left out."""
    files = [f for sec in ("1", "8", "5") for f in sorted(glob.glob(f"/usr/share/man/man{sec}/*.gz"))
             if not os.path.basename(f).startswith(("gcloud", "bq", "gsutil", "perl", "x86_64", "llvm", "git-"))]
    random.Random(seed).shuffle(files)
    if not files or shutil.which("man") is None:
        raise SystemExit("manpages: needs man(1) and pages under /usr/share/man/man{1,5,8}")
    docs: list[dict] = []
    for f in files:
        if len(docs) >= n:
            break
        try:
            out = subprocess.run(["man", "--nh", "--nj", "-P", "cat", "-l", f], capture_output=True, text=True,
                                 env={**os.environ, "MANWIDTH": "2000"}, timeout=60).stdout
        except subprocess.TimeoutExpired:
            continue            # a page man cannot render in a minute is left out
        out = re.sub(r".\x08", "", out)
        if len(out) < 1500:
            continue
        paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", out)][1:]
        paras = [p for p in paras if p and not re.fullmatch(r"[A-Z][A-Z ]+", p)]
        docs += _passages("man-" + os.path.basename(f).split(".")[0], paras, 3)
    return _write(dst, docs[:n])


def readmes(dst: str) -> int:
    """Up to 6 passages of each installed package's long description (code blocks, badges and tables left out)."""
    docs: list[dict] = []
    for f in sorted(glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "*.dist-info", "METADATA"))):
        body = Path(f).read_text(encoding="utf-8", errors="replace").partition("\n\n")[2]
        paras = [p.strip() for p in re.split(r"\n\s*\n", body) if p.strip()]
        paras = [p for p in paras if not p.startswith(("```", "    ", "[![", "<", ".. ", "|")) and len(p.split()) > 3]
        if len(body) >= 1500:
            docs += _passages("pkg-" + Path(f).parent.name.split("-")[0], paras, 6)
    return _write(dst, docs)


class _Paragraphs(HTMLParser):
    """The text of a page's paragraphs and list items; code blocks, navigation and scripts left out."""
    SKIP = {"pre", "script", "style", "nav", "head", "title"}

    def __init__(self) -> None:
        super().__init__()
        self.paras: list[str] = []
        self._buf: list[str] | None = None
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self._skip += 1
        elif tag in ("p", "li") and not self._skip:
            self._flush()
            self._buf = []

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in ("p", "li", "ul", "ol"):
            self._flush()

    def handle_data(self, data):
        if self._buf is not None and not self._skip:
            self._buf.append(data)

    def _flush(self) -> None:
        if self._buf:
            text = " ".join("".join(self._buf).split())
            if len(text.split()) > 3:
                self.paras.append(text)
        self._buf = None


def books(dst: str, root: str, n: int = 1500, seed: int = 7) -> int:
    """Up to 3 passages per page of the HTML books under ``root`` (pages in a seeded random order; generated API
    references, search and print pages left out)."""
    files = [f for f in sorted(glob.glob(os.path.join(os.path.expanduser(root), "**", "*.html"), recursive=True))
             if os.path.getsize(f) > 4000 and not re.search(r"/(std|core|alloc|proc_macro|test|error_codes)/|print\.html"
                                                            r"|search|index\.html|toc\.html|404", f)]
    if not files:
        raise SystemExit(f"books: no HTML pages under {root}")
    random.Random(seed).shuffle(files)
    pages: dict[str, list[str]] = {}
    for f in files:
        key = os.path.relpath(f, os.path.expanduser(root)).split("/html/", 1)[-1]
        if key not in pages:            # the same book in another toolchain is read once
            page = _Paragraphs()
            page.feed(Path(f).read_text(encoding="utf-8", errors="replace"))
            pages[key] = page.paras
    common = Counter(p for paras in pages.values() for p in set(paras))
    docs: list[dict] = []
    for key, paras in pages.items():
        if len(docs) >= n:
            break
        paras = [p for p in paras if common[p] <= 3]        # a page's furniture (help, footers) is on every page
        docs += _passages("book-" + re.sub(r"[^A-Za-z0-9]+", "-", key.removesuffix(".html")), paras, 3)
    return _write(dst, docs[:n])


def info(dst: str, root: str = "/usr/share/info", n: int = 1500, seed: int = 7) -> int:
    """Up to 3 passages per node of the GNU Info manuals under ``root`` (nodes in a seeded random order): the
    prose paragraphs, their lines joined; menus, headings, examples (indented 5 or more) and tables left out."""
    files = sorted(glob.glob(os.path.join(root, "*.info*.gz")))
    if not files:
        raise SystemExit(f"info: no Info manuals under {root}")
    nodes: list[tuple[str, list[str]]] = []
    for f in files:
        text = gzip.open(f, "rt", encoding="utf-8", errors="replace").read()
        for node in text.split("\x1f")[1:]:
            head, _, body = node.lstrip("\n").partition("\n")
            m = re.search(r"Node: ([^,]+)", head)
            if m is None or "Tag Table" in head:
                continue
            paras = []
            for block in re.split(r"\n\s*\n", body):
                lines = [x for x in block.split("\n") if x.strip()]
                if not lines or any(x.startswith(("     ", "*", "File:")) for x in lines) \
                        or re.fullmatch(r"[=*.-]+", lines[-1].strip()):
                    continue        # an example, a menu, a node line or a heading
                para = " ".join(" ".join(lines).split())
                if len(para.split()) > 8:
                    paras.append(para)
            name = os.path.basename(f).split(".")[0] + "-" + m.group(1)
            nodes.append((re.sub(r"[^A-Za-z0-9]+", "-", name), paras))
    random.Random(seed).shuffle(nodes)
    docs: list[dict] = []
    for name, paras in nodes:
        if len(docs) >= n:
            break
        docs += _passages("info-" + name, paras, 3)
    return _write(dst, docs[:n])


def _write(dst: str, docs: list[dict]) -> int:
    with gzip.open(dst, "wt", encoding="utf-8") as g:
        for d in docs:
            g.write(json.dumps(d) + "\n")
    return len(docs)


def check(runs: list[str], work: str, emb: str | None) -> list[dict]:
    from realism_targets import run_figures
    rows = []
    for run in runs:
        x = {"run": run, **run_figures(run, work, emb)}
        rows.append(x)
        print(f"{run}: failed {x['failed']:.1%}, least kept {x['min_kept']:.0%}, history-dependent "
              f"{x['history_dependent']:.0%}, pronouns {x['pronoun']:.0%}, BM25 rewrite / last {x['bm25_ratio']:.2f}, "
              f"R@20 bm25 / dense / hybrid {x['bm25_r20']:.2f} / {x['dense_r20']:.2f} / {x['hybrid_r20']:.2f}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("manpages").add_argument("out")
    sub.add_parser("readmes").add_argument("out")
    b = sub.add_parser("books")
    b.add_argument("out")
    b.add_argument("--root", required=True)
    i = sub.add_parser("info")
    i.add_argument("out")
    i.add_argument("--root", default="/usr/share/info")
    c = sub.add_parser("check")
    c.add_argument("runs", nargs="+")
    c.add_argument("--work", default="mtr-runs/unseen-work")
    c.add_argument("--embed-cache-dir", default=None)
    a = ap.parse_args(argv)
    if a.cmd == "manpages":
        print(manpages(a.out), "passages")
    elif a.cmd == "readmes":
        print(readmes(a.out), "passages")
    elif a.cmd == "books":
        print(books(a.out, a.root), "passages")
    elif a.cmd == "info":
        print(info(a.out, a.root), "passages")
    else:
        sys.path.append(str(Path(__file__).resolve().parent))
        check(a.runs, a.work, a.embed_cache_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Helpers the reliability tests share."""
from __future__ import annotations

import sqlite3
from pathlib import Path


def sqlite_text(path: Path) -> str:
    """Every value of every table of the SQLite database ``path`` (read-only), one per line, bytes decoded: what a
    search for a leaked secret must read besides the raw file (values may be stored compressed or split)."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        parts = []
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in con.execute(f'SELECT * FROM "{table}"'):
                parts += [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in row]
        return "\n".join(parts)
    finally:
        con.close()

"""Helpers of the self-contained HTML reports (evaluation, audit, abstention): page head with
inline CSS, escaped tables, PNGs embedded as base64 data URIs, and the page writer.

Each report keeps its own CSS and cell formatting; only the mechanics live here.
"""
from __future__ import annotations

import base64
from html import escape
from pathlib import Path
from typing import Any, Callable, Sequence

Cell = Callable[[int, Any], str]
"""``cell(column_index, value) -> "<td ...>...</td>"``."""


def png_data_uri(path: str | Path) -> str:
    """A ``data:image/png;base64,...`` URI of the PNG at ``path`` (embedded, no external file)."""
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def page_start(title: str, css: str) -> str:
    """``<!DOCTYPE html>`` up to and including ``<body>``: charset, escaped title, inline CSS."""
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
            f"<style>{css}</style></head><body>")


def text_cell(_: int, value: Any) -> str:
    """The default cell: ``<td>`` with the escaped ``str(value)``."""
    return f"<td>{escape(str(value))}</td>"


def html_table(headers: Sequence[Any], rows: Sequence[Sequence[Any]], cell: Cell = text_cell) -> str:
    """An HTML table: escaped ``<th>`` headers, one ``<tr>`` per row, cells made by ``cell``."""
    head = "".join(f"<th>{escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def write_page(path: str | Path, parts: Sequence[str]) -> Path:
    """Write the page ``parts`` (joined by newlines, UTF-8) to ``path``; parent folders are created."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts), encoding="utf-8")
    return out


__all__ = ["Cell", "escape", "html_table", "page_start", "png_data_uri", "text_cell", "write_page"]

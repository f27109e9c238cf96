"""Cleaning and curation of loaded documents: boilerplate cut, minimum length, language.

The boilerplate cut follows the reference: the text is truncated at the first blank line
followed by one of the configured headings ("See also", "References", ...), checked in
order; markdown (``## References``) and wiki (``== References ==``) heading styles count.
"""
from __future__ import annotations

import re
from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field

from storage.records import Document, Rejected

DEFAULT_CUT_HEADINGS = ["See also", "References", "External links", "Notes and references", "Notes",
                        "Further reading"]


class CleanConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cut_headings: list[str] = Field(default_factory=lambda: list(DEFAULT_CUT_HEADINGS),
                                    description="truncate at a blank line followed by one of these headings")
    min_chars: int = Field(1, ge=0, description="documents shorter than this after cleaning are rejected")
    languages: list[str] | None = Field(None, description="ISO 639-1 codes to keep (py3langid); None keeps all")


def _heading_pattern(heading: str) -> re.Pattern:
    h = re.escape(heading)
    return re.compile(rf"\n[ \t]*\n[ \t]*(?:#{{1,6}}[ \t]*|=+[ \t]*)?{h}[ \t]*=*[ \t]*:?[ \t]*(?:\n|$)")


def cut_boilerplate(text: str, headings: list[str]) -> str:
    """Truncate at the first blank line followed by a boilerplate heading (checked in order)."""
    for heading in headings:
        m = _heading_pattern(heading).search(text)
        if m:
            return text[: m.start()].rstrip()
    return text


def normalise(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u00a0", " ")
    text = re.sub(r"[ \t]+\n", "\n", text)
    return text.strip()


def detect_language(text: str) -> str:
    import py3langid   # costly: py3langid (its model loads on import)
    lang, _ = py3langid.classify(text[:2000])
    return lang


def clean_documents(docs: list[Document], cfg: CleanConfig | None = None) -> tuple[list[Document], list[Rejected]]:
    """Return (kept documents with cleaned text, rejected with reasons)."""
    cfg = cfg or CleanConfig()
    kept: list[Document] = []
    rejected: list[Rejected] = []
    for doc in docs:
        text = cut_boilerplate(normalise(doc.text), cfg.cut_headings)
        if len(text) < max(cfg.min_chars, 1):
            reason = "empty" if not text else "too_short"
            rejected.append(Rejected(doc.source, reason, f"{len(text)} characters after cleaning, "
                                     f"below clean.min_chars={cfg.min_chars}", stage="clean", doc_id=doc.doc_id))
            continue
        if cfg.languages:
            lang = detect_language(text)
            if lang not in cfg.languages:
                rejected.append(Rejected(doc.source, "language", f"detected language {lang!r} not in "
                                         f"clean.languages={cfg.languages}", stage="clean", doc_id=doc.doc_id))
                continue
        kept.append(replace(doc, text=text))
    return kept, rejected

"""Conversational query builders: turn a conversation into one retrieval query.

The mode is always an explicit option, never inferred from a dataset name:

* ``last_turn``: the current (last) user turn.
* ``all_user_turns``: every user turn so far, oldest first, joined by ``sep`` (``"\\n"``),
  which reproduces MTRAG's "questions" queries exactly.
* ``full_history``: user and assistant turns, most recent last, joined by ``sep``
  (optionally ``role_labels`` as ``"user: ..."`` / ``"assistant: ..."``).
* ``rewrite``: a given standalone rewrite; else the configured LLM rewrite hook
  (``rewriter(turns) -> str``); else :class:`QueryBuildError`.

A conversation is a list of turns ``{"role": "user" | "assistant" | "agent", "text": ...}``
(``"agent"``, MTRAG's name, is read as ``"assistant"``; ``"content"`` is accepted for
``"text"``). The current question is the **last user turn**; turns after it (e.g. the
reference answer) are never used, so an answer cannot leak into its own query. Texts are
stripped of surrounding whitespace.

**Left truncation** (``all_user_turns`` and ``full_history``): with a budget the text is cut
from the left (oldest turns go first, then the start of the oldest kept turn), so the
current question, which comes last, always survives. Budgets:

* ``max_tokens`` with ``tokenizer`` = a Hugging Face tokenizer (the encoder's; see
  :meth:`QueryBuilder.for_encoder`, which sets ``max_tokens`` to the encoder's
  ``max_seq_length`` minus its special tokens): the kept text re-tokenises to at most
  ``max_tokens`` tokens and starts at a word boundary;
* ``max_tokens`` without a Hugging Face tokenizer: word tokens of the BM25 tokenizer's
  pattern (``[^\\W_]+`` by default, before stopword removal);
* ``max_chars``: characters (the cut moves forward to the next word boundary).

If the current question alone exceeds the budget, it is itself cut from the left like
everything else (the kept text always fits the budget).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from common.text import TOKEN_PATTERN
from embedding.encoder import max_seq_length, tokenizer

MODES = ("last_turn", "all_user_turns", "full_history", "rewrite")
_ROLES = {"user": "user", "assistant": "assistant", "agent": "assistant"}

Turn = Mapping[str, Any]
Rewriter = Callable[[list[dict]], str]


class QueryBuildError(ValueError):
    """A query cannot be built (bad mode, bad conversation, rewrite not available)."""


def normalize_turns(turns: Sequence[Turn]) -> list[dict]:
    """``[{"role": "user"|"assistant", "text": str}]`` up to and including the last user turn."""
    if isinstance(turns, (str, bytes)) or not isinstance(turns, Sequence):
        raise QueryBuildError(f"a conversation must be a list of turns, got {type(turns).__name__}")
    out: list[dict] = []
    for i, t in enumerate(turns):
        if not isinstance(t, Mapping):
            raise QueryBuildError(f"turn {i} is not a mapping: {t!r:.60}")
        role = _ROLES.get(str(t.get("role", "")).lower())
        if role is None:
            raise QueryBuildError(f"turn {i}: unknown role {t.get('role')!r} (use user, assistant or agent)")
        text = t.get("text", t.get("content"))
        if not isinstance(text, str):
            raise QueryBuildError(f"turn {i}: text must be a string, got {type(text).__name__}")
        out.append({"role": role, "text": text.strip()})
    last_user = max((i for i, t in enumerate(out) if t["role"] == "user"), default=None)
    if last_user is None:
        raise QueryBuildError("the conversation has no user turn")
    return out[:last_user + 1]


def _is_hf_tokenizer(tok: Any) -> bool:
    return hasattr(tok, "num_special_tokens_to_add") and callable(tok)


def _word_start(text: str, pos: int) -> int:
    """Smallest index >= pos that starts a word (pos itself when it does), else pos."""
    if pos <= 0 or pos >= len(text) or text[pos - 1].isspace():
        return pos
    m = re.compile(r"\s+").search(text, pos)
    return m.end() if m and m.end() < len(text) else pos


def truncate_left(text: str, max_tokens: int | None = None, tokenizer: Any = None,
                  max_chars: int | None = None) -> str:
    """Cut ``text`` from the left to fit the budget(s) (see module docstring)."""
    if max_chars is not None:
        if max_chars < 1:
            raise QueryBuildError(f"max_chars must be >= 1, got {max_chars}")
        if len(text) > max_chars:
            cut = len(text) - max_chars
            text = text[_word_start(text, cut):]
    if max_tokens is not None:
        if max_tokens < 1:
            raise QueryBuildError(f"max_tokens must be >= 1, got {max_tokens}")
        if _is_hf_tokenizer(tokenizer):
            text = _truncate_hf(text, max_tokens, tokenizer)
        else:
            pattern = getattr(tokenizer, "pattern", None) or TOKEN_PATTERN
            spans = [m.start() for m in re.finditer(pattern, text)]
            if len(spans) > max_tokens:
                text = text[spans[len(spans) - max_tokens]:]
    return text


def _n_hf(tokenizer: Any, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def _truncate_hf(text: str, max_tokens: int, tokenizer: Any) -> str:
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = enc["offset_mapping"]
    n = len(offsets)
    if n <= max_tokens:
        return text
    i = n - max_tokens
    while i < n:
        start = offsets[i][0]
        # move to a token that starts a word (a gap before it), so no '##' fragment leads
        if start > 0 and not text[start - 1].isspace() and offsets[i - 1][1] == start:
            i += 1
            continue
        cand = text[start:]
        if _n_hf(tokenizer, cand) <= max_tokens:
            return cand
        i += 1
    # no word boundary fits: cut inside the last word at token granularity
    for j in range(n - max_tokens, n):
        cand = text[offsets[j][0]:]
        if _n_hf(tokenizer, cand) <= max_tokens:
            return cand
    return ""  # pragma: no cover - a single token always fits a budget >= 1


@dataclass
class QueryBuilder:
    """Build one query string per conversation with an explicit ``mode``.

    Args:
        mode: one of :data:`MODES`.
        sep: separator between turns.
        role_labels: ``full_history`` only: prefix turns with ``"user: "`` / ``"assistant: "``.
        max_tokens, tokenizer, max_chars: left-truncation budget (see module docstring).
        rewriter: LLM rewrite hook for ``rewrite`` mode, ``rewriter(turns) -> str``; only used
            for conversations with no given rewrite.
    """

    mode: str
    sep: str = "\n"
    role_labels: bool = False
    max_tokens: int | None = None
    tokenizer: Any = None
    max_chars: int | None = None
    rewriter: Rewriter | None = None
    rewrite_sources: dict[str, int] = field(default_factory=lambda: {"given": 0, "llm": 0})

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise QueryBuildError(f"unknown query mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if self.rewriter is not None and not callable(self.rewriter):
            raise QueryBuildError("rewriter must be callable: rewriter(turns) -> str")

    @classmethod
    def for_encoder(cls, mode: str, model: str | None = None, **kwargs) -> "QueryBuilder":
        """A builder whose budget is the dense encoder's input limit (its own tokenizer)."""
        tok = tokenizer(model)
        budget = max_seq_length(model) - tok.num_special_tokens_to_add(pair=False)
        return cls(mode=mode, tokenizer=tok, max_tokens=budget, **kwargs)

    def describe(self) -> dict:
        d = {"query_mode": self.mode, "sep": self.sep, "role_labels": self.role_labels,
             "max_tokens": self.max_tokens, "max_chars": self.max_chars,
             "token_budget_unit": (None if self.max_tokens is None else
                                   "encoder-tokenizer" if _is_hf_tokenizer(self.tokenizer) else "bm25-words")}
        if self.mode == "rewrite":
            d["rewrite_sources"] = dict(self.rewrite_sources)
            d["rewriter"] = getattr(self.rewriter, "__name__", type(self.rewriter).__name__) if self.rewriter else None
        return d

    def _truncate(self, text: str) -> str:
        if self.max_tokens is None and self.max_chars is None:
            return text
        return truncate_left(text, self.max_tokens, self.tokenizer, self.max_chars)

    def build(self, turns: Sequence[Turn], rewrite: str | None = None) -> str:
        """The query for one conversation (``rewrite`` = its given rewrite, if any)."""
        ts = normalize_turns(turns)
        if self.mode == "last_turn":
            return ts[-1]["text"]
        if self.mode == "all_user_turns":
            return self._truncate(self.sep.join(t["text"] for t in ts if t["role"] == "user"))
        if self.mode == "full_history":
            parts = [f"{t['role']}: {t['text']}" if self.role_labels else t["text"] for t in ts]
            return self._truncate(self.sep.join(parts))
        # rewrite
        if rewrite is not None:
            if not isinstance(rewrite, str):
                raise QueryBuildError(f"a rewrite must be a string, got {type(rewrite).__name__}")
            self.rewrite_sources["given"] += 1
            return rewrite.strip()
        if self.rewriter is None:
            raise QueryBuildError("query mode 'rewrite' needs a given rewrite (rewrites=...) or an LLM "
                                  "rewrite hook (rewriter=callable(turns) -> str); neither was provided")
        out = self.rewriter([dict(t) for t in ts])
        if not isinstance(out, str):
            raise QueryBuildError(f"the rewriter returned {type(out).__name__}, expected str")
        self.rewrite_sources["llm"] += 1
        return out.strip()

    def build_all(self, conversations: Mapping[str, Sequence[Turn]],
                  rewrites: Mapping[str, str] | None = None) -> dict[str, str]:
        """``{qid: query}`` for ``{qid: turns}``; ``rewrites`` = ``{qid: rewrite}`` for ``rewrite`` mode."""
        rewrites = rewrites or {}
        out: dict[str, str] = {}
        for qid, turns in conversations.items():
            try:
                out[qid] = self.build(turns, rewrite=rewrites.get(qid))
            except QueryBuildError as exc:
                raise QueryBuildError(f"{qid}: {exc}") from exc
        return out


def build_queries(conversations: Mapping[str, Sequence[Turn]], mode: str,
                  rewrites: Mapping[str, str] | None = None, **kwargs) -> dict[str, str]:
    """Shortcut: ``QueryBuilder(mode, **kwargs).build_all(conversations, rewrites)``."""
    return QueryBuilder(mode=mode, **kwargs).build_all(conversations, rewrites)

"""Text measures of the quality gate (:mod:`agents.synth.gate`): tokens and stems, interrogative forms,
placeholders, the script and language of a text and of a corpus. Plain functions, no model (py3langid is a
small table; MiniLM is loaded by the gate itself, lazily)."""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

from agents.synth.text import sentences, stopwords

_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_YESNO = re.compile(r"^\s*(?:yes|no)\b[.,!:;]?\s*", re.IGNORECASE)

# the first words of a question (wh-words, auxiliaries and the requests people type into a search box)
WH = frozenset("what who whom whose which when where why how whats whos wheres whens hows whys".split())
AUX = frozenset("""is are was were am do does did can could will would shall should may might must has have had
isnt arent wasnt werent dont doesnt didnt cant couldnt wont wouldnt shouldnt hasnt havent hadnt""".split())
REQUESTS = ("tell me", "explain", "describe", "list", "name", "give me", "show me", "define", "compare")
LEADS = frozenset("and but so or then also ok okay well hey hi".split())      # "and when was it built?"
# "What about the late fee?" keeps the intent of the previous question, not its own wh-word
SHIFTS = re.compile(r"^\s*(?:and\s+)?(?:what|how)\s+about\b|^\s*and\b", re.IGNORECASE)

PLACEHOLDERS = frozenset("""n/a na none null nil undefined unknown tbd todo fixme placeholder question answer
text string lorem ipsum xxx yyy foo bar example sample dummy test ... … - -- ? ! empty no answer not available
not applicable i don't know i dont know idk unanswerable""".split()) | {
    "no answer", "not available", "not applicable", "i don't know", "i dont know", "lorem ipsum", "not sure",
    "your question", "the question", "the answer", "question here", "answer here", "insert question",
    "insert answer"}
_TEMPLATE = re.compile(r"<[^<>]{1,40}>|\{[^{}]{0,40}\}|\[[^\[\]]{0,40}\]|\$\{|\{\{")


def tokens(text: str) -> list[str]:
    """Lower-cased word and number tokens (apostrophes kept inside a word)."""
    return [t.lower().replace("’", "'") for t in _TOKEN.findall(text or "")]


def stem(word: str) -> str:
    """A crude stem: a plural "s" dropped, then the first five letters ("originated" ~ "originate", "walls" ~
    "wall", "Germany" ~ "German"); numbers as written. Enough to compare a question, its answer and a passage of
    one language."""
    w = word.lower().replace("'s", "").replace("'", "")
    if w.isdigit():
        return w
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    return w[:5]


# words of asking rather than of content: what a standalone form may add or drop freely
ASKING = frozenset("""does did do doing done has have had tell know kind kinds type types sort sorts example examples
compare compared comparison differ different difference differences similar versus vs better worse best worst more
less most least mean means meant happen happened happens called name named one ones thing things way ways else
please like really exactly give show explain describe list""".split()) | WH | AUX


def _is_content(t: str, sw: frozenset[str]) -> bool:
    return t.isdigit() or (t not in sw and len(t) > 2)


def content_stems(text: str) -> set[str]:
    """Stems of the content words and numbers of a text (stopwords and 1-2 letter words left out)."""
    sw = stopwords()
    return {stem(t) for t in tokens(text) if _is_content(t, sw)}


def content_list(text: str) -> list[str]:
    sw = stopwords()
    return [stem(t) for t in tokens(text) if _is_content(t, sw)]


def topic_stems(text: str) -> set[str]:
    """:func:`content_stems` without the words of asking (:data:`ASKING`): what a question is about."""
    sw = stopwords() | ASKING
    return {stem(t) for t in tokens(text) if _is_content(t.replace("'", ""), sw)}


def strip_yesno(answer: str) -> tuple[bool, str]:
    """(whether the answer opens with yes/no, the rest)."""
    m = _YESNO.match(answer or "")
    return (True, answer[m.end():]) if m else (False, answer or "")


def letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text or "")


def placeholder(text: str) -> str | None:
    """Why ``text`` is a placeholder rather than content, or None: no letters at all (``...``, ``?``,
    ``5276903, 4881744,``), a placeholder word (``N/A``, ``TODO``, ``lorem ipsum``) or a template slot
    (``<question>``, ``{answer}``, ``[...]``)."""
    s = " ".join((text or "").split())
    if not s:
        return "empty"
    if letters(s) == 0:
        return f"no words, only {'punctuation' if not any(c.isdigit() for c in s) else 'numbers and punctuation'}"
    low = s.lower().strip(" .!?:;,\"'()")
    if low in PLACEHOLDERS:
        return f"placeholder text {s[:40]!r}"
    if _TEMPLATE.search(s):
        return f"template slot {_TEMPLATE.search(s).group(0)[:40]!r}"
    if re.search(r"(?:\.\s*){3,}$|…$", s) and len(tokens(s)) <= 3:
        return "trails off (ellipsis)"
    return None


def interrogative(question: str) -> bool:
    """A question mark at the end, or a question's first word (wh-word, auxiliary, or a request such as "tell
    me", "explain") after an optional lead ("and", "so")."""
    s = (question or "").strip()
    if s.rstrip("\"'”’)»").endswith(("?", "？", "؟")):
        return True
    toks = tokens(s)
    while toks and toks[0] in LEADS:
        toks = toks[1:]
    if not toks:
        return False
    head = toks[0].replace("'", "")
    if head in WH or head in AUX:
        return True
    low = " ".join(toks[:3])
    return any(low.startswith(r) for r in REQUESTS)


def wh_word(question: str) -> str | None:
    """The question's wh-word among its first three words ("how much" and "how many" as one), or None."""
    toks = [t.replace("'", "") for t in tokens(question)][:4]
    for i, t in enumerate(toks[:3]):
        base = {"whats": "what", "whos": "who", "wheres": "where", "whens": "when", "hows": "how",
                "whys": "why"}.get(t, t)
        if base in WH:
            if base == "how" and i + 1 < len(toks) and toks[i + 1] in ("much", "many", "long", "old", "far", "big"):
                return f"how {toks[i + 1]}"
            return base
    return None


_COMPARE = re.compile(r"\b(?:compare[sd]?|comparison|better|worse|differ\w*|versus|vs|similar\w*|unlike)\b",
                      re.IGNORECASE)


def intent(question: str) -> str | None:
    """What a question asks for: ``compare`` (better, different, compare ...), else its wh-word's first word
    (``how`` for "how much"), else None."""
    if _COMPARE.search(question or ""):
        return "compare"
    wh = wh_word(question)
    return wh.split()[0] if wh else None


def is_shift(question: str) -> bool:
    """A follow-up that keeps the previous question's intent ("What about the late fee?", "And the risks?")."""
    return SHIFTS.search(question or "") is not None


# -- script and language ---------------------------------------------------------------------
def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return None
    first = name.split()[0]
    if first in ("CJK", "HIRAGANA", "KATAKANA", "HANGUL"):
        return "CJK"
    return first


def script_of(text: str) -> str | None:
    """The script most of the text's letters are written in (LATIN, CYRILLIC, GREEK, ARABIC, CJK ...), or None
    for no letters."""
    c = Counter(s for s in map(_script, text or "") if s)
    return c.most_common(1)[0][0] if c else None


def script_share(text: str, script: str) -> float:
    """Share of the text's letters in ``script`` (1.0 for no letters)."""
    c = Counter(s for s in map(_script, text or "") if s)
    n = sum(c.values())
    return c[script] / n if n else 1.0


@lru_cache(maxsize=1)
def _langid():
    import py3langid          # costly: py3langid (a table of byte n-grams, loaded on first use)
    return py3langid


def language_scores(text: str) -> dict[str, float]:
    """py3langid's log-probability of each language for ``text``."""
    return dict(_langid().rank(text))


def language_of(text: str) -> str:
    return _langid().classify(text)[0]


def language_gap(text: str, language: str) -> tuple[str, float]:
    """(the language py3langid finds most likely for ``text``, how far below it ``language`` scores, in nats
    per token of the text): 0 when ``language`` is the most likely one."""
    scores = language_scores(text)
    top = max(scores, key=scores.get)
    n = max(1, len(tokens(text)))
    return top, (scores[top] - scores.get(language, min(scores.values()))) / n


CORPUS_SAMPLE = 200         # passages read to find a corpus's language and script


def corpus_language(texts: list[str]) -> tuple[str, str | None]:
    """(language, script) of a corpus: the majority over a sample of its passages (every k-th, up to
    ``CORPUS_SAMPLE``; each passage's first 1,000 characters)."""
    step = max(1, -(-len(texts) // CORPUS_SAMPLE))
    sample = [t[:1000] for t in texts[::step] if t and letters(t[:1000]) >= 20]
    if not sample:
        return "en", "LATIN"
    langs = Counter(language_of(t) for t in sample)
    scripts = Counter(script_of(t) for t in sample)
    return langs.most_common(1)[0][0], scripts.most_common(1)[0][0]


def passage_sentences(text: str) -> list[str]:
    return sentences(text) or ([text.strip()] if text and text.strip() else [])

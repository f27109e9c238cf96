"""Fault scripts for the quality gate (:mod:`agents.synth.gate`): a role-scripted fake server whose questioner or
answerer misbehaves on some passages while its verifier says yes to everything and its uniqueness judge says no.

:class:`FaultyRoleServer` answers like :class:`~agents.testing.fake_roles.RoleScriptedServer` except on a
*poisoned* passage (one whose text contains ``poisoned``; every passage when it is None): the questioner picks
that passage whenever it is shown, and the fault decides what the questioner or the answerer writes about it:

=============  ==========  ====================================================================  ===================
fault          role        writes                                                                the gate's check
=============  ==========  ====================================================================  ===================
``yes_man``    both        the question ``...`` and the answer ``5276903, 4881744,`` (the         question_form,
                           well-formed JSON of junk a small model returns)                        answer_present
``echo``       answerer    the whole passage as the answer                                       answer_not_passage
``off_topic``  answerer    an answer about something else (bananas)                              answer_grounded,
                                                                                                 answer_fit
``na``         answerer    ``N/A``                                                               answer_present
``foreign``    questioner  the question in French                                                question_language
``giveaway``   questioner  a question that states the answer's first sentence                   no_giveaway
``copy``       questioner  a sentence of the passage with a question mark                       not_copy
=============  ==========  ====================================================================  ===================

The verifier accepts every candidate (``verifier_accepts``), so without the gate each poisoned candidate would be
stored as an ``ok`` turn.
"""
from __future__ import annotations

import json
import re
from typing import Any

from agents.synth.answerer import Answerer
from agents.synth.questioner import Questioner
from agents.testing.fake_roles import RoleScriptedServer, _sents, role_of, shown_passages

JUNK_QUESTION = "..."
JUNK_ANSWER = "5276903, 4881744,"
OFF_TOPIC_ANSWER = ("Bananas are a rich source of potassium and grow best in warm, humid tropical climates, where "
                    "plantations harvest them all year round.")

# fault -> (the checks each of its candidates fails (others may fail too), the role that misbehaves)
FAULTS: dict[str, tuple[tuple[str, ...], str]] = {
    "yes_man": (("question_form", "answer_present"), "both"),
    "echo": (("answer_not_passage",), "answerer"),
    "off_topic": (("answer_grounded", "answer_fit"), "answerer"),
    "na": (("answer_present",), "answerer"),
    "foreign": (("question_language",), "questioner"),
    "giveaway": (("no_giveaway",), "questioner"),
    "copy": (("not_copy",), "questioner"),
}


def _words(text: str, n: int) -> str:
    return " ".join(w.strip(".,;:()\"'") for w in text.split()[:n])


def _question(fault: str, text: str) -> str:
    sents = _sents(text)
    if fault == "yes_man":
        return JUNK_QUESTION
    if fault == "foreign":
        return "Que peut-on dire de ce sujet, et pourquoi est-il si important pour les gens aujourd'hui ?"
    if fault == "giveaway":     # states the answer's first sentence (the answerer answers with sentences 1-2)
        second = sents[1] if len(sents) > 1 else sents[0]
        return f"Now that we know that {sents[0].rstrip('.')}, what is said about {_words(second, 6)}?"
    if fault == "copy":         # another sentence than the answer's first one, with a question mark
        s = sents[2] if len(sents) > 2 else sents[-1]
        return re.sub(r"[.!]+$", "", s) + "?"
    return f"What is said about {_words(text, 6)}?"


class FaultyRoleServer(RoleScriptedServer):
    """See module docstring: ``FaultyRoleServer("echo", poisoned="Berlin Wall")``."""

    verifier_accepts = True
    uniqueness_answers = False

    def __init__(self, fault: str, poisoned: str | None = None, **kw: Any) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
        super().__init__(**kw)
        self.fault, self.poisoned = fault, poisoned
        self.faulty_replies = 0         # replies written by the fault

    def is_poisoned(self, text: str) -> bool:
        return self.poisoned is None or self.poisoned in text

    def _auto_content(self, body: dict[str, Any], prompt_text: str) -> str:
        msgs = body.get("messages", [])
        user = next((m.get("content", "") for m in reversed(msgs) if m.get("role") == "user"), "")
        role = role_of(body, prompt_text)
        side = FAULTS[self.fault][1]
        if role == Questioner.name and "NONE of the passages" not in user:
            bad = [p for p in shown_passages(user) if self.is_poisoned(p[1])]
            if bad:
                num, text = bad[0]
                q = _question(self.fault if side in ("questioner", "both") else "", text)
                self.faulty_replies += side in ("questioner", "both")
                return json.dumps({"doc_index": num, "question": q, "standalone_question": q})
        if role == Answerer.name and side in ("answerer", "both"):
            shown = shown_passages(user)
            if shown and self.is_poisoned(shown[0][1]):
                self.faulty_replies += 1
                text = shown[0][1]
                answer = {"yes_man": JUNK_ANSWER, "echo": text, "off_topic": OFF_TOPIC_ANSWER,
                          "na": "N/A"}[self.fault]
                return json.dumps({"answer": answer})
        return super()._auto_content(body, prompt_text)

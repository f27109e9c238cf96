"""What a synthesis run will ask its LLM, before it runs: representative inputs of every call, for the dry run
(:func:`agents.dry_run`; ``mtr synthesize --dry-run``)."""
from __future__ import annotations

import random
from typing import Any

from agents.synth import answerer, humanizer, questioner, uniqueness, verifier
from agents.synth.config import SynthConfig


def planned_workload(plans: list, corpus: dict[str, dict], cfg: SynthConfig) -> list[tuple[Any, list]]:
    """Representative inputs of every LLM call a synthesis run will make (first attempts),
    for :func:`agents.dry_run`: per turn one questioner, answerer, verifier and humanizer
    call (turn >= 2) and ``uniqueness_k`` uniqueness judgements. The history grows with
    the turns (answers estimated from the gold passage), so later turns cost more."""
    q, a, v, u, h = (questioner.Questioner(), answerer.Answerer(), verifier.Verifier(), uniqueness.UniquenessJudge(),
                     humanizer.Humanizer())
    work: dict[str, list] = {"q": [], "a": [], "v": [], "u": [], "h": []}
    for p in plans:
        rng = random.Random(f"{p.seed}|{p.conv_id}|dry")
        history: list[list[str]] = []
        prev: list[str] = []
        for t in range(1, p.n_turns + 1):
            pool = list(p.switch_pool) if p.switch_turn and t >= p.switch_turn else list(p.pool)
            shown = [{"doc_id": c, "title": corpus[c].get("title") or "", "text": corpus[c]["text"]}
                     for c in rng.sample(pool, min(cfg.shown_passages, len(pool)))]
            gold = shown[0]
            question = "What is described in this passage about the main subject?"
            answer = gold["text"][:1200]
            work["q"].append({"passages": shown, "history": history, "previous_questions": prev})
            work["a"].append({"history": history, "question": question, "passage": gold})
            work["v"].append({"question": question, "standalone_question": question, "answer": answer,
                              "passage": gold, "previous_questions": prev})
            others = shown[1:] or shown
            for i in range(cfg.uniqueness_k):          # top-k hits, judged one by one
                work["u"].append({"question": question, "answer": answer, "candidate": others[i % len(others)]})
            if t >= 2:
                work["h"].append({"question": question, "history": history})
            history = history + [["user", question], ["assistant", answer]]
            prev = prev + [question]
    return [(q, work["q"]), (a, work["a"]), (v, work["v"]), (u, work["u"]), (h, work["h"])]

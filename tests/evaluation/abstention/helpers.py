"""Shared helpers of the abstention tests: the MTRAG fixture location, small sub-benchmarks,
and a fake OpenAI-compatible server whose replies depend on the requested model (judges,
answer model, expander)."""
from __future__ import annotations

import json
import math
import re
import threading
from pathlib import Path

from agents.testing.fake_server import FakeLLMServer, Reply
from storage.benchmark import Benchmark

MTRAG = Path(__file__).resolve().parents[2] / "data" / "mtrag"
LABELS = ("yes", "partial", "no")


def judge_label(model: str, text: str) -> str:
    """The fake judges' deterministic label of a prompt (judge-b is shifted by one)."""
    shift = 1 if model.endswith("b") else 0
    return LABELS[(len(text) + shift) % 3]


def probe_p(text: str) -> float:
    """The fake answer model's P(ANSWERABLE) for a prompt."""
    return 0.1 + 0.8 * ((len(text) % 9) / 8)


def last_question(text: str) -> str:
    m = re.search(r"Last question: (.*)", text)
    return m.group(1).strip() if m else "question"


def request_text(messages: list[dict]) -> str:
    """The text the fake server matches on (``RecordedRequest.text``)."""
    return "\n".join(str(m.get("content", "")) for m in messages)


def prompt_text(raw_prompt_json: str) -> str:
    return request_text(json.loads(raw_prompt_json))


class ModelRoutedServer(FakeLLMServer):
    """Replies by the request's model: ``judge-*`` (JSON verdicts), ``answerer`` (first line +
    logprobs), ``expander`` (JSON expansions); anything else: the automatic reply."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self._local = threading.local()

    def handle(self, body, headers):
        self._local.body = body
        return super().handle(body, headers)

    def _next_reply(self, text: str) -> Reply:
        model = (getattr(self._local, "body", None) or {}).get("model", "")
        if model.startswith("judge-"):
            return Reply.json({"label": judge_label(model, text), "supporting_passages": [1, 2],
                               "reason": f"fake verdict of {model}"})
        if model == "answerer":
            p = probe_p(text)
            first = "ANSWERABLE" if p >= 0.5 else "UNANSWERABLE"
            lp_a, lp_u = math.log(p), math.log(1 - p)
            tok = ("ANSWER", lp_a) if first == "ANSWERABLE" else ("UN", lp_u)
            return Reply.text(f"{first}\nfake answer", logprobs=[
                (tok[0], tok[1], [("ANSWER", lp_a), ("UN", lp_u), ("The", -9.0)]),
                ("ABLE", -0.01, [("ABLE", -0.01)])])
        if model == "expander":
            q = last_question(text)
            return Reply.json({"expansions": [f"{q} answer passage", q, f"{q} details"]})
        return super()._next_reply(text)


def sub_benchmark(bench: Benchmark, n_convs: int, n_others: int = 150) -> Benchmark:
    """The first ``n_convs`` conversations, and a corpus of their qrels passages plus every
    ``len/n_others``-th other passage (sorted ids): small and deterministic."""
    convs = list(dict.fromkeys(t.conv_id for t in bench.turns))[:n_convs]
    turns = [t for t in bench.turns if t.conv_id in convs]
    rel = {d for t in turns for d in t.gold}
    others = sorted(d for d in bench.corpus if d not in rel)
    step = len(others) / n_others
    keep = rel | {others[int(i * step)] for i in range(n_others)}
    return Benchmark(name=f"{bench.name}-sub{n_convs}", format=bench.format,
                     corpus={d: doc for d, doc in bench.corpus.items() if d in keep}, turns=turns)

"""A fake OpenAI-compatible server that answers each synthesis role plausibly.

Built on :class:`agents.testing.fake_server.FakeLLMServer` (real sockets). It picks the role
by the name of the response schema the request asks for (``response_format`` json_schema
``name``, or the title of the schema a text-mode client puts in the prompt: the step's
output model, e.g. ``QuestionOut``); a request without a schema falls back to the system
prompt's wording. It answers from the prompt's own content (its quoted blocks, read back with
:func:`quoted` / :func:`shown_passages`), deterministically (the questioner never repeats one of
the earlier questions the prompt lists), so the whole
LLM path of the synthesis graph (structured outputs, cache, accounting, budgets, resume) can
be tested and benchmarked without an endpoint. Scripted replies (``server.on(...)`` /
``server.script(...)``) still take precedence.
"""
from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from agents.config import EndpointConfig, LLMConfig, RetryConfig
from agents.quoting import unescape_data
from agents.synth.answerer import Answerer
from agents.synth.humanizer import Humanizer
from agents.synth.questioner import Questioner
from agents.synth.uniqueness import UniquenessJudge
from agents.synth.verifier import Verifier
from agents.testing.fake_server import FakeLLMServer, schema_name, serve

# output schema name -> role (the session names the response schema after the step's output model)
ROLE_BY_SCHEMA = {step.output_model.__name__: step.name
                  for step in (Questioner, Answerer, Verifier, UniquenessJudge, Humanizer)}

# fallback for requests without a schema: a phrase of each role's system prompt
ROLE_BY_SYSTEM_PROMPT = {
    "write questions for a conversational search benchmark": Questioner.name,
    "helpful, thorough assistant": Answerer.name,
    "data-quality reviewer": Verifier.name,
    "relevance assessor": UniquenessJudge.name,
    "rewrite questions the way real users type": Humanizer.name,
}


def _sents(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]


_BLOCK = re.compile(r'<passage(?: id="(\d+)")?[^>]*>\n(.*?)\n</passage>', re.S)


def shown_passages(prompt: str) -> list[tuple[int, str]]:
    """The ``(number, text)`` of each quoted passage block of a prompt (:mod:`agents.quoting`),
    numbered from 1 in order when a block has no id."""
    return [(int(pid) if pid else i, unescape_data(text))
            for i, (pid, text) in enumerate(_BLOCK.findall(prompt), start=1)]


def quoted(prompt: str, kind: str, after: str = "") -> list[str]:
    """The texts of the quoted ``<kind ..>`` blocks of a prompt (:func:`agents.quoting.quote_block`), unescaped;
    with ``after``, only the blocks right after that label (e.g. ``"Last user question: "``)."""
    pattern = re.escape(after) + rf"<{kind}(?: [^>]*)?>\n?(.*?)\n?</{kind}>"
    return [unescape_data(t) for t in re.findall(pattern, prompt, re.S)]


def role_of(body: dict[str, Any], prompt_text: str) -> str | None:
    """The synthesis role a request is for (see module docstring), or None."""
    name = schema_name(body, prompt_text)
    if name is not None:
        return ROLE_BY_SCHEMA.get(name)
    msgs = body.get("messages", [])
    system = next((m.get("content", "") for m in msgs if m.get("role") == "system"), "")
    return next((role for phrase, role in ROLE_BY_SYSTEM_PROMPT.items() if phrase in system), None)


class RoleScriptedServer(FakeLLMServer):
    """Per-role automatic answers for questioner, answerer, verifier, uniqueness, humanizer."""

    verifier_accepts = True
    uniqueness_answers = False

    def _auto_content(self, body: dict[str, Any], prompt_text: str) -> str:
        msgs = body.get("messages", [])
        user = next((m.get("content", "") for m in reversed(msgs) if m.get("role") == "user"), "")
        h = int(hashlib.sha256(prompt_text.encode()).hexdigest()[:8], 16)
        role = role_of(body, prompt_text)
        if role == Questioner.name:
            passages = shown_passages(user) or [(1, "this")]     # always one of the shown passages' numbers
            none = "NONE of the passages" in user
            earlier = set(quoted(user, "question"))             # the earlier questions, never asked again

            def ask(text: str) -> str:
                words = " ".join(w.strip(".,;:()\"'") for w in text.split()[:6])
                return f"What will become of {words} in the year 2090?" if none else f"What is said about {words}?"
            start = h % len(passages)
            order = passages[start:] + passages[:start]
            num, q = next(((n, ask(t)) for n, t in order if ask(t) not in earlier), (order[0][0], ask(order[0][1])))
            return json.dumps({"doc_index": 0 if none else num, "question": q, "standalone_question": q})
        if role == Answerer.name:
            shown = shown_passages(user)
            doc = shown[0][1] if shown else user
            return json.dumps({"answer": " ".join(_sents(doc)[:2]) or doc[:200]})
        if role == Verifier.name:
            ok = self.verifier_accepts
            return json.dumps({"reason": "supported" if ok else "not supported by the passage",
                               "answerable": ok, "faithful": ok, "novel": True})
        if role == UniquenessJudge.name:
            return json.dumps({"reason": "scripted", "answers": self.uniqueness_answers})
        if role == Humanizer.name:
            last = (quoted(user, "question", "Last user question: ") or [""])[-1]
            return json.dumps({"text": last.lower().replace("what is said about", "whats up with")})
        return super()._auto_content(body, prompt_text)


def serve_roles(host: str, port: int, **options: Any) -> None:
    """``mtr fake-llm``: :func:`~agents.testing.fake_server.serve` a :class:`RoleScriptedServer` until
    Ctrl-C (``options``: ``latency``, ``json_schema``, ``logprobs``, ``out``). Registered as the entry
    point ``roles`` of the group ``mtr.fake_llm`` (pyproject.toml): the CLI finds it there and never
    imports this package."""
    serve(host, port, server_class=RoleScriptedServer, **options)


def fake_llm_config(server: FakeLLMServer, endpoint_concurrency: int = 8, **kw: Any):
    """An LLM config with one endpoint at ``server`` and millisecond backoffs (tests, benchmarks)."""
    return LLMConfig(endpoints={"fake": EndpointConfig(base_url=server.base_url, model="fake-model", timeout_s=5,
                                                       max_concurrency=endpoint_concurrency)},
                     retry=RetryConfig(backoff_base_s=0.002, backoff_max_s=0.02), **kw)

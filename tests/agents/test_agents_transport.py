"""The HTTP transport under the openai client (``llm.http_client``) and the layer's reading of
the response JSON (``agents.completion.read_completion``: the SDK returns a dict for ``cast_to=dict``)."""
from __future__ import annotations

import asyncio

import pytest

from agents.completion import CallFailed, ChatRequest, read_completion
from agents.errors import LogprobsUnsupported
from agents.session import LLMSession
from agents.testing.fake_server import Reply


def run1(cfg, step, x):
    async def main():
        async with LLMSession(cfg) as llm:
            res = await llm.run(step, x)
            return res, {n: type(c._client).__name__ for n, c in llm.client._clients.items()}
    return asyncio.run(main())


@pytest.mark.parametrize("transport,cls", [("aiohttp", "_InstalledAioHttpClient"), ("httpx", "AsyncHttpxClientWrapper")])
def test_both_transports_send_the_same_request_and_read_the_same_answer(fake_llm, make_config, qa_step,
                                                                         transport, cls):
    fake_llm.script(Reply.json({"answer": "Paris", "confidence": 3}, usage=(11, 4)))
    res, clients = run1(make_config(fake_llm, http_client=transport), qa_step(), "capital of France?")
    assert res.ok and res.output.answer == "Paris" and (res.usage.prompt_tokens, res.usage.completion_tokens) == (11, 4)
    assert clients == {"fake": cls}
    body = fake_llm.requests[-1].body
    assert body["model"] == "fake-model" and body["response_format"]["type"] == "json_schema"
    assert body["messages"][-1]["role"] == "user" and "capital of France?" in body["messages"][-1]["content"]
    assert fake_llm.requests[-1].headers.get("authorization", "").startswith("Bearer ")


def test_url_credentials_keep_the_httpx_transport(fake_llm, make_config, qa_step):
    url = fake_llm.base_url.replace("http://", "http://user:pw@")
    _, clients = run1(make_config(fake_llm, endpoint={"base_url": url}), qa_step(), "q")
    assert clients == {"fake": "AsyncHttpxClientWrapper"}


def _req(**kw) -> ChatRequest:
    return ChatRequest(endpoint="e", model="m", messages=[{"role": "user", "content": "four words in here"}], **kw)


def test_completion_reads_the_chat_completion_json():
    c = read_completion({"model": "m-1", "choices": [{"finish_reason": "length", "message": {
        "role": "assistant", "content": "hello"}}], "usage": {"prompt_tokens": 7, "completion_tokens": 2}}, _req())
    assert (c.content, c.refusal, c.finish_reason, c.model) == ("hello", None, "length", "m-1")
    assert (c.usage.prompt_tokens, c.usage.completion_tokens, c.usage.estimated) == (7, 2, False)
    est = read_completion({"choices": [{"message": {"content": "hello"}}]}, _req())
    assert est.usage.estimated and est.usage.prompt_tokens > 0 and est.model is None


def test_completion_rejects_a_body_that_is_not_a_chat_completion():
    with pytest.raises(CallFailed) as e:
        read_completion("<html>proxy login</html>", _req())
    assert e.value.error_class == "InvalidResponse" and "proxy login" in str(e.value)
    for body in ({}, {"choices": []}, {"choices": ["x"]}, {"choices": None}):
        with pytest.raises(CallFailed) as e:
            read_completion(body, _req())
        assert e.value.error_class == "EmptyResponse"


def test_completion_reads_logprobs_or_says_they_are_missing():
    lp = {"content": [{"token": "hi", "logprob": -0.5, "top_logprobs": [{"token": "hi", "logprob": -0.5},
                                                                        {"token": "yo", "logprob": -1.5}]}]}
    c = read_completion({"choices": [{"message": {"content": "hi"}, "logprobs": lp}]}, _req(logprobs=True))
    assert c.logprobs[0].token == "hi" and c.logprobs[0].logprob == -0.5 and c.logprobs[0].top[1] == ("yo", -1.5)
    with pytest.raises(LogprobsUnsupported):
        read_completion({"choices": [{"message": {"content": "hi"}}]}, _req(logprobs=True))

"""The client-side ceilings of ``benchmarks/synthesis.py``: the chat completions a run sent
(:class:`RecordRequests`) sent again by the bare ``openai`` client (:func:`bare_replay`) and as
plain JSON POSTs without the SDK (:func:`raw_replay`), with the latency fully overlapped.
"""
from __future__ import annotations

import time

from benchmarks.synthesis_profile import process_cpu


class RecordRequests:
    """Records the JSON body of every chat completion the run sends (the layer posts it
    through the SDK's ``AsyncOpenAI.post``)."""

    def __enter__(self) -> list[dict]:
        import openai
        self.orig = openai.AsyncOpenAI.post
        self.seen: list[dict] = []
        seen, orig = self.seen, self.orig

        async def post(client_self, path, *a, **kw):
            if path == "/chat/completions" and kw.get("body") is not None:
                seen.append(dict(kw["body"]))
            return await orig(client_self, path, *a, **kw)
        openai.AsyncOpenAI.post = post
        return self.seen

    def __exit__(self, *exc) -> None:
        import openai
        openai.AsyncOpenAI.post = self.orig


def bare_replay(base_url: str, requests: list[dict], inflight: int, stack: str) -> tuple[float, float]:
    """(seconds, CPU seconds) of the bare ``openai`` client sending ``requests`` with
    ``chat.completions.create`` and ``inflight`` in flight: ``stack`` "sdk" = the SDK's defaults
    (httpx2 transport, asyncio loop: a user's own script), "same" = the layer's transport and
    loop (``llm.http_client``, ``common.aio``): the client-side ceiling of this machine."""
    import asyncio

    import openai

    from agents.transport import transport_kwargs
    from agents.config import LLMConfig
    from common.aio import run as aio_run

    same = stack == "same"

    async def main() -> float:
        kw = transport_kwargs(LLMConfig().http_client, base_url) if same else {}
        client = openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0, **kw)
        sem = asyncio.Semaphore(inflight)

        async def one(body: dict) -> None:
            async with sem:
                await client.chat.completions.create(**body)
        t0 = time.perf_counter()
        await asyncio.gather(*(one(b) for b in requests))
        dt = time.perf_counter() - t0
        await client.close()
        return dt
    c0 = process_cpu()
    dt = (aio_run if same else asyncio.run)(main())
    return dt, process_cpu() - c0


def raw_replay(base_url: str, requests: list[dict], inflight: int) -> tuple[float, float]:
    """(seconds, CPU seconds) of the same requests as plain JSON POSTs through ``httpx2`` (no
    SDK request transform or response model): what a client without the SDK could reach."""
    import asyncio
    import json

    import httpx2 as httpx     # the HTTP package the openai SDK here runs on

    bodies = requests

    async def main() -> float:
        limits = httpx.Limits(max_connections=inflight, max_keepalive_connections=inflight)
        async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=30) as client:
            sem = asyncio.Semaphore(inflight)

            async def one(body: dict) -> None:
                async with sem:
                    r = await client.post("/chat/completions", content=json.dumps(body),
                                          headers={"content-type": "application/json", "authorization": "Bearer x"})
                    json.loads(r.content)
            t0 = time.perf_counter()
            await asyncio.gather(*(one(b) for b in bodies))
            return time.perf_counter() - t0
    c0 = process_cpu()
    dt = asyncio.run(main())
    return dt, process_cpu() - c0

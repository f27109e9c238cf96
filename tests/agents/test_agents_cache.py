"""The call cache: content addressing, zero requests on a rerun, crash safety, concurrency."""
from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import os

from agents.cache import CallCache, cache_key
from agents.session import LLMSession
from agents.testing.fake_server import Reply

BASE = dict(model="m", sampling={"temperature": 0.8}, messages=[{"role": "user", "content": "hi"}],
            schema={"type": "object"}, prompt_version="v1")


def test_key_depends_on_content_only():
    k = cache_key(**BASE)
    assert k == cache_key(**BASE)
    for change in [{"model": "m2"}, {"sampling": {"temperature": 0}}, {"prompt_version": "v2"},
                   {"messages": [{"role": "user", "content": "hi!"}]}, {"schema": None},
                   {"logprobs": True}, {"sample": 1}]:
        assert cache_key(**{**BASE, **change}) != k, change


def map_all(cfg, step, xs, store, **kw):
    async def main():
        async with LLMSession(cfg, store=store, **kw) as llm:
            return await llm.map(step, xs)
    return asyncio.run(main())


def test_second_run_makes_zero_requests(fake_llm, make_config, qa_step, tmp_path, monkeypatch):
    # different API keys and base URLs address the same entries: neither is in the key
    monkeypatch.setenv("KEY_ONE", "sk-one-aaaaaaaaaaaaaaaaaaaa")
    monkeypatch.setenv("KEY_TWO", "sk-two-bbbbbbbbbbbbbbbbbbbb")
    xs = [f"q{i}" for i in range(6)]
    fake_llm.script(Reply.text("not json"))   # one repair chain is cached too
    b1 = map_all(make_config(fake_llm, endpoint={"api_key_env": "KEY_ONE"}), qa_step(), xs, tmp_path / "run")
    n = fake_llm.count
    assert n == 7 and b1.n_ok == 6
    b2 = map_all(make_config(fake_llm, endpoint={"api_key_env": "KEY_TWO",
                                                 "base_url": fake_llm.base_url.replace("127.0.0.1", "localhost")}),
                 qa_step(), xs, tmp_path / "run")
    assert fake_llm.count == n
    assert all(r.cache_hit for r in b2.items) and [r.output for r in b2.items] == [r.output for r in b1.items]
    # a new prompt version is a new call
    map_all(make_config(fake_llm), qa_step(prompt_version="qa-v2"), xs[:1], tmp_path / "run")
    assert fake_llm.count == n + 1


def test_cache_disabled_and_shared_scope(fake_llm, make_config, qa_step, tmp_path):
    cfg = make_config(fake_llm, cache={"enabled": False})
    map_all(cfg, qa_step(), ["a"], tmp_path / "r1")
    map_all(cfg, qa_step(), ["a"], tmp_path / "r1")
    assert fake_llm.count == 2 and not (tmp_path / "r1" / "cache").exists()
    shared = make_config(fake_llm, cache={"scope": "shared", "dir": str(tmp_path / "shared")})
    map_all(shared, qa_step(), ["a"], tmp_path / "r2")
    map_all(shared, qa_step(), ["a"], tmp_path / "r3")     # another run, same shared cache
    assert fake_llm.count == 3
    run_scoped = make_config(fake_llm)
    map_all(run_scoped, qa_step(), ["a"], tmp_path / "r4")
    map_all(run_scoped, qa_step(), ["a"], tmp_path / "r5")   # run scope: not shared across runs
    assert fake_llm.count == 5


def test_identical_concurrent_requests_are_sent_once(fake_llm, make_config, qa_step, tmp_path):
    fake_llm.latency = 0.05
    b = map_all(make_config(fake_llm), qa_step(), ["same"] * 5, tmp_path / "run")
    assert fake_llm.count == 1 and b.n_ok == 5 and sum(not r.cache_hit for r in b.items) == 1


def test_samples_are_distinct_calls(fake_llm, make_config, qa_step, tmp_path):
    async def main():
        async with LLMSession(make_config(fake_llm), store=tmp_path / "run") as llm:
            return await llm.map(qa_step(), ["same"] * 3, samples=[0, 1, 2])
    asyncio.run(main())
    assert fake_llm.count == 3


def test_unverifiable_entries_are_misses_and_temp_files_ignored(tmp_path):
    c = CallCache(tmp_path)
    p = c.put("ab" * 32, {"content": "x"})
    assert c.get("ab" * 32) == {"content": "x"}
    p.write_text(p.read_text()[:-20])                 # torn (cannot happen via put; still handled)
    assert c.get("ab" * 32) is None
    data = json.loads(json.dumps({"format": 1, "key": "cd" * 32, "response": {"content": "y"}, "checksum": "0"}))
    c.path("cd" * 32).parent.mkdir(parents=True, exist_ok=True)
    c.path("cd" * 32).write_text(json.dumps(data))    # checksum mismatch
    assert c.get("cd" * 32) is None
    (p.parent / f".{'ef' * 32}.1.x.tmp").write_text("{")
    assert sorted(q.name for q in c.entries()) == [p.name, c.path("cd" * 32).name]
    os.utime(p.parent / f".{'ef' * 32}.1.x.tmp", (0, 0))
    assert c.clean_temp() == 1


def _writer(root: str, seed: int, n: int) -> None:
    c = CallCache(root)
    for i in range(n):
        key = f"{i % 7:02d}" + "f" * 62
        c.put(key, {"content": "x" * (1000 + i), "writer": seed})
        c.get(key)


def test_concurrent_writer_processes_leave_only_complete_entries(tmp_path):
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), s, 40)) for s in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(20)
        assert p.exitcode == 0
    c = CallCache(tmp_path)
    entries = c.entries()
    assert len(entries) == 7
    for e in entries:
        assert c.get(e.stem)["content"].startswith("x")
    assert not list(tmp_path.glob("*/.*.tmp"))

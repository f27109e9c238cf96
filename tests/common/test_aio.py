"""common.aio.run: uvloop by default, asyncio on request, a clear error otherwise."""
import asyncio

import pytest

from common.aio import run


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_runs_on_uvloop_by_default(monkeypatch):
    monkeypatch.delenv("MTR_EVENT_LOOP", raising=False)
    assert run(_loop_module()).startswith("uvloop")


def test_asyncio_on_request(monkeypatch):
    monkeypatch.setenv("MTR_EVENT_LOOP", "asyncio")
    assert run(_loop_module()).startswith("asyncio")


def test_unknown_loop_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("MTR_EVENT_LOOP", "tokio")
    with pytest.raises(ValueError, match="MTR_EVENT_LOOP='tokio'"):
        run(_loop_module())


def test_each_run_has_its_own_closed_loop(monkeypatch):
    monkeypatch.delenv("MTR_EVENT_LOOP", raising=False)
    loops = []

    async def grab():
        loops.append(asyncio.get_running_loop())
    run(grab())
    run(grab())
    assert loops[0] is not loops[1] and loops[0].is_closed()

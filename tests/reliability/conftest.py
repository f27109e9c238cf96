"""Helpers of the reliability suite: run ``mtr`` the way a user does (``main()``: one-line errors, exit 2)."""
from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest


@dataclass
class MtrResult:
    exit_code: int
    out: str
    err: str

    @property
    def output(self) -> str:
        return self.out + self.err


@pytest.fixture
def mtr(capsys, monkeypatch):
    """Call the real entry point ``flows.cli.main`` in-process; returns exit code, stdout, stderr."""
    def run(*args: str) -> MtrResult:
        from flows.cli import main
        monkeypatch.setattr(sys, "argv", ["mtr", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return MtrResult(code, captured.out, captured.err)
    return run

import subprocess
import sys

import pytest

from flows.pipeline import preflight


def _mtr(*args):
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True, timeout=120)


def test_help_lists_commands_with_examples():
    out = _mtr("--help").stdout
    for cmd in ("curate", "chunk", "embed", "cluster", "build", "demo", "runs", "query", "evaluate"):
        assert cmd in out
    assert "Example: mtr chunk" in _mtr("chunk", "--help").stdout


def test_errors_are_one_sentence_without_traceback(tmp_path):
    r = _mtr("embed", str(tmp_path))
    assert r.returncode == 2
    assert "no 'chunks' table yet; run `mtr chunk` on it first" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    r = _mtr("curate", str(tmp_path / "missing"))
    assert r.returncode == 2 and "does not exist" in r.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text("[chunk]\nsize = 3\n")
    r = _mtr("chunk", str(tmp_path), "-c", str(bad))
    assert r.returncode == 2 and "chunk.size: unknown key" in r.stderr


def test_preflight_order(tmp_path):
    with pytest.raises(ValueError, match="unknown stage"):
        preflight(str(tmp_path), ["bogus"], None)
    with pytest.raises(ValueError, match="run `mtr embed`"):
        preflight(str(tmp_path), ["cluster"], None)

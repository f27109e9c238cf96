"""common/configfile.py: the one reader behind every config file (MTR, audit, abstention, LLM)."""
from __future__ import annotations

import pytest

from agents.config import LLMConfig
from agents.errors import LLMConfigError
from common.configfile import read_config_file
from common.errors import UserError
from evaluation.abstention.config import AbstentionConfig, AbstentionError


def test_suffix_decides_the_syntax(tmp_path):
    (tmp_path / "c.toml").write_text('[chunk]\nmax_size = 512\n')
    assert read_config_file(tmp_path / "c.toml") == {"chunk": {"max_size": 512}}
    (tmp_path / "c.YML").write_text("chunk:\n  max_size: 256\n")
    assert read_config_file(tmp_path / "c.YML") == {"chunk": {"max_size": 256}}
    (tmp_path / "c.json").write_text('{"k": [1, 2]}')
    assert read_config_file(tmp_path / "c.json") == {"k": [1, 2]}
    (tmp_path / "empty.yaml").write_text("")
    assert read_config_file(tmp_path / "empty.yaml") == {}


def test_section_wrapper_is_unwrapped_only_when_alone(tmp_path):
    p = tmp_path / "a.yaml"
    p.write_text("audit:\n  seed: 3\n")
    assert read_config_file(p, section="audit") == {"seed": 3}
    assert read_config_file(p) == {"audit": {"seed": 3}}
    p.write_text("audit:\n  seed: 3\nother: 1\n")
    assert read_config_file(p, section="audit") == {"audit": {"seed": 3}, "other": 1}
    p.write_text("audit:\n")
    assert read_config_file(p, section="audit") == {}


@pytest.mark.parametrize("name, text, message", [
    ("missing.toml", None, "config file {p} does not exist"),
    ("c.ini", "[a]\n", "config file {p} must end in .toml, .yaml, .yml or .json"),
    ("c.toml", "[chunk\n", "config file {p} could not be parsed: "),
    ("c.yaml", "a: [1, 2\n", "config file {p} could not be parsed: "),
    ("c.yaml", "- 1\n- 2\n", "config file {p} must contain a mapping at the top level"),
    ("c.yaml", b"a: \xff\n", "config file {p} could not be parsed: "),
])
def test_failures_are_one_sentence_user_errors(tmp_path, name, text, message):
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    elif text is not None:
        p.write_text(text)
    with pytest.raises(UserError) as info:
        read_config_file(p)
    assert str(info.value).startswith(message.format(p=p)) and "\n" not in str(info.value)


def test_a_directory_is_not_a_config_file(tmp_path):
    with pytest.raises(UserError, match="is a directory, not a file"):
        read_config_file(tmp_path)


def test_callers_keep_their_error_types(tmp_path):
    with pytest.raises(LLMConfigError, match=r"^LLM config .*llm.yaml does not exist$"):
        LLMConfig.from_file(tmp_path / "llm.yaml")
    bad = tmp_path / "abst.yaml"
    bad.write_text("abstention: [1]\n")
    with pytest.raises(AbstentionError, match="abstention config .* must contain a mapping"):
        AbstentionConfig.from_file(bad)
    (tmp_path / "llm.toml").write_text('[llm]\nbackend = "offline"\n')       # TOML works for every caller
    assert LLMConfig.from_file(tmp_path / "llm.toml").backend == "offline"

"""JSON extraction from text and validation messages."""
from __future__ import annotations

import pytest
from pydantic import BaseModel

from agents.parsing import OutputInvalid, TextOutput, parse_output


class M(BaseModel):
    a: int
    b: str


@pytest.mark.parametrize("text", [
    '{"a": 1, "b": "x"}',
    'Sure!\n```json\n{"a": 1, "b": "x"}\n```\nHope it helps',
    'The answer is {"a": 1, "b": "x"} as requested.',
    '{"other": 2} and then {"a": 1, "b": "x"}',
])
def test_extracts_first_valid_object(text):
    assert parse_output(text, M) == M(a=1, b="x")


def test_errors_are_explicit():
    with pytest.raises(OutputInvalid, match="no JSON object"):
        parse_output("{not json", M)
    with pytest.raises(OutputInvalid, match="a: Input should be a valid integer"):
        parse_output('{"a": "one", "b": "x"}', M)
    with pytest.raises(OutputInvalid, match="empty"):
        parse_output("  ", M)
    assert parse_output("free text", TextOutput).text == "free text"

"""Read a configuration file into a dict: the one reader behind every ``--config`` /
``--llm-config`` file (ground floor: imports nothing of ours but :mod:`common.errors`).

The suffix decides the syntax: ``.toml`` is TOML, ``.yaml`` / ``.yml`` / ``.json`` are YAML
(a superset of JSON). Every failure is one sentence naming the file.
"""
from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from common.errors import UserError, require_file

TOML_SUFFIXES = (".toml",)
YAML_SUFFIXES = (".yaml", ".yml", ".json")


def _parse(text: str, suffix: str) -> Any:
    if suffix in TOML_SUFFIXES:
        return tomllib.loads(text)               # TOMLDecodeError is a ValueError
    import yaml   # costly: yaml (YAML files only)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


def read_config_file(path: str | os.PathLike, *, what: str = "config file", section: str | None = None,
                     error: type[UserError] = UserError) -> dict[str, Any]:
    """The mapping held by a TOML or YAML/JSON file.

    Args:
        path: the file.
        what: how messages name the file (``"LLM config"``, ``"audit config"``...).
        section: when the file's only top-level key is ``section``, its value is returned
            (``llm:``, ``audit:``, ``abstention:`` wrappers); an empty section is ``{}``.
        error: the :class:`~common.errors.UserError` subclass to raise.

    Returns:
        The top-level mapping (``{}`` for an empty file).

    Raises:
        UserError: (``error``) the file does not exist, has an unknown suffix, cannot be read
            or parsed, or does not hold a mapping.
    """
    p = Path(path)
    require_file(p, what, error)
    suffix = p.suffix.lower()
    if suffix not in TOML_SUFFIXES + YAML_SUFFIXES:
        raise error(f"{what} {p} must end in .toml, .yaml, .yml or .json")
    try:
        data = _parse(p.read_text(encoding="utf-8"), suffix)
    except (OSError, ValueError) as exc:         # UnicodeDecodeError is a ValueError too
        raise error(f"{what} {p} could not be parsed: {' '.join(str(exc).split())}") from None
    if data is None:
        data = {}
    if section is not None and isinstance(data, dict) and set(data) == {section}:
        data = data[section] if data[section] is not None else {}
    if not isinstance(data, dict):
        raise error(f"{what} {p} must contain a mapping at the top level")
    return data

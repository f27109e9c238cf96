"""Which LLM (or offline stand-in) plays each part: judges, answer models, query expander.

A name on the command line (``--judge NAME``) is resolved in this order:

1. an offline stand-in (``heuristic-support``, ``heuristic-overlap``, ``heuristic-answerer``,
   ``prf``): its role is pinned to the offline backend;
2. a role of the LLM config (``roles: {NAME: {...}}``): used as configured;
3. otherwise a model id: a role ``abstention_<part>:<NAME>`` is added on the config's default
   endpoint with ``model: NAME``.

LLM names need an LLM config with an endpoint; without one they are refused (never silently
replaced by a heuristic).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from agents.config import LLMConfig, RoleConfig
from evaluation.abstention.config import (AbstentionConfig, AbstentionError, is_offline_answerer,
                                          is_offline_expander, is_offline_judge)

OFFLINE_FLUSH_EVERY = 1000


@dataclass(frozen=True, slots=True)
class Part:
    """One LLM-backed part: its display name, config role and whether it is an offline stand-in."""

    name: str
    role: str
    offline: bool


@dataclass(frozen=True)
class Roles:
    config: LLMConfig
    judges: tuple[Part, ...]
    answerers: tuple[Part, ...]
    expander: Part

    @property
    def stand_ins(self) -> list[str]:
        """Human descriptions of every offline stand-in in use."""
        out = [f"judge {p.name}" for p in self.judges if p.offline]
        out += [f"answer model {p.name}" for p in self.answerers if p.offline]
        if self.expander.offline:
            out.append("query expansions (pseudo-relevance feedback instead of an LLM)")
        return out


def model_family(name: str) -> str:
    """A rough model family from a model id (``Qwen/Qwen3-14B`` -> ``qwen``, ``phi-4`` -> ``phi``)."""
    base = name.rsplit("/", 1)[-1].lower()
    m = re.match(r"[a-z]+", base)
    return m.group(0) if m else base


def resolve_roles(cfg: AbstentionConfig, base: LLMConfig | None) -> Roles:
    """The LLM config with a role for every part (see module docstring).

    Raises:
        AbstentionError: an LLM name without an LLM config.
    """
    llm = base or LLMConfig(backend="offline", accounting_flush_every=OFFLINE_FLUSH_EVERY)
    roles = dict(llm.roles)

    def part(name: str, kind: str, offline: bool, role_kind: str) -> Part:
        if offline:
            role = f"abstention_{kind}:{name}"
            roles[role] = RoleConfig(kind=role_kind, backend="offline")
            return Part(name, role, True)
        if base is None:
            raise AbstentionError(f"{kind} {name!r} is an LLM and needs --llm-config (an endpoint); the offline "
                                  "stand-ins are heuristic-support, heuristic-overlap (judges), "
                                  "heuristic-answerer (answer model) and prf (expansions)")
        if name in llm.roles:
            return Part(name, name, llm.roles[name].backend == "offline")
        role = f"abstention_{kind}:{name}"
        roles[role] = RoleConfig(kind=role_kind, model=name)
        return Part(name, role, False)

    judges = tuple(part(j, "judge", is_offline_judge(j), "judge") for j in cfg.judges)
    answerers = tuple(part(a, "answerer", is_offline_answerer(a), "judge") for a in cfg.answer_models)
    expander = part(cfg.expander, "expander", is_offline_expander(cfg.expander), "generation")
    config = llm.model_copy(update={"roles": roles})
    return Roles(config=config, judges=judges, answerers=answerers, expander=expander)


__all__ = ["Part", "Roles", "model_family", "resolve_roles"]

"""The ensemble: which judges run, how each resolves to an endpoint/model, and the steps.

A judge is named on the command line (``--judge NAME``, repeatable). A name resolves, in
this order, to:

1. a heuristic stand-in: ``overlap``, ``support`` or ``retrieval`` (``heuristic:<name>`` also
   works) — runs offline, no endpoint needed;
2. a role of the LLM config (``roles: {qwen72: {endpoint: vllm, model: Qwen/Qwen2.5-72B-Instruct}}``);
3. an endpoint of the LLM config (its default model);
4. ``ENDPOINT:MODEL`` for an endpoint of the config;
5. otherwise a model id served by the config's default endpoint.

Without names: every endpoint of the LLM config is one judge (its default model); with no
LLM config (or ``backend: offline``) the three heuristic judges stand in, and every report
page says so.

Each (judge, metric) runs as its own config role ``audit_<metric>@<judge>`` (temperature 0,
1024 tokens; sampling set on a role named like the judge applies to all its metrics), so
the LLM layer's cache, accounting and budget see every judge separately.
"""
from __future__ import annotations

from typing import Sequence

from agents.config import LLMConfig, RoleConfig
from evaluation.audit.alignment import AlignmentJudge
from evaluation.audit.base import JudgeSpec, JudgeStep, judge_role
from evaluation.audit.config import METRICS, AuditConfig
from evaluation.audit.distinguishability import DistinguishabilityJudge
from evaluation.audit.faithfulness import FaithfulnessJudge
from evaluation.audit.heuristics import HEURISTICS, EvidenceIndex, HeuristicJudge, make_heuristic
from evaluation.audit.quality import QualityJudge

STEPS: dict[str, type[JudgeStep]] = {"alignment": AlignmentJudge, "distinguishability": DistinguishabilityJudge,
                                     "faithfulness": FaithfulnessJudge, "quality": QualityJudge}


class JudgeConfigError(ValueError):
    """A judge name cannot be resolved (one sentence, shown to the user)."""


def heuristic_judges() -> list[JudgeSpec]:
    return [JudgeSpec(name=h, kind="heuristic") for h in HEURISTICS]


def resolve_judges(names: Sequence[str | JudgeSpec] | None, llm_config: LLMConfig | None = None) -> list[JudgeSpec]:
    """Judge specs for ``names`` (see module docstring)."""
    online = llm_config is not None and llm_config.backend != "offline" and bool(llm_config.endpoints)
    if not names:
        if not online:
            return heuristic_judges()
        assert llm_config is not None
        return [JudgeSpec(name=ep, endpoint=ep, model=cfg.model) for ep, cfg in llm_config.endpoints.items()]
    out: list[JudgeSpec] = []
    for n in names:
        if isinstance(n, JudgeSpec):
            out.append(n)
            continue
        name = n.strip()
        h = name.removeprefix("heuristic:")
        if h in HEURISTICS:
            out.append(JudgeSpec(name=h, kind="heuristic"))
            continue
        if llm_config is None or not llm_config.endpoints:
            raise JudgeConfigError(f"judge {name!r} is an LLM judge and needs an LLM config with an endpoint "
                                   f"(--llm-config FILE); offline judges are {', '.join(HEURISTICS)}")
        if name in llm_config.roles:
            rc = llm_config.roles[name]
            ep_name, ep = llm_config.endpoint_for(rc.endpoint)
            out.append(JudgeSpec(name=name, endpoint=ep_name, model=rc.model or ep.model))
        elif name in llm_config.endpoints:
            out.append(JudgeSpec(name=name, endpoint=name, model=llm_config.endpoints[name].model))
        elif ":" in name and name.split(":", 1)[0] in llm_config.endpoints:
            ep_name, model = name.split(":", 1)
            out.append(JudgeSpec(name=name, endpoint=ep_name, model=model))
        else:
            try:
                ep_name, _ = llm_config.endpoint_for(None)
            except Exception as exc:  # noqa: BLE001 - re-raised as one sentence
                raise JudgeConfigError(f"judge {name!r} is not a role or endpoint of the LLM config and the "
                                       f"config has no default endpoint to serve it ({exc})") from None
            out.append(JudgeSpec(name=name, endpoint=ep_name, model=name))
    seen: set[str] = set()
    for j in out:
        if j.name in seen:
            raise JudgeConfigError(f"judge {j.name!r} is listed twice")
        seen.add(j.name)
    return out


def judge_config(base: LLMConfig | None, judges: Sequence[JudgeSpec], metrics: Sequence[str] = METRICS) -> LLMConfig:
    """``base`` plus one role per (judge, metric); heuristic roles select the offline backend.

    Without ``base`` (heuristic judges only) the config is offline, uncached (the heuristics
    are instant) and flushes the ``llm_calls`` accounting in parts of 1,000 rows.
    """
    if base is None:
        if any(not j.heuristic for j in judges):
            raise JudgeConfigError("LLM judges need an LLM config (--llm-config FILE)")
        base = LLMConfig(backend="offline", cache={"enabled": False}, accounting_flush_every=1000)
    roles = dict(base.roles)
    for j in judges:
        shared = base.roles.get(j.name)
        for m in metrics:
            if j.heuristic:
                roles[judge_role(m, j.name)] = RoleConfig(kind="judge", backend="offline")
            else:
                roles[judge_role(m, j.name)] = RoleConfig(
                    kind="judge", backend="openai", endpoint=j.endpoint, model=j.model,
                    sampling=shared.sampling if shared is not None else RoleConfig().sampling)
    return LLMConfig.model_validate({**base.model_dump(), "roles": {k: v.model_dump() for k, v in roles.items()}})


def make_step(metric: str, judge: JudgeSpec, config: AuditConfig, *, index: EvidenceIndex | None = None,
              heuristic: HeuristicJudge | None = None) -> JudgeStep:
    """The step of ``judge`` for ``metric``; heuristic judges get their offline implementation
    (pass ``heuristic`` to share one instance, and its caches, across metrics, or ``index``)."""
    offline = None
    if judge.heuristic:
        if heuristic is None:
            if index is None:
                raise ValueError("heuristic judges need an EvidenceIndex")
            heuristic = make_heuristic(judge.name, index)
        offline = heuristic.for_metric(metric)
    return STEPS[metric](judge, offline=offline, max_passage_chars=config.max_passage_chars,
                         max_history_turns=config.max_history_turns, max_history_chars=config.max_history_chars)

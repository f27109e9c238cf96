"""The dataset card's quality sections: the quality gate's rejections and the self-audit.

* :func:`gate_section`: the gate's mode and thresholds, and its rejections (``gate_rejections`` rows) per check,
  role and model: candidates rejected, turns that failed on it (the rejection of their last attempt), and
  rewrites of the humanizer replaced by the question they rewrote;
* :func:`replace_section`: a section of an existing card replaced (or added before ``## Files``);
* :func:`audit_section`: the self-audit (:mod:`evaluation.audit.self_audit`): the ensemble's mean and confidence
  interval per metric, each judge's mean, which judges are heuristic stand-ins, the judgments excluded because the
  judge's own model wrote the turn, and the audit's cost beside the synthesis's.
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from agents.synth.gate import CHECKS
from evaluation.audit.config import LABELS, variant_name

AUDIT_HEADING = "## Self-audit (MTR-Eval)"
GATE_HEADING = "## Quality gate"


def _f(x: Any, d: int = 3) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return "–"
    return f"{x:.{d}f}" if isinstance(x, float) else str(x)


def gate_section(rows: Sequence[Mapping[str, Any]], mode: str, thresholds: Mapping[str, Any],
                 n_ok: int, n_failed_by_gate: int, skip: Sequence[str] = ()) -> str:
    """The gate table (see module docstring): a row per check (in the gate's order) and model that rejected
    something, a row with zeros for a check that rejected nothing; ``rows`` = ``gate_rejections`` rows."""
    lines = [GATE_HEADING, ""]
    if mode == "off":
        return "\n".join(lines + ["The quality gate was off (`--gate off`): no turn was checked by it."])
    lines += [f"Mode `{mode}`: every candidate the verifier accepted was checked by the same named checks, whatever "
              f"the backend; {len(rows)} rejection(s), {n_failed_by_gate} turn(s) failed on the gate, {n_ok} turns "
              "kept (each passed every check). A rejected candidate goes back to the questioner with the reason; a "
              "humanizer's rewrite that fails keeps the question it rewrote.", ""]
    per: Counter = Counter()
    final: Counter = Counter()
    for r in rows:
        k = (r["check"], r["role"], r.get("model") or "–")
        per[k] += 1
        final[k] += bool(r.get("final"))
    lines += ["| check | role | model | rejections | turns failed |", "|---|---|---|---|---|"]
    for name, c in CHECKS.items():
        mine = sorted((k for k in per if k[0] == name), key=lambda k: (-per[k], k))
        if not mine:
            lines.append(f"| {name} | {c.role} | – | {'skipped' if name in skip else 0} | 0 |")
        for k in mine:
            lines.append(f"| {name} | {k[1]} | {k[2]} | {per[k]} | {final[k]} |")
    lines += ["", "Thresholds: " + ", ".join(f"`{k}` {v}" for k, v in thresholds.items()) + "."]
    return "\n".join(lines)


def audit_section(audit: Mapping[str, Any] | None, skipped_reason: str | None = None) -> str:
    """The self-audit section (``audit``: :func:`evaluation.audit.self_audit.run_self_audit`'s result; None when the
    audit did not run, ``skipped_reason`` says why)."""
    lines = [AUDIT_HEADING, ""]
    if audit is None or audit.get("skipped"):
        why = (audit or {}).get("skipped") or skipped_reason or "not run"
        hint = " Run `mtr audit --benchmark RUN --format ours` to audit it." if audit is None else ""
        return "\n".join(lines + [f"Not audited: {why}.{hint}"])
    rows = audit.get("summary") or []
    judges = [j["name"] for j in audit.get("judges", [])]
    heur = audit.get("offline_judges") or []
    lines.append(f"{audit.get('turns')} turns audited by {', '.join(judges)} (the ensemble: mean of 1-5 ratings, "
                 "majority of 0/1 choices). Distinguishability: the judge picks the gold among it and 7 hard negatives "
                 "retrieved from the corpus (chance 0.125).")
    if heur:
        lines += ["", f"> {', '.join(heur)} are offline heuristic stand-ins (word overlap, sentence support, BM25 "
                      "rank), not judgments of meaning" + ("; no LLM judge was configured." if len(heur) == len(judges)
                                                          else ".")]
    lines += ["", f"Judgments excluded because the judge's own model wrote the turn (never self-judged): "
                  f"{audit.get('excluded_self', 0)}.", ""]
    metrics = list(dict.fromkeys(variant_name(r["metric"], r["variant"]) for r in rows))
    cols = [j for j in judges if any(r["judge"] == j for r in rows)]
    lines += ["| metric | ensemble mean | CI | n | " + " | ".join(cols) + " |",
              "|---|---|---|---|" + "---|" * len(cols)]
    by = {(variant_name(r["metric"], r["variant"]), r["judge"]): r for r in rows}
    for m in metrics:
        e = by.get((m, "ensemble"), {})
        label = LABELS.get(m.split("[")[0], m) + (f" [{m.split('[')[1]}" if "[" in m else "")
        ci = f"{_f(e.get('ci_low'), 2)}–{_f(e.get('ci_high'), 2)}" if e.get("ci_low") is not None else "–"
        lines.append(f"| {label} | {_f(e.get('mean'), 2)} | {ci} | {e.get('n', 0)} | "
                     + " | ".join(_f(by.get((m, j), {}).get("mean"), 2) for j in cols) + " |")
    c, s = audit.get("cost") or {}, audit.get("synthesis_cost") or {}
    lines += ["", f"Audit cost: {c.get('calls', 0)} calls, {c.get('tokens', 0)} tokens, "
                  f"${c.get('cost_usd', 0.0):.4f}, {_f(audit.get('wall_s'), 1)} s (synthesis: {s.get('calls', 0)} "
                  f"calls, {s.get('tokens', 0)} tokens, ${s.get('cost_usd', 0.0):.4f}). Full report: "
                  f"`{audit.get('out_dir')}/report.html`."]
    return "\n".join(lines)


def replace_section(card: Path, heading: str, section: str) -> bool:
    """Put ``section`` (starting with ``heading``) into the card in place of the section of that heading (up to the
    next ``## ``), or before ``## Files`` when it has none; the card is rewritten atomically. False without a card."""
    card = Path(card)
    if not card.is_file():
        return False
    text = card.read_text(encoding="utf-8")
    if heading in text:
        before, rest = text.split(heading, 1)
        nxt = rest.find("\n## ")
        text = before.rstrip() + "\n\n" + section.rstrip() + ("\n\n" + rest[nxt + 1:] if nxt >= 0 else "\n")
    elif "\n## Files" in text:
        before, rest = text.split("\n## Files", 1)
        text = before.rstrip() + "\n\n" + section.rstrip() + "\n\n## Files" + rest
    else:
        text = text.rstrip() + "\n\n" + section.rstrip() + "\n"
    tmp = card.with_name(card.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, card)
    return True


def write_audit_section(card: str | Path | None, audit: Mapping[str, Any] | None) -> bool:
    """The self-audit's section (:func:`audit_section`) in place of the card's placeholder; False without a card."""
    return card is not None and replace_section(Path(card), AUDIT_HEADING, audit_section(audit))

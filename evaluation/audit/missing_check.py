"""Human checks of the audit's candidate missing positives.

An audit writes ``missing_positives.csv``: one row per (turn, candidate source, passage) a
judge chose over the gold passage, with an empty ``human_verdict`` column. Annotators fill a
copy each; this module reads the copies back and measures

* **precision** of the audit's candidates: the share of checked candidates the annotators'
  majority judged truly relevant (ties are counted, not decided), overall and among the
  candidates the judges' ensemble flagged;
* **agreement between annotators**: Fleiss' kappa over the candidates every annotator rated
  and Krippendorff's nominal alpha over all candidates rated at least twice (it allows
  missing ratings); with one annotator both are undefined (NaN);
* **agreement of each judge with the majority**: a judge votes "relevant" for a candidate
  when it chose that passage in any pass of that turn's test, "not relevant" when it judged
  the turn and chose something else, and has no vote when it did not judge the turn
  (failure, self-preference exclusion). Reported: agreement rate and the precision of its
  own picks. ``ensemble`` votes with ``ensemble_flagged``. All candidates were picked by at
  least one judge, so these are rates *among candidates*, not over all turns;

and returns the confirmed positives (majority relevant) as a **qrels supplement** per
benchmark (query id = the audit's ``sample_id``, grade 1), written next to the audit, never
into the benchmark's own qrels.

Verdict cells (case-insensitive): ``1 yes y true relevant`` = relevant; ``0 no n false
not relevant irrelevant`` = not relevant; empty, ``?``, ``unsure``, ``skip`` = not rated.
Rows are matched on ``(benchmark, sample_id, source, candidate_doc)``; ``benchmark`` and
``source`` may be missing from a copy when they are unambiguous. The annotator is the
``annotator`` column when present, else the file name.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from common.errors import UserError
from evaluation.audit import schemas
from evaluation.audit.agreement import fleiss_kappa, krippendorff_alpha
from evaluation.audit.human import csv_with_header
from storage.formats.trec import write_trec_qrels
from storage.store import RunStore

RELEVANT = {"1", "yes", "y", "true", "relevant"}
NOT_RELEVANT = {"0", "no", "n", "false", "not relevant", "irrelevant", "not_relevant"}
UNRATED = {"", "?", "unsure", "skip"}

Key = tuple[str, str, str, str]     # (benchmark, sample_id, source, candidate_doc)


class MissingCheckError(UserError):
    """A filled missing-positives file cannot be read or matched (one sentence)."""


def parse_verdict(cell: str | None) -> int | None:
    """1 (relevant), 0 (not relevant) or None (not rated); raises ``ValueError`` otherwise."""
    v = " ".join((cell or "").strip().lower().split())
    if v in RELEVANT:
        return 1
    if v in NOT_RELEVANT:
        return 0
    if v in UNRATED:
        return None
    raise ValueError(v)


def load_verdicts(paths: Sequence[str | Path], candidates: Sequence[Mapping[str, Any]]) -> dict[str, dict[Key, int]]:
    """``{annotator: {candidate key: verdict}}`` from filled copies of ``missing_positives.csv``.

    Args:
        paths: one file per annotator (or files with an ``annotator`` column).
        candidates: the audit's ``audit_missing_positives`` rows (to match rows against).

    Raises:
        MissingCheckError: unreadable file, missing column, unknown verdict, a row that is not
            a candidate of this audit, or an ambiguous row.
    """
    index: dict[tuple[str, str], list[Key]] = defaultdict(list)
    for c in candidates:
        index[(c["sample_id"], c["candidate_doc"])].append(
            (c["benchmark"], c["sample_id"], c["source"], c["candidate_doc"]))
    out: dict[str, dict[Key, int]] = {}
    stems: dict[str, int] = {}
    for path in paths:
        p = Path(path)
        stems[p.stem] = stems.get(p.stem, 0) + 1
        file_name = p.stem if stems[p.stem] == 1 else f"{p.stem}#{stems[p.stem]}"    # same name, other folder
        with csv_with_header(p, MissingCheckError) as (cols, reader):
            for need in ("sample_id", "candidate_doc", "human_verdict"):
                if need not in cols:
                    raise MissingCheckError(f"{p}: the header needs a {need} column (a filled missing_positives.csv)")
            for lineno, row in enumerate(reader, start=2):
                try:
                    verdict = parse_verdict(row.get(cols["human_verdict"]))
                except ValueError as exc:
                    raise MissingCheckError(f"{p}, line {lineno}: human_verdict {exc.args[0]!r} is not one of "
                                            "yes/no/1/0/relevant/not relevant (or empty)") from None
                if verdict is None:
                    continue
                sid, doc = row[cols["sample_id"]].strip(), row[cols["candidate_doc"]].strip()
                keys = index.get((sid, doc), [])
                for col in ("benchmark", "source"):
                    val = (row.get(cols[col]) or "").strip() if col in cols else ""
                    if val:
                        keys = [k for k in keys if k[0 if col == "benchmark" else 2] == val]
                if not keys:
                    raise MissingCheckError(f"{p}, line {lineno}: ({sid}, {doc}) is not a candidate missing positive "
                                            "of this audit")
                if len(keys) > 1:
                    raise MissingCheckError(f"{p}, line {lineno}: ({sid}, {doc}) matches several candidates; keep "
                                            "the benchmark and source columns")
                name = ((row.get(cols["annotator"]) or "").strip() if "annotator" in cols else "") or file_name
                if out.get(name, {}).get(keys[0], verdict) != verdict:
                    raise MissingCheckError(f"{p}, line {lineno}: annotator {name!r} rated ({sid}, {doc}) twice "
                                            "with different verdicts")
                out.setdefault(name, {})[keys[0]] = verdict
    return out


def majority_verdict(votes: Sequence[int]) -> int | None:
    """1 / 0 by strict majority; None on a tie or without votes."""
    s, n = sum(votes), len(votes)
    if not n or 2 * s == n:
        return None
    return 1 if 2 * s > n else 0


def _rate(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


@dataclass
class MissingCheck:
    """Result of :func:`check_missing_positives` (see module docstring)."""

    items: list[dict[str, Any]]
    annotators: list[dict[str, Any]]
    judges: list[dict[str, Any]]
    summary: dict[str, Any]
    qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)


def judge_votes(scores: Sequence[Mapping[str, Any]], keys: Sequence[Key]) -> dict[str, dict[Key, int]]:
    """``{judge: {candidate key: 1 picked / 0 judged, picked another}}`` from ``audit_scores``."""
    picks: dict[tuple[str, str, str, str], set[str]] = defaultdict(set)
    for r in scores:
        if r["metric"] == "distinguishability" and r["status"] == "ok":
            picks[(r["judge"], r["benchmark"], r["sample_id"], r["candidate_source"])].add(r["chosen_doc"])
    judges = list(dict.fromkeys(r["judge"] for r in scores))
    out: dict[str, dict[Key, int]] = {j: {} for j in judges}
    for j in judges:
        for k in keys:
            chosen = picks.get((j, k[0], k[1], k[2]))
            if chosen:
                out[j][k] = int(k[3] in chosen)
    return out


def check_missing_positives(candidates: Sequence[Mapping[str, Any]], scores: Sequence[Mapping[str, Any]],
                            verdicts: Mapping[str, Mapping[Key, int]]) -> MissingCheck:
    """Precision, annotator agreement, judge agreement and the qrels supplement.

    Args:
        candidates: ``audit_missing_positives`` rows.
        scores: ``audit_scores`` rows (for the judges' votes).
        verdicts: :func:`load_verdicts` output.
    """
    names = list(verdicts)
    items = []
    for c in candidates:
        k: Key = (c["benchmark"], c["sample_id"], c["source"], c["candidate_doc"])
        votes = {a: verdicts[a][k] for a in names if k in verdicts[a]}
        maj = majority_verdict(list(votes.values()))
        items.append({"benchmark": k[0], "sample_id": k[1], "source": k[2], "candidate_doc": k[3],
                      "gold_doc": c["gold_doc"], "ensemble_flagged": bool(c["ensemble_flagged"]),
                      "n_ratings": len(votes), "n_relevant": sum(votes.values()), "majority": maj,
                      "confirmed": maj == 1, "verdicts": [f"{a}={v}" for a, v in votes.items()]})
    checked = [i for i in items if i["n_ratings"]]
    decided = [i for i in checked if i["majority"] is not None]
    flagged = [i for i in decided if i["ensemble_flagged"]]
    complete = [i for i in checked if i["n_ratings"] == len(names)]
    keys = [(i["benchmark"], i["sample_id"], i["source"], i["candidate_doc"]) for i in items]
    matrix = [[verdicts[a].get(k) for a in names] for k in keys]
    summary = {
        "n_candidates": len(items), "n_annotators": len(names), "n_checked": len(checked), "n_decided": len(decided),
        "n_ties": len(checked) - len(decided), "n_confirmed": sum(i["confirmed"] for i in decided),
        "precision": _rate([i["majority"] for i in decided]),
        "n_flagged_decided": len(flagged), "precision_flagged": _rate([i["majority"] for i in flagged]),
        "n_complete": len(complete),
        "fleiss_kappa": (fleiss_kappa([[i["n_relevant"], i["n_ratings"] - i["n_relevant"]] for i in complete])
                         if len(names) >= 2 and complete else math.nan),
        "krippendorff_alpha": krippendorff_alpha(matrix, "nominal") if len(names) >= 2 else math.nan,
    }
    annotators = [{"annotator": a, "n_rated": len(verdicts[a]), "share_relevant": _rate(list(verdicts[a].values()))}
                  for a in names]
    majority = {(i["benchmark"], i["sample_id"], i["source"], i["candidate_doc"]): i["majority"] for i in decided}
    votes = judge_votes(scores, keys)
    votes["ensemble"] = {k: int(i["ensemble_flagged"]) for k, i in zip(keys, items)}
    judges = []
    for j, v in votes.items():
        both = [k for k in majority if k in v]
        picked = [k for k in both if v[k] == 1]
        judges.append({"rater": j, "n": len(both), "agreement": _rate([v[k] == majority[k] for k in both]),
                       "n_picks": len(picked), "precision": _rate([majority[k] for k in picked])})
    qrels: dict[str, dict[str, dict[str, int]]] = {}
    for i in decided:
        if i["confirmed"]:
            qrels.setdefault(i["benchmark"], {}).setdefault(i["sample_id"], {})[i["candidate_doc"]] = 1
    return MissingCheck(items=items, annotators=annotators, judges=judges, summary=summary, qrels=qrels)


def check_run(run_dir: str | Path, paths: Sequence[str | Path], qrels_dir: str | Path | None = None) -> MissingCheck:
    """Read an audit run's candidates and scores, check them against the filled copies and
    write ``audit_human_checks`` (one row per candidate), the qrels supplement
    (``<qrels_dir or run_dir/qrels_supplement>/<benchmark>.qrels``, TREC format, only
    benchmarks with a confirmed positive) and the manifest's ``human_checks`` section.

    Raises:
        MissingCheckError: not an audit run, or a file problem (see :func:`load_verdicts`).
    """
    store = RunStore(str(run_dir))
    for t in ("audit_scores", "audit_missing_positives"):
        if not store.has_table(t):
            raise MissingCheckError(f"{run_dir} is not an audit run (no {t} table)")
    candidates = store.read_table("audit_missing_positives").to_pylist()
    scores = store.read_table("audit_scores", columns=["benchmark", "sample_id", "metric", "status", "judge",
                                                       "candidate_source", "chosen_doc"]).to_pylist()
    res = check_missing_positives(candidates, scores, load_verdicts(paths, candidates))
    store.write_table("audit_human_checks", schemas.table("audit_human_checks", res.items), schemas.AUDIT_HUMAN_CHECKS)
    out = Path(qrels_dir) if qrels_dir is not None else Path(run_dir) / "qrels_supplement"
    files = {}
    for bench, q in res.qrels.items():
        out.mkdir(parents=True, exist_ok=True)
        files[bench] = str(write_trec_qrels(q, out / f"{bench}.qrels"))
    res.summary["qrels_supplement"] = files
    store.write_manifest(human_checks={"files": [str(Path(p).resolve()) for p in paths], **res.summary,
                                       "annotators": res.annotators, "judges": res.judges})
    return res

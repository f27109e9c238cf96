"""Cross-benchmark comparison: significant pair counts, discrimination, audit means, the CLI
(hand-computed values)."""
import json
import math

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from evaluation.audit import schemas
from evaluation.benchmark_eval import BenchmarkEval
from evaluation.compare import audit_means, compare_benchmarks, comparison_markdown, subsample_conversations
from evaluation.discrimination import holm_reject, significant_pairs
from evaluation.metrics import evaluate
from flows.cli import app
from storage.benchmark import Benchmark, BenchTurn
from storage.records import Document
from storage.store import RunStore

QRELS = {f"q{i}": {f"d{i}": 1} for i in range(6)}
HIT = {q: {f"d{i}": 1.0} for i, q in enumerate(QRELS)}                 # finds the relevant passage
MISS = {q: {"other": 1.0} for q in QRELS}                              # never does


def _res(run):
    return evaluate(QRELS, run, metrics=("recall", "ndcg_cut"), ks=(5, 20))


def test_holm_and_significant_pairs_hand_computed():
    assert holm_reject([0.01, 0.04, 0.03], 0.05) == [True, False, False]
    assert holm_reject([0.01, 0.02, 0.04], 0.05) == [True, True, True]      # .01<=.05/3, .02<=.05/2, .04<=.05
    res = {"a": _res(HIT), "b": _res(MISS), "c": _res(HIT)}
    pc = significant_pairs(res, "recall_20", alpha=0.05)
    # a-b: six differences of +1; exact test over 2^6 sign flips: only all-plus / all-minus reach |1| -> 2/64
    assert pc.pairs[("a", "b")] == pytest.approx(2 / 64) and pc.pairs[("b", "c")] == pytest.approx(2 / 64)
    assert pc.pairs[("a", "c")] == 1.0 and (pc.n_pairs, pc.n_significant) == (3, 2)
    # Holm: smallest p 1/32 > .05/3 -> nothing rejected
    assert significant_pairs(res, "recall_20", alpha=0.05, correction="holm").n_significant == 0


def _bench(name, n_conv=3):
    corpus = {f"d{i}": Document(f"d{i}", "", f"text {i}", "x") for i in range(6)}
    turns = [BenchTurn(f"c{c}:{t}", f"c{c}", t, f"question {c} {t}", gold={f"d{(2 * c + t) % 6}": 1})
             for c in range(n_conv) for t in (1, 2)]
    return Benchmark(name=name, format="ours", corpus=corpus, turns=turns)


def test_subsample_keeps_whole_conversations():
    b = _bench("x", n_conv=5)
    s = subsample_conversations(b, 2, seed=1)
    convs = {t.conv_id for t in s.turns}
    assert len(convs) == 2 and len(s.turns) == 4 and s.corpus is b.corpus
    assert subsample_conversations(b, 2, seed=1).turns == s.turns
    assert subsample_conversations(b, 9) is b


def test_compare_with_stub_evaluations():
    runs = {"easy": {"bm25": HIT, "dense": MISS, "hybrid": HIT}, "hard": {"bm25": MISS, "dense": MISS, "hybrid": MISS}}

    def fake_eval(bench, retrievers, modes, **kw):
        results = {f"{r}/{m}": _res(runs[bench.name][r]) for r in retrievers for m in modes}
        return BenchmarkEval(results=results, runs={}, n_queries=6, switch_positions={}, notes={})

    c = compare_benchmarks([_bench("easy"), _bench("hard")], ["bm25", "dense", "hybrid"], ["last_turn"],
                           evaluate_fn=fake_eval, notes={"hard": "sampled"})
    s = {(r["benchmark"], r["retriever"]): r for r in c.scores}
    assert s[("easy", "bm25")]["recall_20"] == 1.0 and s[("easy", "dense")]["ndcg_cut_5"] == 0.0
    d = {(r["benchmark"], r["measure"]): r for r in c.discrimination}
    e = d[("easy", "recall_20")]
    # means 1, 0, 1: spread 1, std = sqrt(((1/3)^2 * 2 + (2/3)^2) / 3) = sqrt(2) / 3
    assert e["spread"] == 1.0 and e["std"] == pytest.approx(math.sqrt(2) / 3) and e["n_significant"] == 2
    h = d[("hard", "recall_20")]
    assert (h["spread"], h["std"], h["n_significant"]) == (0.0, 0.0, 0)
    md = comparison_markdown(c)
    assert "| bm25 | 1.000 / 1.000 | 0.000 / 0.000 |" in md and "2 of 3" in md and "sampled" in md
    with pytest.raises(ValueError, match="distinct"):
        compare_benchmarks([_bench("x"), _bench("x")], ["bm25", "dense"], ["last_turn"], evaluate_fn=fake_eval)


def _audit_run(path, bench, means, offline=("overlap",)):
    store = RunStore(str(path)).ensure()
    rows = [{"benchmark": bench, "metric": m, "variant": v, "judge": "ensemble", "mean": x, "n": 10}
            for (m, v), x in means.items()]
    store.write_table("audit_summary", schemas.table("audit_summary", rows), schemas.AUDIT_SUMMARY)
    store.write_manifest(audit={"offline_heuristic_judges": list(offline)})
    return path


def test_audit_means_pick_the_ensemble_forward_pass(tmp_path):
    run = _audit_run(tmp_path / "a", "easy", {("alignment", ""): 4.2, ("distinguishability", "retrieved"): 0.7,
                                              ("distinguishability", "retrieved-reversed"): 0.1, ("quality", ""): 3.0})
    rows, offline = audit_means([run], ["hard", "easy"])
    assert [(r["metric"], r["mean"]) for r in rows] == [("alignment", 4.2), ("distinguishability", 0.7),
                                                        ("quality", 3.0)]
    assert offline == ["overlap"]
    assert audit_means([run], ["other"])[0] == []


def _write_beir(folder, name_offset=0):
    folder.mkdir(parents=True)
    topics = ["volcano", "glacier", "orchid", "falcon", "copper", "violin"]
    with (folder / "corpus.jsonl").open("w") as f:
        for i, t in enumerate(topics):
            f.write(json.dumps({"_id": f"d{i}", "title": t, "text": f"The {t} is described in passage {i}."}) + "\n")
    with (folder / "queries.jsonl").open("w") as f:
        for i, t in enumerate(topics):
            f.write(json.dumps({"_id": f"c{i}:1", "text": f"tell me about the {t}"}) + "\n")
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                               + "".join(f"c{i}:1\td{(i + name_offset) % 6}\t1\n" for i in range(6)))


def test_cli_compare_two_beir_folders(tmp_path):
    _write_beir(tmp_path / "right")                 # qrels match the topic -> BM25 finds them
    _write_beir(tmp_path / "shifted", 1)            # qrels point at the next topic's passage
    audit = _audit_run(tmp_path / "audit", "right", {("alignment", ""): 3.5})
    out = tmp_path / "cmp"
    r = CliRunner().invoke(app, ["compare", "-b", str(tmp_path / "right"), "-b", str(tmp_path / "shifted"), "-f", "beir",
                                 "--retriever", "bm25", "--retriever", "dense", "--query-mode", "last_turn",
                                 "--audit", str(audit), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / "figure2b.png").is_file() and (out / "figure2a.png").is_file() and (out / "comparison.md").is_file()
    data = json.loads((out / "comparison.json").read_text())
    s = {(x["benchmark"], x["retriever"]): x for x in data["scores"]}
    assert s[("right", "bm25")]["recall_20"] == 1.0
    assert data["audit"][0]["mean"] == 3.5 and data["audit_offline_judges"] == ["overlap"]
    r = CliRunner().invoke(app, ["compare", "-b", str(tmp_path / "right"), "-f", "beir", "--retriever", "bm25"])
    assert r.exit_code != 0 and "two --retriever" in str(r.exception)

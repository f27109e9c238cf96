"""nprobe "auto": the IVF kNN raises nprobe until a seeded sample of queries reaches the recall target."""
import numpy as np
import pytest
from pydantic import ValidationError

import clustering.knn.ivf as ivf_mod
from clustering.greedy import ClusterConfig
from clustering.knn import build_knn, load_knn, save_knn
from clustering.knn.exact import knn
from clustering.knn.ivf import calibration_sample, ivf_knn, nprobe_ladder


def _noisy(n=3000, d=32, centers=6, noise=1.0, seed=3):
    """Weakly clustered vectors: neighbours spread over many IVF cells (nprobe 8 recalls ~0.67)."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centers, d))
    x = c[rng.integers(0, centers, n)] + noise * rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _recall(approx, exact, k=10):
    return float(np.mean([len(set(a[:k].tolist()) & set(e[:k].tolist())) / k for a, e in zip(approx, exact)]))


def _exact_rows(x, rows, k=10):
    """Brute force, independent of clustering.knn: top-k of x[rows] against x, self excluded."""
    s = x[rows] @ x.T
    s[np.arange(len(rows)), rows] = -np.inf
    return np.argsort(-s, axis=1, kind="stable")[:, :k]


def test_auto_reaches_the_target_where_nprobe_8_does_not():
    x = _noisy()
    exact, _ = knn(x, k=10)
    g8 = build_knn(x, k=20, exact_max=100, nprobe=8)
    g = build_knn(x, k=20, exact_max=100, nprobe="auto", target_recall=0.95)
    assert _recall(g8.neighbors, exact) < 0.8
    p = g.params
    assert p["nprobe_auto"] and p["nlist"] == g8.params["nlist"]      # one quantizer, trained for nprobe 8
    assert np.array_equal(g.ivf.centroids, g8.ivf.centroids)
    assert p["nprobe"] > 8 and p["nprobe"] == g.ivf.nprobe == g.ivf.calibration.nprobe
    assert p["sample_recall"] >= 0.95 and p["target_recall"] == 0.95 and p["sample_size"] == 1000
    curve = p["recall_curve"]
    assert [s for s, _ in curve] == nprobe_ladder(p["nlist"])[:len(curve)] and curve[0][0] == 8
    assert all(r < 0.95 for _, r in curve[:-1]) and curve[-1] == [p["nprobe"], p["sample_recall"]]
    assert _recall(g.neighbors, exact) >= 0.95                         # the whole graph, not just the sample
    # a stricter target takes more cells
    assert build_knn(x, k=20, exact_max=100, target_recall=0.99).params["nprobe"] > p["nprobe"]


def test_recorded_sample_recall_is_the_graphs_recall_on_the_sample():
    x = _noisy(n=2500, centers=20, noise=1.5)
    g = build_knn(x, k=20, exact_max=100, nprobe="auto", seed=2)
    cal = g.ivf.calibration
    rows = calibration_sample(len(x), 1000, seed=2)
    assert np.array_equal(cal.sample, rows)
    exact = _exact_rows(x, rows)
    assert _recall(g.neighbors[rows], exact) == pytest.approx(cal.recall, abs=1e-12)
    # every step of the curve is the recall of the cell-batched search at that nprobe, same quantizer
    for nprobe, r in cal.curve:
        approx, _, _ = ivf_knn(x, k=20, nprobe=nprobe, ivf=g.ivf)
        assert _recall(approx[rows], exact) == pytest.approx(r, abs=1e-12)


def test_calibration_is_deterministic_and_seeded():
    x = _noisy(n=2000)
    a = build_knn(x, k=15, exact_max=100)
    b = build_knn(x, k=15, exact_max=100)
    assert np.array_equal(a.neighbors, b.neighbors)
    drop = lambda p: {k: v for k, v in p.items() if k != "calibration_s"}   # noqa: E731
    assert drop(a.params) == drop(b.params)
    assert not np.array_equal(calibration_sample(2000, 500, seed=0), calibration_sample(2000, 500, seed=1))


def test_explicit_nprobe_bypasses_calibration(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("calibrated although nprobe was given")
    monkeypatch.setattr(ivf_mod, "calibrate_nprobe", boom)
    x = _noisy(n=2000)
    g = build_knn(x, k=15, exact_max=100, nprobe=8)
    assert g.params == {"k": 15, "nlist": ivf_mod.auto_nlist(2000, 8), "nprobe": 8, "seed": 0}
    assert g.ivf.calibration is None and g.ivf.nprobe == 8
    assert np.array_equal(g.neighbors, ivf_knn(x, k=15, nprobe=8)[0])
    with pytest.raises(AssertionError, match="calibrated"):
        build_knn(x, k=15, exact_max=100)


def test_exact_path_is_not_calibrated(monkeypatch):
    monkeypatch.setattr(ivf_mod, "calibrate_nprobe", lambda *a, **k: pytest.fail("calibrated the exact path"))
    g = build_knn(_noisy(n=300), k=10, exact_max=300)
    assert g.method == "exact" and g.params == {"k": 10}


def test_calibrated_graph_persists_and_reloads_with_its_nprobe(tmp_path):
    x = _noisy(n=2000)
    g = build_knn(x, k=15, exact_max=100)
    save_knn(tmp_path, g, {"k": 15, "nprobe": "auto"})
    back = load_knn(tmp_path, {"k": 15, "nprobe": "auto"})
    assert back.loaded and back.params == g.params and back.ivf.nprobe == g.params["nprobe"] > 8
    assert np.array_equal(np.asarray(back.neighbors), g.neighbors)


def test_ladder_and_config():
    assert nprobe_ladder(319) == [8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 319]
    assert nprobe_ladder(20) == [8, 12, 16, 20] and nprobe_ladder(5) == [5] and nprobe_ladder(8) == [8]
    assert ClusterConfig().nprobe == "auto" and ClusterConfig().target_recall == 0.95
    assert ClusterConfig(nprobe=16).nprobe == 16 and ClusterConfig(nprobe="32").nprobe == 32
    for bad in ({"nprobe": 0}, {"nprobe": "fast"}, {"target_recall": 0}, {"target_recall": 1.5}):
        with pytest.raises(ValidationError):
            ClusterConfig(**bad)

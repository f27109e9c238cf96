"""The GPU kNN path on a real CUDA device (skipped without one; run on the lent GPU machine,
see README "GPU"). The same algorithm is tested on the CPU in test_knn_scale.py."""
import numpy as np
import pytest

from clustering.knn import build_knn, knn, torch_cuda_available, torch_knn

pytestmark = pytest.mark.skipif(not torch_cuda_available(), reason="torch sees no CUDA device")


def _blobs(n, d=64, centers=30, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centers, d))
    x = c[rng.integers(0, centers, n)] + 0.5 * rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("shard_rows,block_bytes", [(None, None), (700, 4 * 700 * 37)])
def test_cuda_torch_knn_is_the_exact_graph(shard_rows, block_bytes):
    x = _blobs(3000)
    ref_i, ref_s = knn(x, k=20)
    idx, sims = torch_knn(x, k=20, device="cuda", shard_rows=shard_rows, max_block_bytes=block_bytes)
    assert np.allclose(sims, ref_s, atol=1e-5)
    assert (idx == ref_i).mean() > 0.999
    assert not (idx == np.arange(3000)[:, None]).any()


def test_build_knn_auto_takes_the_gpu_above_exact_max():
    x = _blobs(2500)
    g = build_knn(x, k=10, exact_max=1000, device="auto")
    assert g.method == "gpu-exact" and g.params["backend"] in ("torch", "faiss")
    ref, _ = knn(x, k=10)
    assert np.mean([len(set(a) & set(b)) / 10 for a, b in zip(g.neighbors.tolist(), ref.tolist())]) > 0.999

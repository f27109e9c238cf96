"""Zero-copy vector reads of fixed-size-list columns."""
import numpy as np
import pyarrow as pa

from embedding.vectors import vectors_of


def _unit(n, d, seed=0):
    x = np.random.default_rng(seed).normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_vectors_of_is_zero_copy_for_one_chunk_and_correct_for_many():
    x = _unit(100, 8)
    col = pa.FixedSizeListArray.from_arrays(pa.array(x.ravel(), pa.float32()), 8)
    v = vectors_of(pa.chunked_array([col]))
    assert np.array_equal(v, x)
    assert v.__array_interface__["data"][0] == col.values.buffers()[1].address     # no copy
    many = pa.chunked_array([col.slice(0, 30), col.slice(30, 70)])
    assert np.array_equal(vectors_of(many), x)
    assert np.array_equal(vectors_of(col.slice(10, 5)), x[10:15])

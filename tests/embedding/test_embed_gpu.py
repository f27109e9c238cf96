"""The encoder's device defaults on a real CUDA device (skipped without one; run on the lent GPU
machine, see README "GPU")."""
import pytest

from embedding.encoder import batch_size_for, resolve_device


def _cuda() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch or a broken CUDA setup
        return False


pytestmark = pytest.mark.skipif(not _cuda(), reason="torch sees no CUDA device")


def test_embed_auto_device_is_cuda():
    assert resolve_device("auto") == "cuda" and batch_size_for("cuda") == 256

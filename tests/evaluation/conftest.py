from __future__ import annotations

from pathlib import Path

import pytest

MTRAG = Path(__file__).resolve().parents[1] / "data" / "mtrag"


@pytest.fixture(scope="session")
def mtrag_dir() -> Path:
    """The MTRAG test data copied into the repository (never ../shared)."""
    assert (MTRAG / "NOTICE.md").is_file(), f"missing test data at {MTRAG}"
    return MTRAG

import pytest

from flows.config import load_config
from common.errors import UserError


def test_toml_yaml_and_overrides(tmp_path):
    t = tmp_path / "c.toml"
    t.write_text('[chunk]\nmax_size = 512\n[cluster]\nsize = 4\n')
    cfg = load_config(t, {"cluster.seed": 7, "chunk.min_size": None})
    assert (cfg.chunk.max_size, cfg.cluster.size, cfg.cluster.seed) == (512, 4, 7)
    y = tmp_path / "c.yaml"
    y.write_text("dedup:\n  threshold: 0.7\n")
    assert load_config(y).dedup.threshold == 0.7


def test_unknown_keys_and_bad_values_rejected(tmp_path):
    t = tmp_path / "c.toml"
    t.write_text("[chunk]\nmax_sise = 512\n")
    with pytest.raises(UserError, match=r"chunk\.max_sise: unknown key"):
        load_config(t)
    t.write_text("[cluster]\nsize = 1\n")
    with pytest.raises(UserError, match="cluster.size"):
        load_config(t)
    t.write_text("[chunk\n")
    with pytest.raises(UserError, match="could not be parsed"):
        load_config(t)
    with pytest.raises(UserError, match="does not exist"):
        load_config(tmp_path / "missing.toml")

"""The offline backend's settings: one typed section, ``[synth.offline]``, and what becomes of the flat keys of
before the rebuild."""
import pytest
from pydantic import ValidationError

from agents.synth.config import OfflineConfig, SynthConfig


def test_the_offline_section_is_typed_and_closed():
    cfg = SynthConfig(offline={"pronoun_share": 0.3, "history_need_retriever": "dense"})
    assert cfg.offline.pronoun_share == 0.3 and cfg.offline.history_need_retriever == "dense"
    with pytest.raises(ValidationError):
        SynthConfig(offline={"pronoun_shares": 0.3})
    with pytest.raises(ValidationError):
        OfflineConfig(pronoun_share=1.5)


def test_flat_keys_of_before_move_into_the_section_and_removed_ones_say_so():
    cfg = SynthConfig(offline_pronoun_share=0.25, offline_history_need_weight=0.0)
    assert cfg.offline.pronoun_share == 0.25 and cfg.offline.history_need_weight == 0.0
    with pytest.raises(ValidationError, match="removed with the sentence-based offline generator"):
        SynthConfig(offline_yesno_share=0.5)


def test_unanswerable_turns_by_default():
    assert SynthConfig().unanswerable_ratio == pytest.approx(0.06)

"""roperef.hf.release: the tables name their transformers release, and a reading under another installed
release says so; a model type whose RoPE changed between the two releases is refused with the change."""

from __future__ import annotations

import pytest

from roperef.hf import families, families_5_25_0, model_rope, release

LLAMA = {"model_type": "llama", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
         "rope_theta": 5e5}
HY_V4 = {"model_type": "hy_v4", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 2,
         "head_dim": 128, "rope_theta": 1e4}


def test_tables_name_their_release():
    assert families.TRANSFORMERS_VERSION == "5.24.0"
    assert families_5_25_0.TRANSFORMERS_VERSION == "5.25.0"
    assert set(release.FAMILY_TABLES) == {"5.24.0", "5.25.0"}


def test_rope_changes_between_5_24_and_5_25():
    """The diff of the two generated tables: hy_v4's pairing switch (main and indexer attention) and the
    model types 5.25 added; llama is unchanged."""
    changes = release.rope_changes(families, families_5_25_0)
    assert changes["hy_v4"] == ("rope half, indexer half", "rope adjacent_in_half_out, indexer adjacent_in_half_out")
    assert changes["ergo"] == ("not shipped", "rope adjacent")
    assert "llama" not in changes


def test_same_release_says_nothing():
    assert release.release_check("hy_v4", families.TRANSFORMERS_VERSION) == release.ReleaseCheck()
    assert release.release_check("hy_v4", None) == release.ReleaseCheck()


def test_other_release_notes_and_refuses_changed_types(monkeypatch):
    monkeypatch.setattr(release, "installed_transformers", lambda: "5.25.0")
    mr = model_rope(LLAMA)
    assert any("tables describe transformers 5.24.0; transformers 5.25.0 is installed" in n for n in mr.notes)
    with pytest.raises(ValueError, match=r"model_type='hy_v4': model_type 'hy_v4' changed between transformers "
                                         r"5.24.0 and 5.25.0 \(rope half"):
        model_rope(HY_V4)


def test_release_without_table_names_the_regenerate_command(monkeypatch):
    monkeypatch.setattr(release, "installed_transformers", lambda: "5.99.0")
    mr = model_rope(LLAMA)
    assert any("no table of 5.99.0 is checked in" in n and "scripts/gen_hf_families.py" in n for n in mr.notes)
    model_rope(HY_V4)  # no table to compare with: read by the 5.24 rule, with the note

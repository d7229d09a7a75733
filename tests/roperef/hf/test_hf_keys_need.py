"""Level.need_num / need_int: a key the caller knows is present, with a clear error when it is not."""

import pytest

from roperef.hf.keys import Level


def test_need_num_and_need_int_return_the_config_value_or_the_default():
    c = Level({"rope_theta": 500000, "num_layers": 3}, "text_config.", "llama", defaults={"rotary_dim": 64})
    assert c.need_num("rope_theta") == 500000.0
    assert isinstance(c.need_num("rope_theta"), float)
    assert c.need_int("num_layers") == 3
    assert c.need_int("rotary_dim") == 64  # from the model type's defaults


def test_an_absent_key_names_the_dotted_key():
    c = Level({"rope_theta": None}, "text_config.", "llama")
    missing = r": is required: a value is missing; give it with --set "
    with pytest.raises(ValueError, match=rf"^text_config\.rope_theta=None{missing}text_config\.rope_theta=VALUE$"):
        c.need_num("rope_theta")
    with pytest.raises(ValueError, match=rf"^text_config\.num_layers=None{missing}text_config\.num_layers=VALUE$"):
        c.need_int("num_layers")


def test_a_bad_value_keeps_the_number_rules():
    c = Level({"rope_theta": "1e4", "num_layers": 0}, "", "llama")
    with pytest.raises(TypeError, match=r"^rope_theta='1e4': must be a number"):
        c.need_num("rope_theta")
    with pytest.raises(ValueError, match=r"^num_layers=0"):
        c.need_int("num_layers")

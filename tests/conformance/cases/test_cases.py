"""The case catalogue: ids, tiers, coverage, position regimes, inputs, and the reference/fast agreement."""

from __future__ import annotations

import json
from collections import Counter

import ml_dtypes
import numpy as np
import pytest

from conformance.cases.case import CaseRecipe, GoldenCase, check_case_fields
from conformance.cases.catalog import presets_dir
from conformance.cases.materialize import DisagreementError, catalogue, materialize, recipe_positions
from conformance.selection import select
from conformance.vocabulary import DTYPES, FAMILIES, FLAGS, USER_TIER
from roperef.spec import PAIRINGS, SCALING_TYPES, RopeSpec

SMOKE = catalogue("smoke")
FULL = catalogue("full")
FORWARD_LIKE = ("forward", "backward")


def test_ids_unique_well_formed_and_flags_known():
    for cases in (SMOKE, FULL):
        ids = [c.id for c in cases]
        assert len(ids) == len(set(ids))
    for c in FULL:
        family, variant, pairing, dtype, shape, positions = c.id.split("/")
        assert (family, pairing, dtype) == (c.family, c.spec.pairing, c.dtype)
        assert set(c.flags) <= set(FLAGS)
        assert c.seed == __import__("zlib").crc32(c.id.encode())


def test_full_tier_contains_smoke_and_is_bigger():
    assert {c.id for c in SMOKE} < {c.id for c in FULL}
    assert all(c.tier == "smoke" for c in SMOKE)


def test_smoke_covers_every_family_scaling_pairing_dtype():
    assert {c.family for c in SMOKE} == set(FAMILIES)
    assert {c.spec.scaling.type for c in SMOKE} == set(SCALING_TYPES)
    assert {c.spec.pairing for c in SMOKE} == set(PAIRINGS)
    assert {c.dtype for c in SMOKE} == set(DTYPES)
    grid = {(c.spec.scaling.type, c.spec.pairing, c.dtype) for c in SMOKE if c.family == "forward"}
    for kind in SCALING_TYPES:
        for pairing in ("half", "adjacent"):
            for dtype in DTYPES:
                assert (kind, pairing, dtype) in grid
    # every scaling type meets every plain position regime in the smoke forward family
    regimes = {(c.spec.scaling.type, c.positions) for c in SMOKE if c.family == "forward"}
    assert len(regimes) == len(SCALING_TYPES) * 6


def test_every_forward_like_case_exposes_low_precision_positions():
    """Odd positions around 4095 and positions > 256 in every forward/backward case (bf16 bugs visible)."""
    for c in SMOKE:
        if c.stage not in FORWARD_LIKE:
            continue
        pos, _ = recipe_positions(c)
        values = set(np.unique(pos).tolist())
        assert {4093, 4095} <= values, c.id
        assert max(values) > 256, c.id
        assert any(v % 2 and v >= 1 for v in values), c.id


def test_position_regimes_follow_rope_spec_section_6():
    by_regime: dict[str, list] = {}
    for c in SMOKE:
        if c.family == "forward":
            by_regime.setdefault(c.positions, []).append(recipe_positions(c))
    assert set(by_regime) == {"short", "long-odd", "near-2p31", "offsets", "decode", "varlen"}
    for pos, _ in by_regime["near-2p31"]:
        assert pos.max() == 2**31 - 1
    for pos, _ in by_regime["long-odd"]:
        assert pos.max() == 2**20 - 1 and (pos % 2 == 1).all()
    for pos, _ in by_regime["offsets"]:
        assert pos.min() < 0 and len({int(r[0]) for r in pos}) == pos.shape[0]
    for pos, _ in by_regime["decode"]:
        assert pos.shape[1] == 1 and pos.shape[0] > 1 and len(set(pos.ravel().tolist())) == pos.shape[0]
    for pos, cu in by_regime["varlen"]:
        lengths = np.diff(cu)
        assert len(lengths) >= 5 and 1 in lengths and len(set(lengths.tolist())) > 1
        assert cu[-1] == pos.shape[0]
    for pos, _ in by_regime["short"]:
        assert pos[0, 0] == 0 and pos.max() == 4095  # seq_len = 4096 = L0 boundary


def test_model_family_has_a_case_per_distinct_preset_spec_with_real_head_dim():
    """Every spec of every preset is judged, once: by the first preset (alphabetically) that resolves to it."""
    from roperef.hf import model_rope

    files = sorted(presets_dir().glob("*.json"))
    assert len(files) >= 20
    model = [c for c in SMOKE if c.family == "model"]
    by_name: dict[str, list] = {}
    for c in model:
        by_name.setdefault(c.id.split("/")[1], []).append(c)
    first: dict[RopeSpec, str] = {}
    for path in files:
        resolved = model_rope(json.loads(path.read_text()))
        specs = {"": resolved.specs["text"]} if list(resolved.specs) == ["text"] else dict(resolved.specs)
        if not resolved.has_rope:
            assert not [n for n in by_name if n.split("@")[0] == path.stem], path.stem
        for key, spec in sorted(specs.items()):
            name = path.stem + (f"@{key}" if key else "")
            if spec in first:  # an earlier preset's case judges this spec already
                assert name not in by_name, (name, first[spec])
                continue
            first[spec] = name
            mine = by_name.get(name, [])
            assert {c.positions for c in mine} in ({"short", "long-odd"}, {"text-image", "long-odd"},
                                                   {"grid", "long-odd"}), name
            assert all(c.spec == spec and c.shape[-1] == spec.head_dim for c in mine), name
    assert set(by_name) == set(first.values())  # no model case without its preset


def test_select_glob_substring_and_alternatives():
    ids = [c.id for c in select(SMOKE, "forward/yarn/*")]
    assert ids and all(i.startswith("forward/yarn/") for i in ids)
    assert all("bfloat16" in c.id for c in select(SMOKE, "bfloat16"))
    both = select(SMOKE, "freq/linear*, table/")
    assert {c.family for c in both} == {"freq", "table"}
    assert select(SMOKE, None) == SMOKE and select(SMOKE, "") == SMOKE
    assert select(SMOKE, "no-such-case") == []


def _one(pattern: str) -> CaseRecipe:
    found = select(SMOKE, pattern)
    assert found, pattern
    return found[0]


def test_materialize_is_deterministic_and_inputs_exact_in_dtype():
    for dtype in DTYPES:
        recipe = _one(f"forward/default/half/{dtype}/*")
        a, b = materialize(recipe), materialize(recipe)
        for name in a.arrays:
            assert a.arrays[name].tobytes() == b.arrays[name].tobytes()
        x = a.arrays["x"]
        assert x.dtype == np.float64
        np.testing.assert_array_equal(x.astype(a.input_as("x").dtype).astype(np.float64), x)
    bf = materialize(_one("forward/*/bfloat16/*")).arrays["x"]
    assert np.array_equal(bf.astype(ml_dtypes.bfloat16).astype(np.float64), bf)
    assert ((bf.astype(np.float32).view(np.uint32) & 0xFFFF) == 0).all()  # 8 significant bits: bfloat16
    f32 = materialize(_one("forward/*/float32/*")).arrays["x"]
    assert not ((f32.astype(np.float32).view(np.uint32) & 0xFFFF) == 0).all()


def test_scales_and_zeros():
    big = materialize(_one("*-x1000")).arrays["x"]
    small = materialize(_one("*-x0.001")).arrays["x"]
    zeros = materialize(_one("*-zeros")).arrays["x"]
    assert 100 < np.abs(big).max() < 65504
    assert 1e-4 < np.abs(small).max() < 1e-2
    assert (zeros == 0).sum() > 0.05 * zeros.size


def test_expected_matches_an_independent_complex_rotation():
    """forward/default/half/float64: y = x_pair * exp(i p w), computed here with complex numbers."""
    case = materialize(_one("forward/default/half/float64/b2-s16*"))
    x, pos, y = case.arrays["x"], case.arrays["positions"], case.arrays["y"]
    n = x.shape[-1] // 2
    w = 10000.0 ** (-(2.0 * np.arange(n)) / (2 * n))
    z = (x[..., :n] + 1j * x[..., n:]) * np.exp(1j * (pos[..., None, None] * w))
    want = np.concatenate([z.real, z.imag], axis=-1)
    # complex exp rounds p*w once: error ~ 2^-53 |p w|, so compare loosely at these positions
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-9 * max(1.0, float(np.abs(pos).max()) / 4096))


def test_disagreement_between_reference_and_fast_is_refused(monkeypatch):
    from roperef import fast

    recipe = _one("forward/linear/half/float32/*")
    original = fast.forward

    def skewed(*args, **kwargs):
        y = original(*args, **kwargs)
        return y * (1 + 2.0**-45)

    monkeypatch.setattr(fast, "forward", skewed)
    with pytest.raises(DisagreementError, match=recipe.id.replace("/", "/")):
        materialize(recipe)


def test_recipe_validation_names_the_problem():
    good = SMOKE[0]
    with pytest.raises(ValueError, match="flags"):
        CaseRecipe(**{**good.__dict__, "flags": ("not-a-flag",)})
    with pytest.raises(ValueError, match="tier"):
        CaseRecipe(**{**good.__dict__, "tier": "huge"})
    with pytest.raises(ValueError, match="case id"):
        CaseRecipe(**{**good.__dict__, "id": "too/short"})


def test_golden_case_and_recipe_share_one_validator():
    """GoldenCase checks the same fields the same way as CaseRecipe (and golden.read_manifest), but for the
    id's six-part shape, which only a catalogue id (a recipe, a manifest entry) must have."""
    case = materialize(_one("forward/default/half/float32/b2-s16-h2-d64/near-2p31"))
    fields = dict(id=case.id, family=case.family, stage=case.stage, spec=case.spec, dtype=case.dtype,
                  tier=case.tier, flags=case.flags, arrays=case.arrays)
    args = dict(case_id=case.id, family=case.family, stage=case.stage, dtype=case.dtype, tier=case.tier, flags=case.flags)
    check_case_fields(**args)
    with pytest.raises(ValueError, match="case id='too/short'"):  # a catalogue id has six parts
        check_case_fields(**{**args, "case_id": "too/short"})
    assert GoldenCase(**{**fields, "id": "too/short"}).id == "too/short"  # a case built in memory keeps its id
    for key, value, words in (("flags", ("not-a-flag",), "flag vocabulary"), ("tier", "huge", "tier='huge'"),
                              ("family", "nope", "family='nope'"),
                              ("stage", "rotate", "stage='rotate'"), ("dtype", "float8", "dtype='float8'"),
                              ("flags", "odd-position", "must be a list of strings"),
                              ("id", "forward/a b/half/float32/s/p", "without whitespace")):
        with pytest.raises(ValueError, match=words):
            GoldenCase(**{**fields, key: value})
        with pytest.raises(ValueError, match=words):
            check_case_fields(**{**args, ("case_id" if key == "id" else key): value})
    # a user's case keeps its own words: any id without whitespace, any flags
    own = GoldenCase(**{**fields, "id": "my-case", "tier": USER_TIER, "flags": ("mine", "fp8-path")})
    assert own.flags == ("mine", "fp8-path")
    with pytest.raises(ValueError, match="without whitespace"):
        GoldenCase(**{**fields, "id": "my case", "tier": USER_TIER})


def test_family_counts_are_reasonable():
    counts = Counter(c.family for c in SMOKE)
    assert counts["forward"] >= 64 and counts["model"] >= 2 * 40 and counts["freq"] >= 15

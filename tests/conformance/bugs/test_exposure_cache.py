"""The exposure rules' disk cache (conformance/bugs/exposure_cache.py): the same answers as the rules,
a damaged file ignored, an unwritable directory harmless, keyed by the sources, and ``roperef check``
giving the same JSON report with and without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_runs import run_check
from conformance.backends.resolve import resolve_backend
from conformance.bugs.catalogue import CATALOGUE
from conformance.bugs.exposure_cache import SOURCES, ExposureCache, cache_directory, source_key
from conformance.bugs.facts import case_facts
from conformance.calls.declared import Interface
from conformance.generated.plan import plan_cases


def _pairs(n: int = 40) -> list[tuple[Any, Any]]:
    """(class, facts) pairs of the built-in backend's first generated cases (light: facts need positions only)."""
    b = resolve_backend("numba")
    iface = Interface.of(b)
    out = []
    for g in plan_cases(b, ask_backend=False, shapes=False).cases[:n]:
        facts = case_facts(g.light, iface.precision(g.dtype))
        out += [(cls, facts) for cls in CATALOGUE if cls.occurs_in(g.light)]
    return out


def test_answers_equal_the_rules_and_come_back_from_disk(tmp_path: Path) -> None:
    pairs = _pairs()
    direct = [bool(cls.exposed(f)) for cls, f in pairs]
    assert any(direct) and not all(direct)  # the sample holds both answers: a constant cache would fail
    first = ExposureCache.open(tmp_path)
    assert [first.exposed(cls, f) for cls, f in pairs] == direct
    assert first.hits + first.misses == len(pairs) and first.misses > 0
    assert first.save() and first.path is not None and first.path.exists()
    again = ExposureCache.open(tmp_path)
    assert again.ignored is None
    assert [again.exposed(cls, f) for cls, f in pairs] == direct
    assert again.misses == 0 and again.hits == len(pairs)
    assert not again.save()  # nothing new: nothing written


def test_a_damaged_file_is_ignored_and_recomputed(tmp_path: Path) -> None:
    pairs = _pairs(10)
    cache = ExposureCache.open(tmp_path)
    for cls, f in pairs:
        cache.exposed(cls, f)
    cache.save()
    assert cache.path is not None
    data = json.loads(cache.path.read_text())
    key, value = next(iter(data["entries"].items()))
    data["entries"][key] = not value  # a flipped answer, the hash left as it was
    cache.path.write_text(json.dumps(data))
    flipped = ExposureCache.open(tmp_path)
    assert flipped.ignored is not None and "damaged" in flipped.ignored and flipped.entries == {}
    assert [flipped.exposed(cls, f) for cls, f in pairs] == [bool(cls.exposed(f)) for cls, f in pairs]
    for junk in ("not json", "[1, 2]", '{"entries": {"k": 1}, "sha256": "x"}'):
        cache.path.write_text(junk)
        assert ExposureCache.open(tmp_path).entries == {}


def test_an_unwritable_directory_means_no_cache_and_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory would be")
    cache = ExposureCache.open(blocker / "sub")
    cls, f = _pairs(2)[0]
    assert cache.exposed(cls, f) == bool(cls.exposed(f))
    assert cache.save() is False


def test_directory_follows_xdg_cache_home() -> None:
    assert cache_directory({"XDG_CACHE_HOME": "/x/y"}) == Path("/x/y/roperef/exposure")
    assert cache_directory({"XDG_CACHE_HOME": ""}) == Path.home() / ".cache" / "roperef" / "exposure"


def test_the_key_changes_with_any_source(tmp_path: Path) -> None:
    for name in SOURCES:
        p = tmp_path / name
        (p.parent if name.endswith(".py") else p).mkdir(parents=True, exist_ok=True)
        (p if name.endswith(".py") else p / "m.py").write_text("x = 1\n")
    keys = {source_key(tmp_path)}
    for k, name in enumerate(SOURCES):  # an edit in each source gives a key never seen before
        p = tmp_path / name
        (p if name.endswith(".py") else p / "m.py").write_text(f"x = {k + 2}\n")
        keys.add(source_key(tmp_path))
        assert len(keys) == k + 2, name
    assert source_key() not in keys  # the real tree


def _without_timings(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _without_timings(v) for k, v in obj.items() if k not in ("seconds", "environment", "command")}
    if isinstance(obj, list):
        return [_without_timings(v) for v in obj]
    return obj


@pytest.mark.parametrize("filt", ["freq/*,forward/default/half/float32/*"])
def test_check_reports_are_identical_cached_and_uncached(capsys: Any, tmp_path: Path, monkeypatch: Any, filt: str) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    reports = []
    for k in range(2):  # the first run fills the cache, the second reads it
        out = tmp_path / f"r{k}.json"
        code, _, _ = run_check(capsys, "--filter", filt, "--json", str(out), "-q")
        assert code == 0
        reports.append(json.loads(out.read_text()))
        files = list((tmp_path / "xdg" / "roperef" / "exposure").glob("*.json"))
        assert len(files) == 1
    assert len(reports[0]["results"]) > 10
    assert _without_timings(reports[0]) == _without_timings(reports[1])

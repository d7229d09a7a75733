"""Cross-check every preset (and every transformers RoPE family's default config) against transformers.

    python scripts/cross_check_presets.py                       # markdown tables on stdout
    python scripts/cross_check_presets.py --update docs/hf-configs.md   # rewrite the generated section there
    python scripts/cross_check_presets.py --allow hunyuan-a13b-instruct  # exit 0 despite that DIFFER

Per preset: the model type, roperef's RoPE entries and layers, and the verdict of
:func:`conformance.hf.crosscheck.cross_check` (AGREE / DIFFER / NOT_CHECKED) with the items that are not
AGREE. Then a count over the default configs of :data:`roperef.hf.families.ROPE_FAMILIES`, and the
per-family table of their minimal published-style configs (:mod:`conformance.hf.published_style`).
Exit status 1 when a preset DIFFERs and is not ``--allow``-ed. Needs torch and transformers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.cases.catalog import presets_dir  # noqa: E402 - imported after sys.path gains the repo root
from conformance.hf.crosscheck import cross_check  # noqa: E402 - imported after sys.path gains the repo root
from conformance.hf.preset_coverage import coverage, remote_code_presets  # noqa: E402 - imported after sys.path gains the repo root
from conformance.hf.published_style import check_family, families_to_check, same_as  # noqa: E402 - imported after sys.path gains the repo root
from roperef.hf import families as fam  # noqa: E402 - imported after sys.path gains the repo root
from roperef.hf import model_rope  # noqa: E402 - imported after sys.path gains the repo root

BEGIN, END = "<!-- cross-check:begin (scripts/cross_check_presets.py) -->", "<!-- cross-check:end -->"


def _entries(path: Path) -> tuple[str, str]:
    mr = model_rope(path)
    if not mr.has_rope:
        return "no RoPE", f"{len(mr.layers)} layers, none with RoPE" if mr.layers else "-"
    names = ", ".join(mr.specs)
    if not mr.layers:
        return names, "-"
    counts = Counter("no RoPE" if n is None else n for n in mr.layers)
    return names, ", ".join(f"{k} {v}" for k, v in counts.items())


def preset_table(folder: Path) -> tuple[list[str], Counter, list[str]]:
    rows = ["| preset | model_type | RoPE entries | layers | verdict | items not AGREE |",
            "|---|---|---|---|---|---|"]
    verdicts: Counter = Counter()
    differ = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        check = cross_check(data)
        entries, layers = _entries(path)
        verdicts[check.verdict] += 1
        if check.verdict == "DIFFER":
            differ.append(path.stem)
        others = "; ".join(f"{i.entry}/{i.what} {i.verdict}: {i.transformers}"[:140] for i in check.items
                           if i.verdict in ("DIFFER", "ERROR")) or ("; ".join(check.notes)[:140] if not check.shipped else "")
        judged = sum(i.verdict == "AGREE" for i in check.items)
        verdict = f"{check.verdict} ({judged} items)" if check.shipped else check.verdict
        rows.append(f"| {path.stem} | {check.model_type} | {entries} | {layers} | {verdict} | {others} |")
    return rows, verdicts, differ


def family_table() -> tuple[list[str], Counter]:
    from transformers import AutoConfig

    verdicts: Counter = Counter()
    odd = []
    for mt in sorted(fam.ROPE_FAMILIES):
        data = AutoConfig.for_model(mt).to_dict()
        data["model_type"] = mt
        try:
            verdict = cross_check(data).verdict
        except ValueError as exc:
            verdict = "REFUSED"
            odd.append(f"| {mt} | REFUSED | {str(exc)[:120]} |")
        else:
            if verdict != "AGREE":
                odd.append(f"| {mt} | {verdict} | |")
        verdicts[verdict] += 1
    rows = ["| model_type | verdict | roperef's reason |", "|---|---|---|", *odd]
    return rows, verdicts


def published_table() -> tuple[list[str], Counter]:
    """Every RoPE family (and one composite per way of reading one) from its minimal published-style config
    (:mod:`conformance.hf.published_style`): one row per family, its verdict and what is not AGREE."""
    verdicts: Counter = Counter()
    rows = ["| model_type | verdict | what is not AGREE |", "|---|---|---|"]
    composites = same_as()
    for mt in families_to_check():
        result = check_family(mt)
        verdicts[result.verdict] += 1
        covers = sorted(w for w, first in composites.items() if first == mt and w != mt)
        name = mt + (f" (also {', '.join(covers)})" if covers else "")
        rows.append(f"| {name} | {result.verdict} | {result.detail[:160].replace('|', '/')} |")
    return rows, verdicts


def coverage_table(folder: Path) -> tuple[list[str], int, int]:
    """Per transformers RoPE model type: the presets of that type, or the documented gap."""
    rows = ["| model_type | presets (real published configs) |", "|---|---|"]
    table = coverage(folder)
    for fc in table:
        rows.append(f"| {fc.model_type} | {', '.join(fc.presets) if fc.covered else 'none: ' + (fc.gap or 'UNDOCUMENTED GAP')} |")
    return rows, sum(fc.covered for fc in table), len(table)


def render(folder: Path) -> tuple[str, list[str]]:
    import transformers

    start = time.perf_counter()
    rows, verdicts, differ = preset_table(folder)
    fam_rows, fam_verdicts = family_table()
    pub_rows, pub_verdicts = published_table()
    cov_rows, covered, families = coverage_table(folder)
    remote = remote_code_presets(folder)
    took = time.perf_counter() - start
    text = "\n".join([
        BEGIN,
        f"Generated with transformers {transformers.__version__} on {len(rows) - 2} presets: "
        + ", ".join(f"{v} {k}" for k, v in sorted(verdicts.items())) + ".",
        "",
        *rows,
        "",
        f"Default configs of the {sum(fam_verdicts.values())} RoPE model types of "
        f"`roperef.hf.families.ROPE_FAMILIES` (transformers' own `AutoConfig.for_model(model_type)`): "
        + ", ".join(f"{v} {k}" for k, v in sorted(fam_verdicts.items())) + "; the others:",
        "",
        *fam_rows,
        "",
        f"Every RoPE family from a minimal published-style config (`conformance/hf/published_style.py`: the sizes a "
        f"checkpoint writes, the RoPE the legacy way, the rest left to the config class; a composite's text_config "
        f"without sizes), {sum(pub_verdicts.values())} checked: "
        + ", ".join(f"{v} {k}" for k, v in sorted(pub_verdicts.items()))
        + " (why each is not AGREE: `tests/roperef/hf/test_hf_published_style.py` `PUBLISHED_NOT_AGREE`):",
        "",
        *pub_rows,
        "",
        f"Coverage: {covered} of the {families} RoPE model types of `ROPE_FAMILIES` have a real published config "
        f"in the corpus (`conformance/hf/preset_coverage.py`); the others name the reason "
        f"(`conformance/hf/preset_gaps.py`). Remote-code families (model types transformers does not ship): "
        + ", ".join(f"{stem} (`{mt}`)" for stem, mt in remote) + ".",
        "",
        *cov_rows,
        "",
        "The model types of `ROPE_FAMILIES`, by the pairing their attention applies:",
        "",
        *[f"- **{kind}**: " + ", ".join(sorted(mt for mt, (p, _d, _s) in fam.ROPE_FAMILIES.items() if p == kind))
          for kind in ("half", "adjacent", "adjacent_in_half_out", "rope_interleave")],
        "",
        f"({took:.0f} s on this machine.)",
        END,
    ])
    return text, differ


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--presets", default=None, help="preset folder (default: conformance/presets)")
    p.add_argument("--update", type=Path, default=None, help="replace the generated section of this markdown file")
    p.add_argument("--allow", action="append", default=[], help="a preset allowed to DIFFER (documented)")
    args = p.parse_args(argv)
    text, differ = render(presets_dir(args.presets))
    if args.update:
        doc = args.update.read_text()
        if BEGIN not in doc or END not in doc:
            print(f"{args.update}: no generated section ({BEGIN} ... {END})", file=sys.stderr)
            return 2
        head, rest = doc.split(BEGIN, 1)
        args.update.write_text(head + text + rest.split(END, 1)[1])
        print(f"updated {args.update}")
    else:
        print(text)
    unexpected = sorted(set(differ) - set(args.allow))
    if unexpected:
        print(f"DIFFER: {', '.join(unexpected)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

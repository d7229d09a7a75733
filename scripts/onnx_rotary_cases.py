#!/usr/bin/env python3
"""Convert ONNX's ``RotaryEmbedding`` node tests into a roperef case directory (docs/user-cases.md).

Usage::

    python scripts/onnx_rotary_cases.py --out DIR [--from-dir NODE_DIR] [--seed 0] [--keep-expected] [--note TEXT]

Sources:

- ``--from-dir NODE_DIR``: ONNX's node-test folders ``NODE_DIR/test_rotary_embedding*/`` (each
  ``model.onnx`` + ``test_data_set_0/input_*.pb``, ``output_0.pb``), as in an ONNX source tree
  before 2026-08 (``onnx/backend/test/data/node``) or an older onnx wheel;
- default: the installed onnx's test-case builders
  (``onnx.backend.test.case.node.collect_testcases("RotaryEmbedding")``, onnx >= 1.23 builds the
  node tests on the fly instead of shipping them); their inputs come from NumPy's legacy global
  generator, seeded with ``--seed``.

``*_expanded`` tests (the same data run through the function body) are skipped. Each test
becomes an ``apply`` case: 4-D ``input [B, H, S, D]`` -> ``x [B, S, H, D]``, 3-D ``[B, S, H*D]`` ->
``[B, S, num_heads, D]``; caches indexed by ``position_ids`` -> per-token tables
``cos_cache[position_ids]``; ``interleaved`` -> pairing ``adjacent`` (else ``half``);
``rotary_embedding_dim`` -> ``rotary_dim``. ONNX's float32 output is written as ``y.npy`` only
with ``--keep-expected``; either way it is judged against roperef's float64 answer (as a float32
engine's output) and the script exits 1 if it does not pass. Exit 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "test_rotary_embedding"


@dataclass
class OnnxTest:
    """One node test: its name, the node's attributes and input names, input arrays, output."""

    name: str
    attributes: dict[str, Any]
    input_names: list[str]
    inputs: list[np.ndarray]
    output: np.ndarray
    source: str


def _attributes(model: Any) -> tuple[dict[str, Any], list[str]]:
    import onnx

    (node,) = [n for n in model.graph.node if n.op_type == "RotaryEmbedding"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    return attrs, list(node.input)


def from_directory(node_dir: Path) -> list[OnnxTest]:
    """The node tests in ``node_dir`` (model.onnx + test_data_set_0/*.pb per test)."""
    import onnx
    from onnx import numpy_helper

    tests = []
    for folder in sorted(node_dir.glob(f"{PREFIX}*")):
        if folder.name.endswith("_expanded") or not (folder / "model.onnx").is_file():
            continue
        model = onnx.load(str(folder / "model.onnx"))
        attrs, names = _attributes(model)
        data = folder / "test_data_set_0"
        inputs = [numpy_helper.to_array(onnx.load_tensor(str(p))) for p in sorted(data.glob("input_*.pb"))]
        output = numpy_helper.to_array(onnx.load_tensor(str(data / "output_0.pb")))
        tests.append(OnnxTest(folder.name, attrs, names, inputs, output, f"{node_dir.name}/{folder.name}/model.onnx and test_data_set_0"))
    return tests


def from_installed(seed: int) -> list[OnnxTest]:
    """The node tests built by the installed onnx's case builders (NumPy's global generator seeded)."""
    import onnx

    np.random.seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # other operators' builders warn about overflows they intend
        from onnx.backend.test.case.node import collect_testcases

        cases = collect_testcases("RotaryEmbedding")
    tests = []
    for case in cases:
        if not case.name.startswith(PREFIX) or case.name.endswith("_expanded"):
            continue
        attrs, names = _attributes(case.model)
        if not case.data_sets:
            raise RuntimeError(f"onnx test case {case.name} has no data set")
        (ins, outs) = case.data_sets[0]
        source = f"onnx {onnx.__version__} onnx.backend.test.case.node.collect_testcases('RotaryEmbedding'), np.random.seed({seed})"
        tests.append(OnnxTest(case.name, attrs, names, [np.asarray(a) for a in ins], np.asarray(outs[0]), source))
    return sorted(tests, key=lambda t: t.name)


def to_case(test: OnnxTest) -> tuple[dict[str, Any], dict[str, np.ndarray], np.ndarray]:
    """(case.json document, arrays x/cos/sin, ONNX's output in the x layout) of one test."""
    named = dict(zip(test.input_names, test.inputs))
    x, cos, sin = named["input"], named["cos_cache"], named["sin_cache"]
    pos = named.get("position_ids")
    heads = int(test.attributes.get("num_heads", 0))
    interleaved = bool(test.attributes.get("interleaved", 0))
    if x.ndim == 4:
        x_bshd = np.ascontiguousarray(np.transpose(x, (0, 2, 1, 3)))
        out = np.ascontiguousarray(np.transpose(test.output, (0, 2, 1, 3)))
    else:
        b, s, hidden = x.shape
        x_bshd = x.reshape(b, s, heads, hidden // heads)
        out = test.output.reshape(x_bshd.shape)
    head_dim = x_bshd.shape[-1]
    rotary_dim = int(test.attributes.get("rotary_embedding_dim", 0)) or head_dim
    if pos is not None:
        if pos.min() < 0 or pos.max() >= cos.shape[0]:
            raise SystemExit(f"{test.name}: position_ids outside [0, {cos.shape[0]}): not a valid cache index")
        cos, sin = cos[pos], sin[pos]
    spec = {"head_dim": int(head_dim), "rotary_dim": rotary_dim, "pairing": "adjacent" if interleaved else "half"}
    flags = ["onnx", "given-tables", "position_ids" if pos is not None else "per-token-tables"]
    if rotary_dim < head_dim:
        flags.append("partial")
    attrs = ", ".join(f"{k}={v}" for k, v in sorted(test.attributes.items())) or "no attributes"
    doc = {
        "schema": "roperef-case/1",
        "id": f"onnx/{test.name}",
        "stage": "apply",
        "spec": spec,
        "dtype": str(x.dtype),
        "flags": flags,
        "description": f"ONNX RotaryEmbedding node test {test.name} (opset 23, {attrs}; input {list(x.shape)}); "
                       f"converted by scripts/onnx_rotary_cases.py from {test.source}",
    }
    return doc, {"x": x_bshd, "cos": np.ascontiguousarray(cos), "sin": np.ascontiguousarray(sin)}, out


def _judge_onnx_output(case_dir: Path, onnx_out: np.ndarray) -> tuple[str, float]:
    """ONNX's own expected output judged against roperef's float64 answer, as a float32 engine's output."""
    from dataclasses import replace

    from conformance.backends.base import Capabilities
    from conformance.cases.user import expected_outputs, load_user_case
    from conformance.error_model.tolerance import get_profile
    from conformance.judge.runner import judge_case

    case = load_user_case(case_dir / "case.json", case_dir.parent)
    exact = expected_outputs(case.stage, case.spec, case.inputs())  # never ONNX's own y.npy (--keep-expected)
    case = replace(case, arrays={**case.arrays, **exact})
    caps = Capabilities(stages=frozenset({"apply"}), angle_dtype="float32", table_dtype="float32")
    verdict = judge_case(case, {"y": onnx_out}, caps, get_profile("fp32-angles"), diagnose=False)
    return verdict.status, verdict.metrics.budget_used if verdict.metrics else float("nan")


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="directory to write (one folder per test)")
    ap.add_argument("--from-dir", type=Path, default=None, help="ONNX node-test directory holding test_rotary_embedding*/")
    ap.add_argument("--seed", type=int, default=0, help="seed of NumPy's global generator for the installed builders")
    ap.add_argument("--keep-expected", action="store_true", help="also write ONNX's float32 output as y.npy")
    ap.add_argument("--note", default="", help="text appended to each case's description (e.g. the ONNX commit)")
    args = ap.parse_args(argv)
    try:
        import onnx  # noqa: F401 - imported only to check that onnx is installed
    except ImportError:
        print("onnx_rotary_cases: needs onnx (pip install 'roperef[onnx]')", file=sys.stderr)
        return 2
    if args.from_dir is not None and not args.from_dir.is_dir():
        print(f"onnx_rotary_cases: --from-dir {args.from_dir}: not a directory", file=sys.stderr)
        return 2
    tests = from_directory(args.from_dir) if args.from_dir else from_installed(args.seed)
    if not tests:
        print(f"onnx_rotary_cases: no {PREFIX}* test found", file=sys.stderr)
        return 2
    failed = 0
    for test in tests:
        doc, arrays, onnx_out = to_case(test)
        if args.note:
            doc["description"] += f" ({args.note})"
        folder = args.out / test.name
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.npy"):
            stale.unlink()
        for name, arr in arrays.items():
            np.save(folder / f"{name}.npy", arr, allow_pickle=False)
        if args.keep_expected:
            np.save(folder / "y.npy", onnx_out, allow_pickle=False)
        (folder / "case.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        status, budget = _judge_onnx_output(folder, onnx_out)
        failed += status != "PASS"
        print(f"{doc['id']:<58} {doc['spec']['pairing']:<9} rotary_dim {doc['spec']['rotary_dim']}/{doc['spec']['head_dim']}  "
              f"ONNX's own output: {status} (budget {budget:.3g})")
    print(f"wrote {len(tests)} case(s) to {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Write examples/onnx_discrepancies: one small case per onnxruntime / ONNX-reference discrepancy
(docs/backends-onnx.md). Deterministic; run from the repository root:

    python scripts/make_onnx_discrepancy_cases.py
"""
import json
from pathlib import Path

import ml_dtypes
import numpy as np

root = Path("examples/onnx_discrepancies")
rng = np.random.default_rng(20261130)

def case(name, doc, **arrays):
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    for f in d.glob("*.npy"):
        f.unlink()
    for k, v in arrays.items():
        np.save(d / f"{k}.npy", v, allow_pickle=False)
    (d / "case.json").write_text(json.dumps({"schema": "roperef-case/1", "id": f"onnx-discrepancy/{name}", **doc}, indent=1) + "\n")

case("packed-restart-at-0",
     {"stage": "forward", "spec": {"head_dim": 64, "theta": 10000.0}, "dtype": "float32", "flags": ["varlen"],
      "description": "two packed sequences of 4 tokens, positions 0..3 each (cu_seqlens [0, 4, 8]): every position < 4 = cache rows, but 8 tokens"},
     x=rng.standard_normal((8, 2, 64)).astype(np.float32), positions=np.array([0, 1, 2, 3, 0, 1, 2, 3]),
     cu_seqlens=np.array([0, 4, 8]))
case("negative-position",
     {"stage": "forward", "spec": {"head_dim": 64, "theta": 10000.0}, "dtype": "float32", "flags": ["negative-offset"],
      "description": "a batch of two: row 0 at positions -1, 0, 1, 2 (one left pad), row 1 at 0..3 (the cache has 4 rows = the sequence)"},
     x=rng.standard_normal((2, 4, 2, 64)).astype(np.float32), positions=np.array([[-1, 0, 1, 2], [0, 1, 2, 3]]))
case("bfloat16",
     {"stage": "forward", "spec": {"head_dim": 64, "theta": 10000.0}, "dtype": "bfloat16",
      "description": "a bfloat16 input: both schemas allow tensor(bfloat16)"},
     x=rng.standard_normal((1, 4, 2, 64)).astype(ml_dtypes.bfloat16).view("<u2"), positions=np.array([[4093, 4094, 4095, 4096]]))

#!/usr/bin/env bash
# Judge the GPU-only RoPE implementations on a CUDA machine, in one go (budget: <= 10 minutes).
#
#   bash benchmarks/gpu_check.sh [OUT_DIR]
#
# Installs, each step time-boxed and allowed to fail without stopping the others:
#   - flash-attn (prebuilt wheel for the machine's torch/CUDA; no source build: --only-binary),
#   - transformer_engine[pytorch] (prebuilt wheels),
#   - vllm in its own virtual environment (it pins its own torch),
# then runs `roperef check --backend X --tier smoke --json OUT/X.json` for
# flash-attn, flash-attn-triton, transformer-engine, liger (real GPU kernel, bf16 included)
# and vllm. A library that fails to install is reported as such (its check then reports
# NOT_SUPPORTED "not installed", exit 3); the exit code is 1 if any check FAILs or ERRORs.
set -u
OUT="${1:-${OUT:-gpu_check_out}}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
status=0
log() { echo "[gpu_check] $*" | tee -a "$OUT/gpu_check.log"; }
BUDGET=570  # seconds for the whole script; every step gets min(its own limit, what is left)
box() { local want="$1" left=$((BUDGET - SECONDS)); [ "$left" -lt 5 ] && left=1; [ "$want" -lt "$left" ] && echo "$want" || echo "$left"; }

"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))" \
  2>&1 | tee -a "$OUT/gpu_check.log" || { log "no CUDA GPU: nothing to check"; exit 2; }

install() {  # install <seconds> <pip args...>
  local secs="$1"; shift
  log "pip install $*"
  timeout "$(box "$secs")" "$PY" -m pip install -q "$@" >>"$OUT/pip.log" 2>&1 || log "install failed or timed out: $* (see pip.log)"
}

install 60 -e . --no-deps
install 120 --only-binary :all: flash-attn --no-build-isolation
install 120 --only-binary :all: "transformer_engine[pytorch]"
install 60 liger-kernel transformers

check() {  # check <python> <backend>
  local py="$1" name="$2"
  log "roperef check --backend $name"
  timeout "$(box 90)" "$py" -m conformance.cli check --backend "$name" --tier smoke --json "$OUT/$name.json" -q \
    >"$OUT/$name.txt" 2>&1
  local rc=$?
  tail -n 3 "$OUT/$name.txt" | tee -a "$OUT/gpu_check.log"
  # 2: usage error (e.g. not installed), 3: nothing judged (every case NOT_SUPPORTED): reported, not a failure
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 2 ] && [ "$rc" -ne 3 ]; then status=1; fi
}

for b in flash-attn flash-attn-triton transformer-engine liger hf; do check "$PY" "$b"; done

# vLLM pins its own torch: a separate environment so it cannot replace the one above.
if timeout "$(box 30)" "$PY" -m venv "$OUT/.venv-vllm" && \
   timeout "$(box 180)" "$OUT/.venv-vllm/bin/python" -m pip install -q vllm numpy ml_dtypes numba >>"$OUT/pip.log" 2>&1 && \
   timeout "$(box 30)" "$OUT/.venv-vllm/bin/python" -m pip install -q -e . --no-deps >>"$OUT/pip.log" 2>&1; then
  check "$OUT/.venv-vllm/bin/python" vllm
else
  log "vllm environment could not be built (see pip.log)"
fi

log "reports in $OUT/*.json; exit $status"
exit "$status"

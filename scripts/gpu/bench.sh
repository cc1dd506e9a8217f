#!/usr/bin/env bash
# `npm run bench:gpu` (or `bash scripts/gpu/bench.sh` where there is no Node): builds the runtime
# with the CUDA backend, then (scripts/gpu/bench_runs.py):
#   default    GPT-2 124M and 355M at sequences of 1024 and 2048, bf16: the native runtime beside
#              PyTorch eager (SDPA flash) and torch.compile (test/reference/throughput.py) in the
#              same call, MFU and the fraction of the measured bf16 matrix-product peak;
#   --kernels  the kernel micro-benchmark alone (achieved TFLOP/s next to cuBLASLt's);
#   --all      both, then an Nsight Compute profile, within --budget-s seconds (default 330).
# Writes $OUT/gpu-<date>.{json,md} (to commit under bench/results/ — set FSDP_COMMIT to the commit
# measured, the GPU machine's copy has no .git), kernels.json, profile.md and the logs.
set -uo pipefail
source "$(dirname "$0")/build.sh"
FSDP_BENCH_COMMAND="bash scripts/gpu/bench.sh $*" python3 "$ROOT/scripts/gpu/bench_runs.py" --cli "$CLI" --kernel-bench "$BUILD/Release/fsdp-kernel-bench" --out "$OUT" \
  --reference "$ROOT/test/reference/throughput.py" "$@"

#!/usr/bin/env bash
# `npm run test:gpu` (or `bash scripts/gpu/test.sh` where there is no Node): builds the runtime
# with the CUDA backend and checks it, in one GPU-machine call (native/CUDA.md):
#   1. the CPU GoogleTest suite on that machine (the reference the GPU is compared with);
#   2. the CUDA GoogleTest suite: fp32 parity with the CPU within 1e-5 over 10 steps, bf16 and
#      fp16 within 1e-2, checkpointing and determinism, NaN location identical, NCCL on one rank;
#   3. training runs of the CLI on the GPU: measured peak memory per category against the plan,
#      fp16 loss scaling in the step events, a planted NaN located as the CPU locates it.
# Results under $OUT: environment.txt, cpu-tests.json, cuda-tests.json, runs.json, and logs.
set -uo pipefail
source "$(dirname "$0")/build.sh"
status=0
"$BUILD/Release/fsdp-native-tests" --gtest_output="json:$OUT/cpu-tests.json" > "$OUT/cpu-tests.log" 2>&1 || { echo "CPU tests FAILED"; status=1; }
tail -3 "$OUT/cpu-tests.log"
"$BUILD/Release/fsdp-cuda-tests" --gtest_output="json:$OUT/cuda-tests.json" > "$OUT/cuda-tests.log" 2>&1 || { echo "CUDA tests FAILED"; status=1; }
grep -E "^\[ +(OK|FAILED) +\]|Failure|Expected|Which is|actual|error" "$OUT/cuda-tests.log" | head -60
python3 "$ROOT/scripts/gpu/check_runs.py" --cli "$CLI" --out "$OUT" || status=1
exit $status

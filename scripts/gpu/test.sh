#!/usr/bin/env bash
# `npm run test:gpu` (or `bash scripts/gpu/test.sh` where there is no Node): the whole GPU
# verification of native/CUDA.md and issue 13 in one GPU-machine call (~6-8 minutes):
#   1. build with the CUDA backend, NCCL and MPI (build.sh; fails naming what is missing);
#   2. the CPU GoogleTest suite there (the reference the GPU is compared with);
#   3. the CUDA GoogleTest suite: every operation against the CPU at head sizes 32/64/128 and ragged
#      lengths (float32; bf16/fp16 within their output rounding), fp32 model parity over 10 steps,
#      bf16/fp16 step by step within their mantissa, checkpointing, determinism, NaN location,
#      NCCL on one rank in every type, the sharded state on the GPU (bf16 gathers, checkpoints
#      through the host and onto the CPU, offload in pinned memory, bf16 reductions);
#   4. the MPI GoogleTest suite at 2 and 4 ranks (staged collectives, model states; CPU buffers);
#   5. CLI runs on one GPU (check_runs.py): memory plan = measured per category, fp32 vs CPU,
#      fp16 loss scaling under a planted overflow, NaN location, real-text convergence;
#   6. CLI runs on several ranks sharing the GPU through MPI (multirank_runs.py): every strategy at
#      1/2/4 ranks within 1e-6, memory = plan on every rank, SIGKILL + resume bit for bit, the NCCL
#      refusal on a shared GPU, --allreduce-check on GPU buffers, fsdp-train --nproc 2 where Node is.
# Results under $OUT: gpu-test-results.json and gpu-test-results.md (device, driver, date, commit;
# commit them under bench/results/), the parts' JSON and logs. Exit 1 names every failed part.
# The commit is the repository's HEAD where .git is present, else $FSDP_COMMIT.
set -uo pipefail
source "$(dirname "$0")/build.sh"
set +e
COMMIT="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo "${FSDP_COMMIT:-unknown}")"
TIMINGS="$OUT/timings.txt"
: > "$TIMINGS"
echo "build $BUILD_SECONDS 0" >> "$TIMINGS"
failed=()

# part NAME COMMAND...: runs it, records its time and exit code, remembers a failure by name.
part() {
  local name="$1"; shift
  local t0=$SECONDS
  echo "=== $name"
  "$@"
  local code=$?
  echo "$name $((SECONDS - t0)) $code" >> "$TIMINGS"
  [ "$code" -eq 0 ] || { echo "=== $name FAILED (exit $code)"; failed+=("$name"); }
}

gtest_part() {  # gtest_part BINARY REPORT LOG: a GoogleTest binary, its report and a short failure listing
  "$1" --gtest_output="json:$2" > "$3" 2>&1
  local code=$?
  tail -3 "$3"
  grep -E "^\[  FAILED  \]|Failure|Expected|Which is|error" "$3" | head -40
  return $code
}

MPI_ROOT_FLAG=()
[ "$(id -u)" = 0 ] && MPI_ROOT_FLAG=(--allow-run-as-root)
mpi_gtest() {  # mpi_gtest RANKS
  mpirun -n "$1" --oversubscribe --bind-to none "${MPI_ROOT_FLAG[@]}" -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=passive \
    "$BUILD/Release/fsdp-mpi-tests" --gtest_color=no --gtest_output="json:$OUT/mpi-tests-$1.json" > "$OUT/mpi-tests-$1.log" 2>&1
  local code=$?
  grep -E "PASSED|^\[  FAILED  \]|Failure" "$OUT/mpi-tests-$1.log" | sort | uniq -c | head -20
  return $code
}

part cpu-tests gtest_part "$BUILD/Release/fsdp-native-tests" "$OUT/cpu-tests.json" "$OUT/cpu-tests.log"
part cuda-tests gtest_part "$BUILD/Release/fsdp-cuda-tests" "$OUT/cuda-tests.json" "$OUT/cuda-tests.log"
part mpi-tests-2 mpi_gtest 2
part mpi-tests-4 mpi_gtest 4
part single-gpu-runs python3 "$ROOT/scripts/gpu/check_runs.py" --cli "$CLI" --out "$OUT"
part multi-rank-runs python3 "$ROOT/scripts/gpu/multirank_runs.py" --cli "$CLI" --out "$OUT" --root "$ROOT"
python3 "$ROOT/scripts/gpu/summary.py" --out "$OUT" --commit "$COMMIT" --timings "$TIMINGS"
summary=$?
if [ "${#failed[@]}" -gt 0 ] || [ "$summary" -ne 0 ]; then
  echo "GPU tests FAILED: ${failed[*]:-see gpu-test-results.md}"
  exit 1
fi
echo "GPU tests passed (gpu-test-results.md)"

#!/usr/bin/env bash
# The first GPU verification in one call of at most 8 minutes on an H100 (issue 22; native/CUDA.md,
# "The first GPU run"). Parts in order of value, each under its own `timeout`; the summary
# ($OUT/gpu-test-results.json and .md: device, driver, CUDA, date, commit, every part's time,
# verdict and follow-up command) is rewritten before and after every part, so a call cut short
# still returns what it found. Everything else (logs, gtest reports, the parts' JSON) is packed into
# $OUT/first-run-details.tar.gz, so few files come back.
#
#   part             budget  what                                              last H100 figure (2026-11-23)
#   build              75 s  unpack .gpu-debs, configure, build 4 targets       ~30 s, 16 cores; attention.cu alone
#                            (sm_90) is 31 s of CPU now, the longest file
#   cuda-tests         65 s  fsdp-cuda-tests (kernels, ops, parity, NCCL ...)   7 tests in 2.6 s
#   bench-native       35 s  GPT-2 124M bf16 T1024, native, 12 steps            782 ms/step at micro-batch 48
#   bench-eager        35 s  the same in PyTorch eager (SDPA flash)             227 ms/step at 48
#   bench-compile      75 s  the same with torch.compile (compiles first)       162 ms/step at 48, + compile
#   single-gpu-runs    60 s  check_runs.py, 200-step convergence                3 x 500 steps in ~50 s
#   multi-rank         40 s  2 ranks over MPI: FULL_SHARD, SHARD_GRAD_OP = 1
#                            rank; one SIGKILL + resume bit for bit
#   cpu-tests          25 s  fsdp-native-tests in 4 shards side by side         44 tests passed; 88 tests now: 98 s
#                            wall, 18 s CPU in one process here (2 cores, load ~20, 2026-11-26), mostly file-writing
#                            fuzzers waiting on the disk (Safetensors mutants: 15 s wall, 1.5 s CPU), which shards overlap
#   mpi-tests          25 s  fsdp-mpi-tests at 2 and 4 ranks
#                     435 s  (+ ~1 s of summary per part; FSDP_FIRST_RUN_BUDGET_S, default 465, is the
#                            hard end: a part gets at most what is left, and none starts with < 5 s)
#   Not in the default run, asked by --parts (issue 37, the tuned PyTorch baseline: loss inside the
#   compiled graph, vocabulary padded to 50,304, fused AdamW, flash SDPA; test/reference/throughput.py):
#   bench-tuned-compile          90 s  torch.compile(model + loss), default mode
#   bench-tuned-max-autotune    240 s  the same with mode="max-autotune" (autotunes first: minutes)
#
# Options (the follow-up commands the summary prints use them, to re-check one thing at once on the
# same warm machine, where native/build-gpu is kept and the build part is incremental):
#   --parts a,b,...        only these parts, in this order
#   --gtest-filter F       for the GoogleTest parts
#   --checks a,b           check_runs.py's groups (memory, float32_parity, loss_scaling, nan_location, convergence)
#   --strategies a,b       multi-rank strategies (default FULL_SHARD,SHARD_GRAD_OP)
#   --model M              benchmark model (default gpt2-124m); --micro-batch N: the native candidates
#   --convergence-steps N  (default 200)
#   --build-dir DIR        use the runtime already built in DIR instead of the build part (a warm
#                          machine's native/build-gpu; here, the CPU build for the test's real run)
#   --budget PART=S        a part's timeout in seconds
#   --dry-run              print every part and its timeout, run nothing (the CPU test's mode)
#   --plant PART=fail|timeout   with --dry-run: that part fails, or overruns its timeout (the test's planted failure)
# The commit is $FSDP_COMMIT (no .git travels to the GPU machine), else the repository's HEAD.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
OUT="${OUT:-$ROOT/gpu-out}"

ALL_PARTS=(build cuda-tests bench-native bench-eager bench-compile single-gpu-runs multi-rank cpu-tests mpi-tests)
OPTIONAL_PARTS=(bench-tuned-compile bench-tuned-max-autotune)
declare -A BUDGET=([build]=75 [cuda-tests]=65 [bench-native]=35 [bench-eager]=35 [bench-compile]=75 [single-gpu-runs]=60 [multi-rank]=40
                   [cpu-tests]=25 [mpi-tests]=25 [bench-tuned-compile]=90 [bench-tuned-max-autotune]=240)
declare -A PLANT=()
PARTS=("${ALL_PARTS[@]}")
GTEST_FILTER="*"
CHECKS="memory,float32_parity,loss_scaling,nan_location,convergence"
STRATEGIES="FULL_SHARD,SHARD_GRAD_OP"
MODEL="gpt2-124m"
MICRO_BATCH=""
CONVERGENCE_STEPS=200
DRY_RUN=0
IN_PART=""
BUILD_DIR=""
quoted() {  # its arguments as a command line to copy: plain words as they are, the rest shell-quoted
  local a out=""
  for a in "$@"; do if [[ "$a" =~ ^[][A-Za-z0-9_./:=,+-]+$ ]]; then out+=" $a"; else out+=" $(printf '%q' "$a")"; fi; done
  printf '%s' "${out# }"
}
COMMAND="$(quoted bash scripts/gpu/first-run.sh "$@")"

die() { echo "first-run.sh: $*" >&2; exit 2; }
known_part() { [[ " ${ALL_PARTS[*]} ${OPTIONAL_PARTS[*]} " == *" $1 "* ]] || die "unknown part '$1' (parts: ${ALL_PARTS[*]} ${OPTIONAL_PARTS[*]})"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --parts) IFS=, read -ra PARTS <<< "$2"; for p in "${PARTS[@]}"; do known_part "$p"; done; shift 2 ;;
    --gtest-filter) GTEST_FILTER="$2"; shift 2 ;;
    --checks) CHECKS="$2"; shift 2 ;;
    --strategies) STRATEGIES="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --micro-batch) MICRO_BATCH="$2"; shift 2 ;;
    --convergence-steps) CONVERGENCE_STEPS="$2"; shift 2 ;;
    --budget) known_part "${2%%=*}"; [[ "${2#*=}" =~ ^[0-9]+$ ]] || die "--budget $2: seconds must be a whole number"; BUDGET[${2%%=*}]="${2#*=}"; shift 2 ;;
    --plant) known_part "${2%%=*}"; [[ "${2#*=}" =~ ^(fail|timeout)$ ]] || die "--plant $2: fail or timeout"; PLANT[${2%%=*}]="${2#*=}"; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    --build-dir) BUILD_DIR="$(cd "$2" 2>/dev/null && pwd)" || die "--build-dir $2: no such folder"; shift 2 ;;
    --in-part) IN_PART="$2"; shift 2 ;;  # internal: run one part's body (what `timeout` runs)
    *) die "unknown option '$1'" ;;
  esac
done
[ "${#PLANT[@]}" -eq 0 ] || [ "$DRY_RUN" = 1 ] || die "--plant is for --dry-run only"
[ -z "$BUILD_DIR" ] || [[ " ${PARTS[*]} " != *" build "* ]] || die "--build-dir replaces the build part: leave build out of --parts"

MPI_ROOT_FLAG=()
[ "$(id -u)" = 0 ] && MPI_ROOT_FLAG=(--allow-run-as-root)

# --- the parts' bodies (run as `first-run.sh --in-part NAME` under timeout; logs in $WORK) ---------
x() {  # runs its arguments; with --dry-run prints them instead
  if [ "$DRY_RUN" = 0 ]; then "$@"; return; fi
  echo "would run: $(quoted "$@")"
}

gtest() {  # gtest NAME BINARY [LAUNCHER...]: a GoogleTest binary, its JSON report and log; a short listing of failures
  local name="$1" binary="$2"; shift 2
  if [ "$DRY_RUN" = 1 ]; then x "$@" "$binary" --gtest_color=no --gtest_filter="$GTEST_FILTER" --gtest_output="json:$WORK/$name.json"; return 0; fi
  "$@" "$binary" --gtest_color=no --gtest_filter="$GTEST_FILTER" --gtest_output="json:$WORK/$name.json" > "$WORK/$name.log" 2>&1
  local code=$?
  tail -3 "$WORK/$name.log"
  grep -E "^\[  FAILED  \]|Failure$" "$WORK/$name.log" | sort -u | head -30
  return $code
}

sharded_gtest() {  # sharded_gtest NAME BINARY SHARDS: GoogleTest's own sharding, the shards side by side (NAME-i.json each)
  local name="$1" binary="$2" shards="$3" i code=0 pids=()
  for ((i = 0; i < shards; i++)); do
    gtest "$name-$i" "$binary" env GTEST_TOTAL_SHARDS="$shards" GTEST_SHARD_INDEX="$i" OMP_NUM_THREADS=2 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || code=1; done
  return $code
}

part_body() {  # part_body NAME BUDGET
  BUILD="$ROOT/native/build-gpu" CLI="$ROOT/native/build-gpu/Release/fsdp-train-native"
  [ -f "$WORK/build/build-env.sh" ] && source "$WORK/build/build-env.sh"
  local mpi=(mpirun --oversubscribe --bind-to none "${MPI_ROOT_FLAG[@]}" -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=passive)
  case "$1" in
    build) x env FSDP_BUILD_TARGETS="fsdp-train-native fsdp-native-tests fsdp-cuda-tests fsdp-mpi-tests" OUT="$WORK/build" bash "$HERE/build.sh" ;;
    cuda-tests) gtest cuda-tests "$BUILD/Release/fsdp-cuda-tests" ;;
    cpu-tests) sharded_gtest cpu-tests "$BUILD/Release/fsdp-native-tests" 4 ;;  # its file-writing fuzzers wait on the disk: shards overlap them
    mpi-tests)
      gtest mpi-tests-2 "$BUILD/Release/fsdp-mpi-tests" "${mpi[@]}" -n 2
      local two=$?
      gtest mpi-tests-4 "$BUILD/Release/fsdp-mpi-tests" "${mpi[@]}" -n 4
      local four=$?
      return $((two != 0 || four != 0)) ;;
    bench-native|bench-eager|bench-compile|bench-tuned-compile|bench-tuned-max-autotune)
      local batches=()
      [ -n "$MICRO_BATCH" ] && batches=(--micro-batches "$MICRO_BATCH")
      x env FSDP_BENCH_COMMAND="bash scripts/gpu/first-run.sh --parts $1 --model $MODEL" \
        python3 "$HERE/bench_runs.py" --cli "$CLI" --out "$WORK/bench" --reference "$ROOT/test/reference/throughput.py" --models "$MODEL" \
        --seqs 1024 --runners "${1#bench-}" --merge --budget-s "$(($2 - 3))" "${batches[@]}" ;;  # its own timeouts end first: the error is written
    single-gpu-runs)
      x python3 "$HERE/check_runs.py" --cli "$CLI" --out "$WORK" --only "$CHECKS" --convergence-steps "$CONVERGENCE_STEPS" ;;
    multi-rank)
      x python3 "$HERE/multirank_runs.py" --cli "$CLI" --out "$WORK" --root "$ROOT" --parts strategies,sigkill_resume --strategies "$STRATEGIES" --ranks 2 ;;
  esac
}

if [ -n "$IN_PART" ]; then
  WORK="${FSDP_FIRST_RUN_WORK:?--in-part is for first-run.sh itself}"
  case "${PLANT[$IN_PART]:-}" in  # --dry-run only
    fail) echo "planted failure"; exit 1 ;;
    timeout) echo "planted overrun"; exec sleep 3600 ;;
  esac
  part_body "$IN_PART" "${IN_PART_BUDGET:-60}"
  exit $?
fi

# --- the run -----------------------------------------------------------------------------------------
# The parts' files live outside $OUT (everything under $OUT comes back): only the summary and the archive go there.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/fsdp-first-run.XXXXXX")" && [ -d "$WORK" ] || die "no work folder under ${TMPDIR:-/tmp}"
export FSDP_FIRST_RUN_WORK="$WORK"
mkdir -p "$OUT"
COMMIT="${FSDP_COMMIT:-$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)}"
TOTAL_BUDGET="${FSDP_FIRST_RUN_BUDGET_S:-465}"
RECORDS="$WORK/parts.jsonl"
: > "$RECORDS"
T0=$SECONDS

# The device, driver and CUDA first (a second), so even a failed build names the machine.
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  if [ "$DRY_RUN" = 1 ]; then echo "gpu: none (dry run)"
  else
    if command -v nvidia-smi > /dev/null; then
      echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>&1 | head -1)"
      echo "cuda driver api: $(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1)"
    else
      echo "gpu: none (no nvidia-smi on this machine)"
    fi
    echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | head -1)"
    echo "torch: $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null || echo none)"
  fi
} > "$WORK/device.txt"

if [ -n "$BUILD_DIR" ]; then  # what the build part would have left, for the runtime already built there
  mkdir -p "$WORK/build"
  printf 'export LD_LIBRARY_PATH=%q\nBUILD=%q\nCLI=%q\n' "${LD_LIBRARY_PATH:-}" "$BUILD_DIR" "$BUILD_DIR/Release/fsdp-train-native" > "$WORK/build/build-env.sh"
fi

PLAN=""
for p in "${PARTS[@]}"; do PLAN+="${PLAN:+,}$p:${BUDGET[$p]}"; done
summary() {  # summary [PART]: rewrites $OUT/gpu-test-results.{json,md} and the details archive; prints PART's row
  python3 "$HERE/first_run_summary.py" --work "$WORK" --out "$OUT" --commit "$COMMIT" --command "$COMMAND" --plan "$PLAN" --total-budget "$TOTAL_BUDGET" \
    --elapsed "$((SECONDS - T0))" ${1:+--row "$1"} $([ "$DRY_RUN" = 1 ] && echo --dry-run) || echo "first-run.sh: the summary could not be written (see above)"
}
record() {  # record PART STATUS SECONDS EXIT BUDGET
  printf '{"part": "%s", "status": "%s", "seconds": %s, "exit_code": %s, "budget_s": %s}\n' "$@" >> "$RECORDS"
}

failed=()
for p in "${PARTS[@]}"; do
  left=$((TOTAL_BUDGET - (SECONDS - T0)))
  budget="${BUDGET[$p]}"
  [ "$budget" -gt "$left" ] && budget="$left"
  if [ "$left" -lt 5 ]; then
    echo "=== $p: skipped, ${left} s left of the run's ${TOTAL_BUDGET} s"
    record "$p" skipped 0 null "${BUDGET[$p]}"
    failed+=("$p")
    continue
  fi
  if [ "$DRY_RUN" = 0 ] && [ "$p" != build ] && [[ "$p" != bench-eager && "$p" != bench-compile ]] && [ ! -f "$WORK/build/build-env.sh" ]; then
    echo "=== $p: not run, nothing was built (the build part failed or was not asked for)"
    record "$p" "no build" 0 null "${BUDGET[$p]}"
    failed+=("$p")
    continue
  fi
  echo "=== $p (timeout ${budget} s)"
  record "$p" running 0 null "$budget"
  summary > /dev/null
  t=$SECONDS
  dry=()
  [ "$DRY_RUN" = 1 ] && dry=(--dry-run)
  for k in "${!PLANT[@]}"; do dry+=(--plant "$k=${PLANT[$k]}"); done
  IN_PART_BUDGET="$budget" timeout --kill-after=3 "$budget" bash "$HERE/first-run.sh" --in-part "$p" "${dry[@]}" --gtest-filter "$GTEST_FILTER" \
    --checks "$CHECKS" --strategies "$STRATEGIES" --model "$MODEL" ${MICRO_BATCH:+--micro-batch "$MICRO_BATCH"} --convergence-steps "$CONVERGENCE_STEPS" \
    2>&1 | tee "$WORK/$p.out" | tail -40
  code=${PIPESTATUS[0]}
  case "$code" in
    0) status=passed ;;
    124|137) status="timed out" ;;
    *) status=failed ;;
  esac
  [ "$code" -eq 0 ] || failed+=("$p")
  record "$p" "$status" "$((SECONDS - t))" "$code" "$budget"
  echo "=== $p: $status in $((SECONDS - t)) s (exit $code)"
  summary "$p"
done
summary > /dev/null
echo
cat "$OUT/gpu-test-results.md"
rm -rf "$WORK"
[ "${#failed[@]}" -eq 0 ] || { echo "FAILED: ${failed[*]}"; exit 1; }

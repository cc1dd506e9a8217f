#!/usr/bin/env bash
# `npm run bench:gpu` (or `bash scripts/gpu/bench.sh`): builds the runtime with the CUDA backend,
# then times GPT-2 124M (sequences of 1024, bf16) at the largest micro-batch that fits, beside
# PyTorch eager (SDPA flash attention) and torch.compile on the same model in the same call
# (test/reference/throughput.py). Writes $OUT/bench-gpu.json and $OUT/bench-gpu.md (the table to
# commit under bench/results/ with device, driver and date).
set -uo pipefail
source "$(dirname "$0")/build.sh"
python3 "$ROOT/scripts/gpu/bench_runs.py" --cli "$CLI" --out "$OUT" --reference "$ROOT/test/reference/throughput.py" "$@"

"""Parts 2 and 3 of issue 9 in one command for one `device` call (at most 10 minutes): the
throughput baselines, then as much of the memory grid as the remaining time allows.

    python3 test/reference/gpu_ground_truth.py --out "$OUT"

writes $OUT/throughput/<device>-<date>.json and $OUT/measured/<device>-<date>.json; copy them into
test/fixtures/throughput/ and test/fixtures/measured/. Points left for lack of time are listed in
the memory file's ``skipped``; measure them in a second call with ``--memory-only ID-PART``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seconds", type=float, default=540, help="time for everything (the device call allows 600)")
    parser.add_argument("--grid", default="default")
    parser.add_argument("--memory-only", default="", help="only memory points whose id contains this; skips throughput")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        parser.error("no GPU here: run measure_memory.py or throughput.py alone for a dry run on a CPU")
    start = time.monotonic()
    run = lambda script, *rest: subprocess.run([sys.executable, str(HERE / script), *rest], check=False).returncode  # noqa: E731
    failures = 0
    if not args.memory_only:
        failures += run("throughput.py", "--out", str(args.out / "throughput")) != 0
    left = args.seconds - (time.monotonic() - start) - 20  # the point in progress when time runs out
    failures += (
        run(
            "measure_memory.py",
            "--grid",
            args.grid,
            "--only",
            args.memory_only,
            "--out",
            str(args.out / "measured"),
            "--max-seconds",
            str(max(left, 1)),
        )
        != 0
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

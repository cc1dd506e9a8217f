"""Measures the GPU memory of PyTorch training for a grid of configurations (issue 9, part 2) and
writes test/fixtures/measured/<device>-<date>.json in the format of that folder's README.md, for
the memory estimator's accuracy test.

On a GPU machine (the `device` tool; README.md here gives the one command):
    python3 test/reference/measure_memory.py --grid default --out "$OUT/measured"
On a CPU (no allocator counters) it runs the same loop as a dry run — models built, wrapped and
trained 3 steps, nothing measured — and writes a file marked ``"dry_run": true``, never into
test/fixtures/measured/. The file is rewritten after every point, so a run cut short keeps what
it measured.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import re
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import torch
from fixture_file import cpu_model, invocation, write_json
from gpt import Gpt, initialise
from memory_grid import GRIDS, Point
from memory_phases import CudaCounters, MemoryCounters, NoCounters, measure_three_steps
from parallelize import apply_checkpointing, apply_fsdp2, missing_feature, one_gpu_mesh

FORMAT = "fsdp-studio/measured-memory/v1"
MEASURED_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "measured"

NOTES = (
    "One GPU. FSDP2 points: fully_shard per block and at the root on a one-rank mesh (world size 1), so every "
    "unit is still all-gathered before use and freed after, but nothing is divided; configurations sharded across "
    "several ranks (nprocPerNode > 1, HYBRID_SHARD, DeepSpeed ZeRO) need several GPUs and are not measured here. "
    "Plain points: the bare module, torch.autocast(bfloat16) for bf16. Attention: F.scaled_dot_product_attention "
    "with PyTorch's own kernel choice (flash for bf16, memory-efficient for fp32). AdamW(foreach=True), "
    "zero_grad(set_to_none=True), random token ids, dropout 0, no torch.compile."
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", choices=sorted(GRIDS), default="default")
    parser.add_argument("--out", type=Path, required=True, help="folder for <device>-<date>.json")
    parser.add_argument("--only", default="", help="measure only points whose id contains this text")
    parser.add_argument("--max-seconds", type=float, default=0, help="start no new point after this long (0: no limit)")
    args = parser.parse_args(argv)

    cuda = torch.cuda.is_available()
    out_dir = args.out.resolve()
    if not cuda and (out_dir == MEASURED_FIXTURES or MEASURED_FIXTURES in out_dir.parents):
        parser.error(
            f"--out {args.out}: no GPU here, so nothing is measured; a dry run never writes into {MEASURED_FIXTURES}"
        )
    points = [p for p in GRIDS[args.grid] if args.only in p.id]
    if not points:
        parser.error(f"--only {args.only!r}: no point of grid {args.grid} matches")

    document = header(cuda)
    path = out_dir / f"{slug(document['device'])}-{document['date']}{'' if cuda else '-dry-run'}.json"
    counters: MemoryCounters = CudaCounters() if cuda else NoCounters()
    start = time.monotonic()
    for i, point in enumerate(points):
        if args.max_seconds and time.monotonic() - start > args.max_seconds:
            document["skipped"] += [
                {"id": p.id, "reason": f"time budget of {args.max_seconds:.0f} s spent"} for p in points[i:]
            ]
            break
        result = run_point(point, counters, cuda)
        (document["points"] if "measured" in result else document["skipped"]).append(result)
        kind = "ok" if "measured" in result else result["reason"]
        print(f"[{i + 1}/{len(points)}] {point.id}: {kind}", flush=True)
        write_json(path, document)
    write_json(path, document)
    print(f"{path}: {len(document['points'])} points, {len(document['skipped'])} skipped")
    return 0


def header(cuda: bool) -> dict[str, Any]:
    """The file's top: device, versions, date, command, and the CUDA context's own memory."""
    today = datetime.date.today().isoformat()
    doc: dict[str, Any] = {
        "format": FORMAT,
        "date": today,
        "command": " ".join(invocation()),
        "torch": torch.__version__,
        "notes": NOTES,
    }
    if cuda:
        torch.cuda.init()
        # The context and cuBLAS's handle and workspace exist once a matrix product has run.
        a = torch.ones(8, 8, device="cuda")
        (a @ a).sum().item()
        del a
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info()
        doc.update(
            {
                "device": torch.cuda.get_device_name(),
                "memory_total_bytes": total,
                "driver": nvidia_driver(),
                "cuda": torch.version.cuda,
                "cuda_context_bytes": total - free,
                "cuda_context_method": "mem_get_info() used after torch.cuda.init() and one 8x8 matmul, cache emptied",
            }
        )
    else:
        doc.update(
            {
                "device": f"cpu ({cpu_model()})",
                "dry_run": True,
                "notes": "DRY RUN on a CPU: nothing measured (no allocator counters); the loop, wrappers and"
                " writer ran. " + NOTES,
            }
        )
    doc["points"], doc["skipped"] = [], []
    return doc


def nvidia_driver() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


def slug(device: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")


def run_point(point: Point, counters: MemoryCounters, cuda: bool) -> dict[str, Any]:
    """Builds, wraps and trains one configuration for 3 steps; returns a point, or {id, reason} when it cannot run."""
    reason = missing_feature(point.checkpointing, point.strategy)
    if reason:
        return {"id": point.id, "reason": reason}
    device = torch.device("cuda" if cuda else "cpu")
    model = optimizer = inputs = targets = None
    try:
        model = Gpt(
            point.model.shape(),
            attention="sdpa" if hasattr(torch.nn.functional, "scaled_dot_product_attention") else "eager",
        ).to(device)
        initialise(model, 1234, 0.02)
        apply_checkpointing(model, point.checkpointing)
        bf16 = point.precision == "bf16"
        autocast: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext
        if point.strategy == "fsdp2":
            apply_fsdp2(model, one_gpu_mesh(), torch.bfloat16 if bf16 else None)
        elif bf16:
            autocast = lambda: torch.autocast(device.type, dtype=torch.bfloat16)  # noqa: E731
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        g = torch.Generator(device=device).manual_seed(0)
        tokens = torch.randint(
            0, point.model.vocab_size, (point.micro_batch, point.seq_len + 1), device=device, generator=g
        )
        inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        del tokens
        baseline = counters.allocated()
        measured = measure_three_steps(model, optimizer, inputs, targets, counters, autocast)
        losses = measured.pop("losses")
        notes = f"losses of steps 1-3: {', '.join(f'{x:.4f}' for x in losses)}"
        if baseline:
            notes += f"; {baseline} bytes were allocated before step 1 (model, optimizer, batch)"
        return {"id": point.id, "input": point.estimator_input(), "measured": measured, "notes": notes}
    except RuntimeError as e:  # torch.cuda.OutOfMemoryError is one
        if "out of memory" not in str(e):
            raise
        return {"id": point.id, "reason": "out of memory"}
    finally:
        del model, optimizer, inputs, targets
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

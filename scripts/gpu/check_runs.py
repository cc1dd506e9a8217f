"""Training runs of the native CLI on the GPU (scripts/gpu/test.sh, part 3): measured peak memory
per category against the runtime's plan, float32 losses against the CPU's, float16 loss scaling,
and a planted NaN located as on the CPU. Writes runs.json under --out; exits 1 on a failed check."""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path

from runs import config, of_type, run, write_tokens

# A small GPT with head size 32 (one of the attention kernel's sizes).
SMALL = dict(d_model=128, n_layers=2, n_heads=4, vocab=512, seq=64, batch=8)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fsdp-gpu-runs-"))
    tokens = write_tokens(work / "train.tok", 200_000, SMALL["vocab"], seed=1)
    results: dict[str, object] = {}
    failures: list[str] = []

    def check(name: str, ok: bool, detail: object) -> None:
        results[name] = {"ok": ok, "detail": detail}
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {json.dumps(detail)[:300]}")
        if not ok:
            failures.append(name)

    # 1. Memory: measured peak per category against the plan, in each precision.
    for dtype in ("float32", "bfloat16"):
        code, events, err = run(args.cli, config(tokens, steps=5, dtype=dtype, **SMALL), work / f"memory-{dtype}")
        if code != 0:
            check(f"memory plan {dtype}", False, err)
            continue
        plan = of_type(events, "run_start")[0]["memory_plan"]
        measured: dict[str, int] = {}
        for s in of_type(events, "step"):
            for k, v in s["mem_peak_by_category"].items():
                measured[k] = max(measured.get(k, 0), v)
        gpu = of_type(events, "step")[-1].get("gpu", {})
        exact = all(measured[k] == plan[k] for k in ("params", "grads", "optimizer"))
        # Flash attention keeps no T×T probabilities, so activations and workspace measure below the plan.
        check(f"memory plan {dtype}", exact and measured["total"] <= plan["total"],
              {"plan": {k: plan[k] for k in measured if k in plan}, "measured": measured, "gpu": gpu})

    # 2. float32 on the GPU trains as on the CPU, step by step.
    losses = {}
    for device in ("cpu", "cuda"):
        code, events, err = run(args.cli, config(tokens, steps=10, device=device, **SMALL), work / f"parity-{device}")
        losses[device] = [s["loss"] for s in of_type(events, "step")] if code == 0 else err
    ok = isinstance(losses["cpu"], list) and isinstance(losses["cuda"], list) and len(losses["cpu"]) == len(losses["cuda"]) == 10
    worst = max((abs(a - b) / abs(a) for a, b in zip(losses["cpu"], losses["cuda"])), default=math.inf) if ok else math.inf
    check("float32 CLI losses within 1e-5 of the CPU", ok and worst <= 1e-5, {"worst_relative": worst, "losses": losses})

    # 3. float16: loss scaling reported with every step; training makes progress.
    code, events, err = run(args.cli, config(tokens, steps=30, dtype="float16", **SMALL), work / "float16")
    steps = of_type(events, "step")
    scaled = code == 0 and len(steps) == 30 and all("loss_scale" in s for s in steps)
    check("float16 loss scaling", scaled and steps[-1]["loss"] < steps[0]["loss"],
          {"code": code, "loss_scale": [s.get("loss_scale") for s in steps], "first": steps[0]["loss"] if steps else None,
           "last": steps[-1]["loss"] if steps else None, "stderr": err if code else ""})

    # 4. A planted NaN is located where the CPU locates it.
    for plant in ({"step": 3, "layer": 1, "phase": "forward", "op": "attn.softmax"}, {"step": 3, "layer": 0, "phase": "backward", "op": "mlp.fc2"},
                  {"step": 3, "layer": 1, "phase": "backward", "op": "attn.softmax"}):
        where = {}
        for device, dtype in (("cpu", "float32"), ("cuda", "bfloat16")):
            cfg = config(tokens, steps=5, device=device, dtype=dtype, extra={"debug": {"inject_nan": plant}}, **SMALL)
            _, events, _ = run(args.cli, cfg, work / f"nan-{plant['phase']}-{plant['op']}-{device}")
            anomalies = of_type(events, "anomaly")
            where[device] = anomalies[0]["where"] if anomalies else None
        check(f"NaN location {plant['phase']} {plant['op']}", where["cpu"] is not None and where["cpu"] == where["cuda"], where)

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "runs.json").write_text(json.dumps(results, indent=2))
    print(f"{len(results) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

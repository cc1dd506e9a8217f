"""The GPU throughput benchmark (scripts/gpu/bench.sh): GPT-2 124M, sequences of 1024, bf16 compute
with fp32 masters, at the largest micro-batch that fits, in the native runtime and — in the same
call, on the same GPU — in PyTorch eager (SDPA flash) and torch.compile (test/reference/throughput.py).
Writes bench-gpu.json and bench-gpu.md under --out. Targets (issue 5): >= 1.1x eager, >= 1.0x
torch.compile, MFU >= 50%."""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from runs import config, of_type, run, write_tokens

GPT2 = dict(d_model=768, n_layers=12, n_heads=12, vocab=50257, seq=1024)


def measure(cli: Path, tokens: Path, batch: int, steps: int, work: Path) -> dict[str, object]:
    code, events, err = run(cli, config(tokens, batch=batch, steps=steps, dtype="bfloat16", **GPT2), work / f"mb{batch}", timeout=600)
    s = of_type(events, "step")
    if code != 0 or len(s) < steps:
        return {"fits": False, "error": err[-600:]}
    timed = s[5:]  # the first steps warm up (allocator cache, cuBLASLt heuristics)
    return {"fits": True, "tokens_per_s": statistics.median(x["tokens_per_s"] for x in timed), "mfu": statistics.median(x["mfu"] for x in timed),
            "step_ms_median": statistics.median(x["step_ms"] for x in timed), "mem_peak": max(x["mem_peak"] for x in s),
            "memory_plan_total": of_type(events, "run_start")[0]["memory_plan"]["total"], "gpu": s[-1].get("gpu"),
            "peak_flops": of_type(events, "run_start")[0]["peak_flops"]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reference", type=Path, required=True)
    ap.add_argument("--micro-batches", default="8,12,16,24,32,48")
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--skip-pytorch", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fsdp-bench-"))
    tokens = write_tokens(work / "train.tok", 4_000_000, GPT2["vocab"], seed=2)

    native: dict[str, object] = {}
    best = None
    for mb in sorted(int(x) for x in args.micro_batches.split(",")):
        r = measure(args.cli, tokens, mb, args.steps, work)
        native[str(mb)] = r
        print(f"native mb {mb}: {json.dumps(r)[:400]}", flush=True)
        if not r["fits"]:
            break
        best = mb
    doc: dict[str, object] = {"date": datetime.date.today().isoformat(), "command": " ".join(sys.argv), "model": "gpt2-124m", "seq_len": 1024,
                              "precision": "bfloat16 compute, float32 masters", "native_search": native, "native_micro_batch": best}
    if best is not None:
        doc["native"] = native[str(best)]

    if not args.skip_pytorch:
        ref_out = args.out / "throughput"
        p = subprocess.run([sys.executable, str(args.reference), "--out", str(ref_out), "--micro-batches", args.micro_batches, "--steps", "20"],
                           capture_output=True, text=True)
        (args.out / "pytorch.log").write_text(p.stdout + p.stderr)
        files = sorted(glob.glob(str(ref_out / "*.json")))
        if files:
            ref = json.loads(Path(files[-1]).read_text())
            doc["pytorch"] = {"device": ref["device"], "driver": ref.get("driver"), "torch": ref["torch"], "micro_batch": ref["micro_batch"],
                              "results": ref["results"]}
            doc["device"], doc["driver"] = ref["device"], ref.get("driver")

    rows = ["| | micro-batch | tokens/s | MFU | vs eager | vs compile |", "|---|---:|---:|---:|---:|---:|"]
    pt = doc.get("pytorch", {}).get("results", {}) if isinstance(doc.get("pytorch"), dict) else {}
    eager, compiled = pt.get("eager", {}).get("tokens_per_s"), pt.get("compile", {}).get("tokens_per_s")
    def row(name: str, mb: object, tps: float | None, mfu: float | None) -> str:
        ratio = lambda base: f"{tps / base:.2f}x" if tps and base else "-"
        return f"| {name} | {mb} | {tps:,.0f} | {100 * mfu:.1f}% | {ratio(eager)} | {ratio(compiled)} |" if tps else f"| {name} | {mb} | - | - | - | - |"
    n = doc.get("native", {}) if isinstance(doc.get("native"), dict) else {}
    rows.append(row("fsdp-studio native (CUDA backend)", best, n.get("tokens_per_s"), n.get("mfu")))
    for mode in ("eager", "compile"):
        r = pt.get(mode, {})
        rows.append(row(f"PyTorch {mode}", doc.get("pytorch", {}).get("micro_batch") if pt else "-", r.get("tokens_per_s"), r.get("mfu")))
    targets = {"vs_eager_1.1x": bool(n.get("tokens_per_s") and eager and n["tokens_per_s"] >= 1.1 * eager),
               "vs_compile_1.0x": bool(n.get("tokens_per_s") and compiled and n["tokens_per_s"] >= compiled),
               "mfu_50pct": bool(n.get("mfu") and n["mfu"] >= 0.5)}
    doc["targets_met"] = targets
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bench-gpu.json").write_text(json.dumps(doc, indent=2))
    md = [f"# GPT-2 124M, seq 1024, bf16 — {doc.get('device', '?')}, driver {doc.get('driver', '?')}, {doc['date']}", "", *rows, "",
          f"Targets: {json.dumps(targets)}", "", f"Command: `npm run bench:gpu` ({doc['command']})"]
    (args.out / "bench-gpu.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The GPU benchmark (scripts/gpu/bench.sh, `npm run bench:gpu`), in one call on one GPU:

- throughput: GPT-2 124M and 355M at sequences of 1024 and 2048, bf16 compute with fp32 masters,
  the native runtime beside PyTorch eager (SDPA flash) and torch.compile on the same model
  (test/reference/throughput.py), each at the largest micro-batch of the same list that fits; MFU
  as throughput.py computes it (model FLOPs per token x tokens/s over the data-sheet dense peak),
  and the fraction of the bf16 matrix-product rate this GPU reaches (measured here by
  throughput.py --measure-peak: about 790 TFLOP/s on the H100 of 2026-11-23);
- --kernels: the kernel micro-benchmark (native/bench/kernel_bench.cc) alone;
- --all: throughput, then the kernels, then an Nsight Compute profile of two native steps (GPT-2
  124M, micro-batch 16, seq 1024), as far as the time budget (--budget-s) allows: whatever is left
  out is recorded as skipped, and results are written after every part, so a call cut short
  still returns what it measured;
- --runners native|eager|compile (first-run.sh, one process per runner under its own timeout):
  that runner alone, merged into the results already in --out with --merge; PyTorch measures at
  the micro-batch the native runtime ran (the same work per step), else searches the list.

Writes under --out: gpu-<date>.json and gpu-<date>.md (to commit as bench/results/gpu-<date>.*),
kernels.json, profile.md, and the logs. Targets (issue 14, at seq 1024): native >= 1.2x torch.compile
and >= 1.5x eager."""

from __future__ import annotations

import argparse
import csv
import datetime
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from runs import config, of_type, run, write_tokens

MODELS: dict[str, dict[str, int]] = {
    "gpt2-124m": dict(d_model=768, n_layers=12, n_heads=12, vocab=50257),
    "gpt2-355m": dict(d_model=1024, n_layers=24, n_heads=16, vocab=50257),
}
# Micro-batches per (model, seq), largest first: the native runtime takes the first that runs,
# PyTorch searches the same list (throughput.py: the largest that fits).
CANDIDATES: dict[tuple[str, int], list[int]] = {
    ("gpt2-124m", 1024): [48, 32, 16],
    ("gpt2-124m", 2048): [24, 16, 8],
    ("gpt2-355m", 1024): [24, 16, 8],
    ("gpt2-355m", 2048): [12, 8, 4],
}
TARGETS = {"vs_compile": 1.2, "vs_eager": 1.5, "vs_tuned_compile": 1.2}
# PyTorch's modes as test/reference/throughput.py names them: the untuned baselines of earlier rounds,
# then PyTorch as its users tune it (issue 37).
PYTORCH_MODES = ("eager", "compile", "tuned-compile", "tuned-max-autotune")
# The external anchor (issue 37): llm.c's own GPT-2 124M run on 8 x H100, 140 ms per 524,288-token step.
LLMC_ANCHOR: dict[str, Any] = {
    "tokens_per_s_per_gpu": 468_000,
    "source": "llm.c GPT-2 124M on 8 x H100: 140 ms per 524,288-token step (modded-nanogpt's records), "
    "about 468,000 tokens/s per GPU",
}


def flops_per_token(model: str, seq: int) -> float:
    """native/src/model/flops.h and throughput.training_flops_per_token: 3 (L (2 (4C^2 + 2CF) + 2CT) + 2VC), F = 4C."""
    m = MODELS[model]
    C, L, V, F = m["d_model"], m["n_layers"], m["vocab"], 4 * m["d_model"]
    return 3.0 * (L * (2.0 * (4 * C * C + 2 * C * F) + 2.0 * C * seq) + 2.0 * V * C)


class Budget:
    """Seconds left of the call's allowance for the benchmark."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()

    def allows(self, seconds: float) -> bool:
        return self.left() >= seconds


def native_throughput(
    cli: Path,
    tokens: Path,
    model: str,
    seq: int,
    steps: int,
    work: Path,
    timeout: float,
    micro_batches: list[int] | None = None,
) -> dict[str, Any]:
    """The first micro-batch of the list that runs `steps` steps; median of the steps after the first four."""
    tried: dict[str, str] = {}
    for mb in micro_batches or CANDIDATES[(model, seq)]:
        m = MODELS[model]
        cfg = config(
            tokens,
            d_model=m["d_model"],
            n_layers=m["n_layers"],
            n_heads=m["n_heads"],
            vocab=m["vocab"],
            seq=seq,
            batch=mb,
            steps=steps,
            dtype="bfloat16",
        )
        try:
            code, events, err = run(cli, cfg, work / f"{model}-{seq}-mb{mb}", timeout=timeout)
        except subprocess.TimeoutExpired:
            tried[str(mb)] = "timed out"
            break
        s = of_type(events, "step")
        if code == 124:  # runs.run's timeout: a smaller micro-batch would not fit in what is left either
            tried[str(mb)] = f"timed out after {timeout:.0f} s"
            break
        if code != 0 or len(s) < steps:
            tried[str(mb)] = "did not run: " + err[-300:].strip().replace("\n", " ")
            continue
        tried[str(mb)] = "ran"
        timed = s[4:]  # the first steps warm up (allocator cache, cuBLASLt heuristics)
        start = of_type(events, "run_start")[0]
        return {
            "micro_batch": mb,
            "tried": tried,
            "tokens_per_s": statistics.median(x["tokens_per_s"] for x in timed),
            "step_ms_median": statistics.median(x["step_ms"] for x in timed),
            "runtime_mfu": statistics.median(x.get("mfu") or 0 for x in timed),
            "mem_peak": max(x["mem_peak"] for x in s),
            "memory_plan_total": start["memory_plan"]["total"],
            "peak_flops": start.get("peak_flops"),
            "attention": start.get("runtime", {}).get("attention"),
            "gpu": s[-1].get("gpu"),
        }
    return {"micro_batch": None, "tried": tried}


def pytorch_throughput(
    reference: Path,
    model: str,
    seq: int,
    modes: list[str],
    out: Path,
    timeout: float,
    micro_batches: list[int] | None = None,
) -> dict[str, Any]:
    ref_out = out / "throughput" / f"{model}-{seq}-{'-'.join(modes)}"
    mbs = ",".join(str(x) for x in sorted(micro_batches or CANDIDATES[(model, seq)]))
    cmd = [
        sys.executable,
        str(reference),
        "--model",
        model,
        "--seq",
        str(seq),
        "--micro-batches",
        mbs,
        "--modes",
        ",".join(modes),
        "--warmup",
        "3",
        "--steps",
        "10",
        "--out",
        str(ref_out),
    ]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        log = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        log = f"timed out after {timeout:.0f} s\n{text_of(e.stdout)}{text_of(e.stderr)}"
    (out / f"pytorch-{model}-{seq}-{'-'.join(modes)}.log").write_text(log)
    files = sorted(glob.glob(str(ref_out / "*.json")))
    if not files:
        return {"error": log[-600:]}
    doc = json.loads(Path(files[-1]).read_text())
    return {
        k: doc.get(k)
        for k in (
            "device",
            "driver",
            "torch",
            "cuda",
            "micro_batch",
            "micro_batch_search",
            "results",
            "peak_flops",
            "attention",
        )
    }


def matmul_peak(reference: Path, out: Path, timeout: float) -> dict[str, Any] | None:
    try:
        p = subprocess.run(
            [sys.executable, str(reference), "--measure-peak", "--out", str(out / "throughput")],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None
    files = sorted(glob.glob(str(out / "throughput" / "matmul-peak-*.json")))
    return json.loads(Path(files[-1]).read_text()) if p.returncode == 0 and files else None


def kernel_bench(binary: Path, out: Path, timeout: float) -> list[dict[str, Any]] | dict[str, str]:
    path = out / "kernels.json"
    try:
        p = subprocess.run(
            [str(binary), "--json", str(path), "--reps", "10"], capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{binary}: {e}"}
    (out / "kernels.log").write_text(p.stdout + p.stderr)
    print(p.stdout, flush=True)
    return (
        json.loads(path.read_text()) if p.returncode == 0 and path.exists() else {"error": (p.stdout + p.stderr)[-800:]}
    )


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """Per-kernel totals from `ncu --csv --page raw --metrics gpu__time_duration.sum` (a units row after the header)."""
    rows = list(csv.reader(line for line in text.splitlines() if line.startswith('"')))
    if not rows:
        return []
    header = rows[0]
    name_col, time_col = header.index("Kernel Name"), header.index("gpu__time_duration.sum")
    scale = 1.0
    totals: dict[str, list[float]] = {}
    for r in rows[1:]:
        try:
            value = float(r[time_col].replace(",", ""))
        except ValueError:  # the units row
            scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}.get(r[time_col], 1.0)
            continue
        totals.setdefault(r[name_col], []).append(value * scale)
    grand = sum(sum(v) for v in totals.values()) or 1.0
    table = [{"kernel": k, "ms": sum(v), "calls": len(v), "share": sum(v) / grand} for k, v in totals.items()]
    return sorted(table, key=lambda x: -x["ms"])


def kernel_profile(cli: Path, tokens: Path, out: Path, work: Path, timeout: float) -> dict[str, Any]:
    """Two native steps of GPT-2 124M (micro-batch 16, seq 1024, bf16) under Nsight Compute: time per kernel."""
    m = MODELS["gpt2-124m"]
    cfg = config(
        tokens,
        d_model=m["d_model"],
        n_layers=m["n_layers"],
        n_heads=m["n_heads"],
        vocab=m["vocab"],
        seq=1024,
        batch=16,
        steps=2,
        dtype="bfloat16",
    )
    run_dir = work / "profile"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(cfg))
    log = out / "ncu.csv"
    cmd = [
        "ncu",
        "--metrics",
        "gpu__time_duration.sum",
        "--csv",
        "--page",
        "raw",
        "--log-file",
        str(log),
        str(cli),
        "--config",
        str(run_dir / "config.json"),
        "--run-dir",
        str(run_dir),
    ]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return {"error": "ncu not found"}
    except subprocess.TimeoutExpired:
        return {"error": f"ncu timed out after {timeout:.0f} s"}
    table = parse_ncu_csv(log.read_text()) if log.exists() else []
    if p.returncode != 0 or not table:
        return {"error": (p.stdout + p.stderr)[-800:]}
    lines = [
        f"kernels {sum(r['calls'] for r in table)}, total {sum(r['ms'] for r in table):.1f} ms over 2 steps"
        " (GPT-2 124M, B16, T1024, bf16)"
    ]
    lines += [f"{100 * r['share']:5.1f}%  {r['ms']:9.2f} ms  x {r['calls']:4d}  {r['kernel'][:110]}" for r in table]
    (out / "profile.md").write_text("\n".join(lines) + "\n")
    return {"kernels": table[:40]}


def one_decimal(v: float | None) -> str:
    """A table cell: one decimal, or "-" where nothing was measured."""
    return f"{v:.1f}" if v else "-"


def text_of(output: str | bytes | None) -> str:
    """A timed-out child's output as text (TimeoutExpired may hold bytes even for a text-mode run)."""
    return output.decode(errors="replace") if isinstance(output, bytes) else (output or "")


def summary_rows(doc: dict[str, Any]) -> list[str]:
    """The throughput table: per (model, seq), native beside eager and compile, MFU and the fraction of the
    measured peak."""
    measured = (doc.get("matmul_peak") or {}).get("tflops")
    rows = [
        "| model, seq | runner | micro-batch | tokens/s | MFU | TFLOP/s | of measured peak | native / this |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, r in doc.get("throughput", {}).items():
        model, seq = key.rsplit("/", 1)
        fpt = flops_per_token(model, int(seq))
        native = r.get("native", {}).get("tokens_per_s")
        entries = [("native", r.get("native", {}).get("micro_batch"), native, r.get("native", {}).get("peak_flops"))]
        pt = r.get("pytorch", {})
        for mode in (m for m in PYTORCH_MODES if m in (pt.get("results") or {}) or m in ("eager", "compile")):
            res = (pt.get("results") or {}).get(mode, {})
            entries.append((f"PyTorch {mode}", pt.get("micro_batch"), res.get("tokens_per_s"), pt.get("peak_flops")))
        for name, mb, tps, datasheet in entries:
            if not tps:
                rows.append(f"| {key} | {name} | {mb or '-'} | - | - | - | - | - |")
                continue
            achieved = fpt * tps / 1e12
            mfu = f"{100 * fpt * tps / datasheet:.1f}%" if datasheet else "-"
            frac = f"{100 * achieved / measured:.1f}%" if measured else "-"
            ratio = f"{native / tps:.2f}x" if native else "-"
            rows.append(f"| {key} | {name} | {mb} | {tps:,.0f} | {mfu} | {achieved:.1f} | {frac} | {ratio} |")
    return rows


def targets_met(doc: dict[str, Any]) -> dict[str, bool | None]:
    """Issue 14's targets at seq 1024 (None where a number is missing)."""
    out: dict[str, bool | None] = {}
    for key, r in doc.get("throughput", {}).items():
        if not key.endswith("/1024"):
            continue
        native = r.get("native", {}).get("tokens_per_s")
        results = (r.get("pytorch", {}) or {}).get("results") or {}
        for mode, factor in (
            ("compile", TARGETS["vs_compile"]),
            ("eager", TARGETS["vs_eager"]),
            ("tuned-compile", TARGETS["vs_tuned_compile"]),
        ):
            base = results.get(mode, {}).get("tokens_per_s")
            if mode.startswith("tuned-") and not base:
                continue  # not asked in this call: no verdict rather than a missing one
            out[f"{key} native >= {factor}x {mode}"] = (native >= factor * base) if native and base else None
        if key == "gpt2-124m/1024":
            anchor = 1.1 * LLMC_ANCHOR["tokens_per_s_per_gpu"]
            out[f"{key} native >= 1.1x llm.c per GPU ({anchor:,.0f} tokens/s)"] = (native >= anchor) if native else None
    return out


def kernel_rows(kernels: list[dict[str, Any]]) -> list[str]:
    rows = [
        "| kernel | shape | ms | TFLOP/s | GB/s | reference | ref ms | ref TFLOP/s | ref GB/s |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for k in kernels:
        rows.append(
            f"| {k['kernel']} | {k['shape']} | {k['ms']:.3f} | {one_decimal(k['tflops'])} | {one_decimal(k['gbs'])}"
            f" | {k['reference']} | {k['reference_ms']:.3f}"
            f" | {one_decimal(k['reference_tflops'])} | {one_decimal(k['reference_gbs'])} |"
        )
    return rows


def write(doc: dict[str, Any], out: Path) -> None:
    """gpu-<date>.json and .md (and bench-gpu.* for the older name), rewritten after every part."""
    doc["targets_met"] = targets_met(doc)
    out.mkdir(parents=True, exist_ok=True)
    title = (
        f"# Native vs PyTorch on {doc.get('device', '?')} — driver {doc.get('driver', '?')},"
        f" torch {doc.get('torch', '?')}, {doc['date']}, commit {doc['commit']}"
    )
    md = [title, "", f"Command: `{doc['command']}`; host load average {doc['load_average']}.", ""]
    if doc.get("matmul_peak"):
        md += [
            f"Measured bf16 matrix-product peak (torch.matmul 8192^3): {doc['matmul_peak']['tflops']:.1f} TFLOP/s. "
            "MFU uses the data-sheet dense peak, as test/reference/throughput.py.",
            "",
        ]
    if doc.get("throughput"):
        md += [
            "## Throughput (bf16 compute, fp32 masters; median step)",
            "",
            *summary_rows(doc),
            "",
            f"Targets at seq 1024: `{json.dumps(doc['targets_met'])}`",
            "",
            f"External anchor: {LLMC_ANCHOR['source']}.",
            "",
        ]
    if isinstance(doc.get("kernels"), list):
        md += ["## Kernels (`fsdp-kernel-bench`)", "", *kernel_rows(doc["kernels"]), ""]
    if doc.get("profile", {}).get("kernels"):
        md += ["## Profile (Nsight Compute, 2 steps of GPT-2 124M, B16, T1024): profile.md", ""]
    if doc.get("skipped"):
        md += ["## Not run in this call", "", *[f"- {s}" for s in doc["skipped"]], ""]
    errors = [
        f"- {part}: {doc[part]['error'].strip()[-400:]}"
        for part in ("kernels", "profile")
        if isinstance(doc.get(part), dict) and doc[part].get("error")
    ]
    errors += [
        f"- PyTorch {key}: {r['pytorch']['error'].strip()[-400:]}"
        for key, r in doc.get("throughput", {}).items()
        if (r.get("pytorch") or {}).get("error")
    ]
    errors += [
        f"- PyTorch {mode} {key}: {e.strip()[-400:]}"
        for key, r in doc.get("throughput", {}).items()
        for mode, e in ((r.get("pytorch") or {}).get("errors") or {}).items()
    ]
    errors += [
        f"- native {key}: nothing ran ({json.dumps(r['native'].get('tried'))[:400]})"
        for key, r in doc.get("throughput", {}).items()
        if "native" in r and r["native"].get("micro_batch") is None
    ]
    if errors:
        md += ["## Errors", "", *errors, ""]
    text = "\n".join(md) + "\n"
    for name in (f"gpu-{doc['date']}", "bench-gpu"):
        (out / f"{name}.json").write_text(json.dumps(doc, indent=2))
        (out / f"{name}.md").write_text(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cli", type=Path, required=True)
    ap.add_argument("--kernel-bench", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reference", type=Path, required=True)
    ap.add_argument("--models", default="gpt2-124m,gpt2-355m")
    ap.add_argument("--seqs", default="1024,2048")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--skip-pytorch", action="store_true")
    ap.add_argument("--kernels", action="store_true", help="only the kernel micro-benchmark")
    ap.add_argument("--all", action="store_true", help="throughput, kernels and a kernel profile, as the budget allows")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=330.0,
        help="seconds this benchmark may take; parts that would not fit are skipped",
    )
    ap.add_argument(
        "--runners",
        help="native and/or PyTorch modes alone (first-run.sh: one runner per call, under its own timeout)",
    )
    ap.add_argument(
        "--pytorch-modes",
        default="eager,compile,tuned-compile",
        help=f"PyTorch's modes beside the native runtime, of {', '.join(PYTORCH_MODES)} "
        "(tuned-max-autotune autotunes for minutes)",
    )
    ap.add_argument(
        "--merge",
        action="store_true",
        help="add to the results already in --out (of this date) instead of starting anew",
    )
    ap.add_argument("--micro-batches", help="the candidates, largest first (default: the list per model and sequence)")
    args = ap.parse_args()
    if not set(args.pytorch_modes.split(",")) <= set(PYTORCH_MODES):
        ap.error(f"--pytorch-modes {args.pytorch_modes}: each must be one of {', '.join(PYTORCH_MODES)}")
    budget = Budget(args.budget_s)
    command = os.environ.get("FSDP_BENCH_COMMAND") or " ".join([sys.argv[0], *sys.argv[1:]])
    doc: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "command": command,
        "commit": os.environ.get("FSDP_COMMIT", "unknown (set FSDP_COMMIT)"),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "host": platform.node(),
        "precision": "bfloat16 compute, float32 masters",
        "throughput": {},
        "skipped": [],
    }
    env = Path(args.out / "environment.txt")
    if env.exists():
        doc["environment"] = env.read_text().splitlines()[:6]
        gpu = next(
            (line.split(", ") for line in doc["environment"] if line.count(", ") == 3), None
        )  # nvidia-smi: name, memory, driver, cc
        if gpu:
            doc["device"], doc["driver"] = gpu[0], gpu[2]
    previous = args.out / f"gpu-{doc['date']}.json"
    if args.merge and previous.exists():
        kept = json.loads(previous.read_text())
        doc.update({k: v for k, v in kept.items() if k not in ("command", "load_average")})
    if args.runners:
        work = Path(tempfile.mkdtemp(prefix="fsdp-bench-"))
        try:
            return measure_runners(args, doc, budget, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if args.kernels:
        doc["kernels"] = kernel_bench(args.kernel_bench, args.out, timeout=max(60.0, budget.left()))
        write(doc, args.out)
        return 0 if isinstance(doc["kernels"], list) else 1

    work = Path(tempfile.mkdtemp(prefix="fsdp-bench-"))
    try:
        return measure_all(args, doc, budget, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure_runners(args: argparse.Namespace, doc: dict[str, Any], budget: Budget, work: Path) -> int:
    """The runners named by --runners, each for every model and sequence asked; the caller's timeout is the budget.
    Exit 1 when a runner measured nothing."""
    runners = args.runners.split(",")
    if not set(runners) <= {"native", *PYTORCH_MODES}:
        raise SystemExit(f"--runners {args.runners}: each must be native or one of {', '.join(PYTORCH_MODES)}")
    asked = [int(x) for x in args.micro_batches.split(",")] if args.micro_batches else None
    measured_all = True
    for model, seq in [(m, int(s)) for s in args.seqs.split(",") for m in args.models.split(",")]:
        entry = doc["throughput"].setdefault(f"{model}/{seq}", {})
        if "native" in runners:
            # Enough for every step at the largest micro-batch (4M ids take Python seconds of a 35 s part).
            count = (args.steps + 1) * max(asked or CANDIDATES[(model, seq)]) * (seq + 1)
            tokens = write_tokens(work / f"train-{model}-{seq}.tok", count, MODELS[model]["vocab"], seed=2)
            entry["native"] = native_throughput(
                args.cli, tokens, model, seq, args.steps, work, timeout=max(10.0, budget.left()), micro_batches=asked
            )
            measured_all &= entry["native"].get("micro_batch") is not None
            print(f"native {model}/{seq}: {json.dumps(entry['native'])[:300]}", flush=True)
            write(doc, args.out)
        for mode in (r for r in runners if r != "native"):
            same = [entry["native"]["micro_batch"]] if (entry.get("native") or {}).get("micro_batch") else None
            r = pytorch_throughput(
                args.reference,
                model,
                seq,
                [mode],
                args.out,
                timeout=max(10.0, budget.left()),
                micro_batches=asked or same,
            )
            pt = entry.setdefault("pytorch", {})
            if r.get("error"):
                pt.setdefault("errors", {})[mode] = r["error"]
                measured_all = False
            else:
                results = {**(pt.get("results") or {}), **(r.get("results") or {})}
                pt.update({k: v for k, v in r.items() if v is not None})
                pt["results"] = results
                (pt.get("errors") or {}).pop(mode, None)
                for k in ("device", "driver", "torch"):
                    if not doc.get(k) and r.get(k):
                        doc[k] = r[k]
            print(f"pytorch {mode} {model}/{seq}: {json.dumps(r.get('results') or r.get('error'))[:300]}", flush=True)
            write(doc, args.out)
    return 0 if measured_all else 1


def measure_all(args: argparse.Namespace, doc: dict[str, Any], budget: Budget, work: Path) -> int:
    """Throughput, then (--all) kernels and the profile, in the order that keeps the issue's numbers first."""
    tokens = write_tokens(work / "train.tok", 4_000_000, 50257, seed=2)
    configs = [(m, int(s)) for s in args.seqs.split(",") for m in args.models.split(",")]
    if not args.skip_pytorch:
        doc["matmul_peak"] = matmul_peak(args.reference, args.out, timeout=120)
    for model, seq in configs:
        key = f"{model}/{seq}"
        if not budget.allows(40):
            doc["skipped"].append(f"native {key}: time budget")
            continue
        doc["throughput"][key] = {
            "native": native_throughput(
                args.cli, tokens, model, seq, args.steps, work, timeout=min(240.0, budget.left())
            )
        }
        print(f"native {key}: {json.dumps(doc['throughput'][key]['native'])[:300]}", flush=True)
        write(doc, args.out)

    def pytorch(seqs: set[int]) -> None:
        for model, seq in configs:
            key = f"{model}/{seq}"
            if seq not in seqs or args.skip_pytorch or key not in doc["throughput"]:
                continue
            asked = args.pytorch_modes.split(",")
            # eager takes ~40 s, each compiled mode ~150 s (compiling first): take what the budget holds, in order.
            modes: list[str] = []
            for mode in asked:
                if budget.allows(sum(40 if m == "eager" else 150 for m in [*modes, mode])):
                    modes.append(mode)
            if len(modes) < len(asked):
                doc["skipped"].append(f"PyTorch {', '.join(m for m in asked if m not in modes)} at {key}: time budget")
            if not modes:
                continue
            r = pytorch_throughput(args.reference, model, seq, modes, args.out, timeout=budget.left())
            doc["throughput"][key]["pytorch"] = r
            for k in ("device", "driver", "torch"):
                if not doc.get(k) and r.get(k):
                    doc[k] = r[k]
            print(f"pytorch {key}: {json.dumps(r.get('results'))}", flush=True)
            write(doc, args.out)

    pytorch({1024})
    if args.all:
        if args.kernel_bench and budget.allows(60):
            doc["kernels"] = kernel_bench(args.kernel_bench, args.out, timeout=budget.left())
        else:
            doc["skipped"].append("kernel micro-benchmark: time budget")
        write(doc, args.out)
    pytorch({int(s) for s in args.seqs.split(",")} - {1024})
    if args.all:
        if budget.allows(100):
            doc["profile"] = kernel_profile(args.cli, tokens, args.out, work, timeout=min(200.0, budget.left() - 10))
        else:
            doc["skipped"].append("Nsight Compute profile: time budget")
    write(doc, args.out)
    print((args.out / f"gpu-{doc['date']}.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())

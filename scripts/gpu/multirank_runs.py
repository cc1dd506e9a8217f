"""Several ranks on the GPU machine (scripts/gpu/test.sh, part 4). It has one GPU and NCCL refuses two
ranks on one device, so the ranks share it through launch.collectives: mpi (MPI through pinned host
memory); everything above the collectives is the same code NCCL runs under. Checks:
  - every strategy at 1, 2 and 4 ranks gives the 1-rank losses within 1e-6 (float32);
  - on every run, every rank's measured peak per category equals the plan (float32, bfloat16 with
    16-bit reductions and gathers, cpu_offload through pinned host memory, HYBRID_SHARD);
  - a 2-rank CUDA run SIGKILLed mid-run resumes (--resume auto) bit for bit;
  - a 4-rank CUDA checkpoint resumes on 2 ranks and on the CPU with the uninterrupted continuation;
  - launch.collectives: nccl on ranks that share a GPU is refused, naming them;
  - --allreduce-check on GPU buffers, one process and two;
  - `fsdp-train --nproc 2` with launch.device: cuda, where Node.js and the repository's node_modules are.
Writes multirank.json under --out; exits 1 on a failed check. `--device cpu` runs the same checks
that make sense without a GPU (float32 ones, on the CPU backend): how the script is tested before a
GPU call (test/native/gpu-scripts.test.ts, with --quick)."""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from check_runs import Checks

from runs import config, events_of, mpirun_argv, of_type, run, write_tokens

SMALL: dict[str, Any] = dict(d_model=128, n_layers=2, n_heads=4, vocab=512, seq=64)
GLOBAL_BATCH = 8
STRATEGIES = ("NO_SHARD", "SHARD_OPTIMIZER", "SHARD_GRAD_OP", "FULL_SHARD", "HYBRID_SHARD")
DEVICE = "cuda"  # --device
QUICK = False  # --quick: fewer runs (the dry run on CPU)
ONLY_STRATEGIES: tuple[str, ...] | None = None  # --strategies
RANKS: tuple[int, ...] | None = None  # --ranks


def sharded(
    tokens: Path,
    ranks: int,
    strategy: str,
    steps: int = 6,
    dtype: str = "float32",
    fsdp: dict[str, Any] | None = None,
    extra: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The CPU sharding tests' shape of run: one global batch of 8 however many ranks split it, dropout on."""
    f = {
        "sharding_strategy": strategy,
        **({"ranks_per_node": 2} if strategy == "HYBRID_SHARD" and ranks == 4 else {}),
        **(fsdp or {}),
    }
    more = {
        "fsdp": f,
        "model": {"dropout": 0.1},
        "launch": {"collectives": "mpi", "threads_per_rank": 2 if DEVICE == "cuda" else 1},
        **(extra or {}),
    }
    return config(tokens, batch=GLOBAL_BATCH // ranks, steps=steps, dtype=dtype, device=DEVICE, extra=more, **SMALL)


def losses(events: list[dict[str, Any]]) -> dict[int, float]:
    """The run's loss per step (the last event of each step: a resumed run's replace the first try's)."""
    out: dict[int, float] = {}
    for e in of_type(events, "step"):
        if "rank" not in e:
            out[e["step"]] = e["loss"]
    return out


def strategies(c: Checks, cli: Path, tokens: Path, work: Path) -> None:
    t0 = time.time()
    code, events, err = run(cli, sharded(tokens, 1, "NO_SHARD"), work / "one-rank")
    if code != 0:
        c.check("1-rank reference run", False, err)
        return
    reference = losses(events)
    c.plan.add("NO_SHARD x1", events)
    for strategy in ONLY_STRATEGIES or (("FULL_SHARD",) if QUICK else STRATEGIES):
        for ranks in RANKS or ((2,) if QUICK else (2, 4)):
            code, events, err = run(cli, sharded(tokens, ranks, strategy), work / f"{strategy}-x{ranks}", ranks=ranks)
            got = losses(events)
            if code != 0 or got.keys() != reference.keys():
                c.check(
                    f"{strategy} x{ranks} on one GPU through MPI",
                    False,
                    {"code": code, "stderr": err, "steps": sorted(got)},
                )
                continue
            worst = max(abs(got[s] - reference[s]) / abs(reference[s]) for s in reference)
            kind = of_type(events, "run_start")[0]["runtime"].get("collectives")
            want_kind = "mpi (pinned host staging)" if DEVICE == "cuda" else "host"
            c.check(
                f"{strategy} x{ranks}: losses within 1e-6 of 1 rank",
                worst <= 1e-6 and kind == want_kind,
                {"worst_relative": worst, "collectives": kind},
            )
            c.plan.add(f"{strategy} x{ranks}", events)
    c.results["strategies seconds"] = round(time.time() - t0, 1)


def memory_variants(c: Checks, cli: Path, tokens: Path, work: Path) -> None:
    """The comm buffers of 16-bit reductions and gathers, prefetching, and offload, each measured against its plan."""
    variants: list[tuple[str, int, str, dict[str, Any], dict[str, Any] | None]] = [
        ("FULL_SHARD", 2, "bfloat16", {"forward_prefetch": True}, None),
        ("FULL_SHARD", 4, "bfloat16", {"backward_prefetch": "BACKWARD_POST"}, None),
        ("SHARD_OPTIMIZER", 2, "bfloat16", {}, None),
        ("SHARD_GRAD_OP", 2, "bfloat16", {}, {"mixed_precision": {"reduce_dtype": "float32"}}),
        ("NO_SHARD", 2, "bfloat16", {}, None),
        ("FULL_SHARD", 2, "float32", {"cpu_offload": True}, None),
        ("HYBRID_SHARD", 4, "bfloat16", {}, None),
        ("FULL_SHARD", 2, "float16", {}, {"training": {"gradient_accumulation_steps": 2}}),
    ]
    if DEVICE != "cuda":
        variants = [v for v in variants if v[2] == "float32"]  # the CPU backend computes in float32 only
    for strategy, ranks, dtype, fsdp, extra in variants:
        label = f"{strategy} x{ranks} {dtype} {json.dumps(fsdp)}{' ' + json.dumps(extra) if extra else ''}"
        name = f"{label}: finite losses (its memory: in the plan check)"
        cfg = sharded(tokens, ranks, strategy, steps=4, dtype=dtype, fsdp=fsdp)
        for section, values in (extra or {}).items():
            cfg.setdefault(section, {}).update(values)
        if cfg["training"].get("gradient_accumulation_steps", 1) > 1:
            cfg["training"]["batch_size_per_gpu"] = max(
                1, cfg["training"]["batch_size_per_gpu"] // cfg["training"]["gradient_accumulation_steps"]
            )
        code, events, err = run(cli, cfg, work / f"mem-{len(c.results)}", ranks=ranks)
        if code != 0:
            c.check(name, False, err)
            continue
        c.plan.add(label, events)
        c.check(
            name,
            all(math.isfinite(v) for v in losses(events).values()) and bool(losses(events)),
            {"losses": losses(events)},
        )


def sigkill_resume(c: Checks, cli: Path, tokens: Path, work: Path) -> None:
    """2 ranks, bfloat16, FULL_SHARD, checkpoints every 4 steps: killed outright after step 9, resumed with
    --resume auto."""
    cfg = sharded(
        tokens,
        2,
        "FULL_SHARD",
        steps=16,
        dtype="bfloat16" if DEVICE == "cuda" else "float32",
        extra={"checkpointing": {"save_every_n_steps": 4, "save_final": False}},
    )
    cfg["launch"]["nproc_per_node"] = 2
    code, events, err = run(cli, cfg, work / "uninterrupted", ranks=2)
    if code != 0:
        c.check("SIGKILLed 2-rank CUDA run resumes bit for bit", False, {"uninterrupted": err})
        return
    c.plan.add("FULL_SHARD x2 with checkpoints", events)
    want = losses(events)
    run_dir = work / "killed"
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps(cfg))
    argv = mpirun_argv(2, [str(cli), "--config", str(run_dir / "config.json"), "--run-dir", str(run_dir)])
    p = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env={**os.environ, "OMP_WAIT_POLICY": "passive"},
    )
    deadline = time.time() + 120
    while time.time() < deadline and max(losses(events_of(run_dir)), default=0) < 9 and p.poll() is None:
        time.sleep(0.05)
    killed_at = max(losses(events_of(run_dir)), default=0)
    # Every process of the job: mpirun's group, and the ranks run_start names (mpirun may give them groups
    # of their own).
    pids = [
        r["pid"]
        for e in of_type(events_of(run_dir), "run_start")
        for r in (e.get("world") or {}).get("ranks", [])
        if r.get("pid")
    ]
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait(timeout=60)
    code, events, err = run(cli, cfg, run_dir, ranks=2, extra=["--resume", "auto"])
    got = losses(events)
    resumed = [e.get("resumed_from") for e in of_type(events, "run_start") if e.get("resumed_from")]
    ok = code == 0 and 0 < killed_at < 16 and bool(resumed) and got == want
    c.check(
        "SIGKILLed 2-rank CUDA run resumes bit for bit",
        ok,
        {
            "killed_after_step": killed_at,
            "resumed_from": resumed,
            "differing_steps": sorted(s for s in want if got.get(s) != want[s]),
            "stderr": err if code else "",
        },
    )


def resharding(c: Checks, cli: Path, tokens: Path, work: Path) -> None:
    """FULL_SHARD on 4 ranks saves step 4; resumed from it on 2 ranks (the GPU) and 1 (the CPU backend),
    steps 5-8 continue as the 4-rank run did (within 1e-6 on the GPU, the CPU/GPU parity bound 1e-5 on the CPU)."""
    cfg = sharded(
        tokens, 4, "FULL_SHARD", steps=8, extra={"checkpointing": {"save_every_n_steps": 4, "save_final": False}}
    )
    code, events, err = run(cli, cfg, work / "reshard-4", ranks=4)
    if code != 0:
        c.check("a 4-rank checkpoint resumes on 2 ranks and on the CPU", False, err)
        return
    want = losses(events)
    checkpoint = work / "reshard-4" / "checkpoints" / "step-00000004"
    for ranks, device, bound in ((2, DEVICE, 1e-6), (1, "cpu", 1e-5)):
        resumed = sharded(tokens, ranks, "FULL_SHARD" if ranks > 1 else "NO_SHARD", steps=8)
        resumed["launch"]["device"] = device
        code, events, err = run(
            cli, resumed, work / f"reshard-{ranks}-{device}", ranks=ranks, extra=["--resume", str(checkpoint)]
        )
        got = losses(events)
        ok = code == 0 and sorted(got) == [5, 6, 7, 8]
        worst = max((abs(got[s] - want[s]) / abs(want[s]) for s in got), default=math.inf) if ok else math.inf
        c.check(
            f"a 4-rank {DEVICE} checkpoint resumes on {ranks} rank{'s' if ranks > 1 else ''} ({device})"
            " with the uninterrupted continuation",
            ok and worst <= bound,
            {"worst_relative": worst, "bound": bound, "steps": sorted(got), "stderr": err if code else ""},
        )


def collectives(c: Checks, cli: Path, tokens: Path, work: Path) -> None:
    cfg = sharded(tokens, 2, "FULL_SHARD")
    cfg["launch"]["collectives"] = "nccl"
    code, _, err = run(cli, cfg, work / "nccl-shared", ranks=2)
    refusal = "share GPU" if DEVICE == "cuda" else "nccl needs launch.device: cuda"
    c.check(
        f"launch.collectives nccl with 2 ranks on one {'GPU' if DEVICE == 'cuda' else 'CPU'} is refused, saying why",
        code != 0 and refusal in err and "launch.collectives" in err,
        err[-600:],
    )
    for ranks in (1, 2):
        argv = [str(cli), "--allreduce-check"]
        p = subprocess.run(
            mpirun_argv(ranks, argv) if ranks > 1 else argv,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "OMP_WAIT_POLICY": "passive"},
        )
        try:
            result = json.loads(p.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            c.check(f"--allreduce-check x{ranks} on GPU buffers", False, (p.stdout + p.stderr)[-800:])
            continue
        device = result.get("device") or {}
        on_gpu = device.get("ok") is True if DEVICE == "cuda" else "device" not in result
        c.check(
            f"--allreduce-check x{ranks} on {'GPU' if DEVICE == 'cuda' else 'CPU'} buffers",
            p.returncode == 0 and result.get("ok") is True and on_gpu,
            result,
        )


def through_fsdp_train(c: Checks, cli: Path, root: Path, tokens: Path, work: Path) -> None:
    """The person's command: `npx fsdp-train CONFIG --nproc 2` (bin/fsdp-train.mjs, the bundled CLI in
    dist/ — carried to the GPU machine with the call — on this build's runtime)."""
    node = shutil.which("node")
    if not node or not (root / "dist" / "cli" / "fsdp-train.js").exists():
        c.results[f"fsdp-train --nproc 2 with launch.device {DEVICE}"] = {
            "ok": None,
            "detail": "not run: no Node.js, or no dist/ (node scripts/build.mjs, then carry dist) on this machine;"
            " the runs above use runs/launch/mpirun.ts's mpirun argv",
        }
        print("skip fsdp-train --nproc 2: no Node.js or no dist/ here", flush=True)
        return
    cfg = sharded(tokens, 2, "FULL_SHARD", dtype="bfloat16" if DEVICE == "cuda" else "float32")
    cfg["launch"].update({"device": DEVICE, "nproc_per_node": 1})
    path = work / "fsdp-train.json"
    path.write_text(json.dumps(cfg))
    run_dir = work / "fsdp-train-run"
    p = subprocess.run(
        [node, str(root / "bin" / "fsdp-train.mjs"), str(path), "--nproc", "2", "--run-dir", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "FSDP_TRAIN_NATIVE": str(cli.resolve())},
    )
    events = events_of(run_dir)
    start = of_type(events, "run_start")
    c.plan.add("fsdp-train --nproc 2", events)
    ok = p.returncode == 0 and bool(start) and start[0]["world"]["size"] == 2
    c.check(f"fsdp-train --nproc 2 with launch.device {DEVICE}", ok, {"code": p.returncode, "stderr": p.stderr[-600:]})


PARTS: dict[str, Any] = {
    "strategies": strategies,
    "memory_variants": memory_variants,
    "sigkill_resume": sigkill_resume,
    "resharding": resharding,
    "collectives": collectives,
    "through_fsdp_train": through_fsdp_train,
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--parts", help=f"only these groups of checks, of {', '.join(PARTS)} (first-run.sh: strategies,sigkill_resume)"
    )
    ap.add_argument("--strategies", help="the strategies compared with 1 rank (default: all; --quick: FULL_SHARD)")
    ap.add_argument("--ranks", help="rank counts for the strategies (default 2,4; --quick: 2)")
    args = ap.parse_args()
    global DEVICE, QUICK, ONLY_STRATEGIES, RANKS
    DEVICE, QUICK = args.device, args.quick
    if args.strategies:
        ONLY_STRATEGIES = tuple(args.strategies.split(","))
        if not set(ONLY_STRATEGIES) <= set(STRATEGIES):
            ap.error(f"--strategies {args.strategies}: each must be one of {', '.join(STRATEGIES)}")
    if args.ranks:
        RANKS = tuple(int(r) for r in args.ranks.split(","))
    if args.parts and not set(args.parts.split(",")) <= set(PARTS):
        ap.error(f"--parts {args.parts}: each must be one of {', '.join(PARTS)}")
    if not shutil.which("mpirun"):
        print("FAIL multi-rank checks: no mpirun on this machine", flush=True)
        return 1
    work = Path(tempfile.mkdtemp(prefix="fsdp-gpu-multirank-"))
    tokens = write_tokens(work / "train.tok", 200_000, SMALL["vocab"], seed=2)
    c = Checks()
    chosen = (
        args.parts.split(",")
        if args.parts
        else ["strategies", "sigkill_resume", "collectives"]
        if QUICK
        else list(PARTS)
    )
    for name in (p for p in PARTS if p in chosen):
        try:
            if name == "through_fsdp_train":
                through_fsdp_train(c, args.cli, args.root, tokens, work)
            else:
                PARTS[name](c, args.cli, tokens, work)
        except Exception as e:
            c.check(name, False, f"{type(e).__name__}: {e}")
    c.report_plan()
    shutil.rmtree(work, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "multirank.json").write_text(json.dumps(c.results, indent=2, default=str))
    print(
        f"multi-rank runs: {sum(1 for r in c.results.values() if isinstance(r, dict) and r.get('ok'))} passed,"
        f" {len(c.failures)} failed: {c.failures}"
    )
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())

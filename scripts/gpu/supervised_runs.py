"""The run's owner around the CUDA runtime (issue 25): the companion's supervisor
(python/fsdp_studio/supervise.py, --native) starts fsdp-train-native as every native run is started
now, and is the one writer of run.json. Checks:
  - a run that completes: run.json says completed at max_steps, names the supervisor and the runtime,
    and the runtime's events say it trained on the device asked for;
  - the runtime SIGKILLed mid-run (as the out-of-memory killer would): run.json says failed, with a
    reason that names the signal, and no process of the run is left.
`--device cpu` runs the same checks on the CPU backend (how the script is tried before a GPU call).
Writes supervised.json under --out; exits 1 on a failed check."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from check_runs import Checks

from runs import config, events_of, of_type, write_tokens

SMALL: dict[str, Any] = dict(d_model=128, n_layers=2, n_heads=4, vocab=512, seq=64, batch=8)


def supervised(root: Path, cli: Path, cfg: dict[str, Any], run_dir: Path) -> subprocess.Popen[str]:
    """The supervisor around the runtime, in a process group of its own, as the editor starts it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.json").write_text(json.dumps(cfg, indent=2))
    manifest = {
        "v": 1,
        "run_id": run_dir.name,
        "created": time.time(),
        "status": "starting",
        "config": cfg,
        "world": {"size": 1},
        "host": os.uname().nodename,
        "target": "local",
    }
    argv = [
        sys.executable,
        str(root / "python" / "fsdp_studio" / "supervise.py"),
        "--run-dir",
        str(run_dir),
        "--native",
        "--manifest",
        json.dumps(manifest),
        "--",
        str(cli),
        "--config",
        str(run_dir / "config.json"),
        "--run-dir",
        str(run_dir),
    ]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def run_json(run_dir: Path) -> dict[str, Any]:
    """The run's manifest, read by the companion's own reader (main() puts python/ on the path)."""
    from fsdp_studio import run_manifest

    return run_manifest.read(str(run_dir)) or {}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def runtime_pid(run_dir: Path) -> int | None:
    """The runtime as it names itself: the pid in its run_start."""
    start = of_type(events_of(run_dir), "run_start")
    ranks = (start[0].get("world") or {}).get("ranks", []) if start else []
    return ranks[0].get("pid") if ranks else None


def completes(c: Checks, root: Path, cli: Path, tokens: Path, work: Path, device: str) -> None:
    run_dir = work / "completes"
    p = supervised(root, cli, config(tokens, steps=20, device=device, **SMALL), run_dir)
    _, err = p.communicate(timeout=300)
    m = run_json(run_dir)
    events = events_of(run_dir)
    start = of_type(events, "run_start")
    ranks = (start[0].get("world") or {}).get("ranks", []) if start else []
    ok = (
        p.returncode == 0
        and m.get("status") == "completed"
        and m.get("step") == 20
        and len(m.get("pids", [])) >= 2
        and m["pids"][0] == p.pid
        and bool(ranks)
        and str(ranks[0].get("device", "")).startswith(device)
        and len(of_type(events, "step")) == 20
        and len(of_type(events, "run_end")) == 1
    )
    c.check(
        f"the supervisor around the {device} runtime: the manifest says completed at step 20, naming its processes",
        ok,
        {
            "code": p.returncode,
            "manifest": {k: m.get(k) for k in ("status", "step", "max_steps", "pids", "end_reason", "runtime_version")},
            "device": ranks[0].get("device") if ranks else None,
            "stderr": err[-800:],
        },
    )


def runtime_killed(c: Checks, root: Path, cli: Path, tokens: Path, work: Path, device: str) -> None:
    run_dir = work / "killed"
    p = supervised(root, cli, config(tokens, steps=100000, device=device, **SMALL), run_dir)
    deadline = time.time() + 120
    pid = None
    while time.time() < deadline and p.poll() is None:
        if of_type(events_of(run_dir), "step") and (pid := runtime_pid(run_dir)):
            break
        time.sleep(0.2)
    if pid is None:
        p.kill()
        c.check(
            f"the {device} runtime SIGKILLed under its supervisor: the manifest says failed, naming the signal",
            False,
            {"manifest": run_json(run_dir), "stderr": (p.communicate()[1] or "")[-800:]},
        )
        return
    os.kill(pid, signal.SIGKILL)
    try:
        _, err = p.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, err = p.communicate()
    m = run_json(run_dir)
    reason = m.get("end_reason") or ""
    left = [q for q in m.get("pids", []) if alive(q)]
    ok = m.get("status") == "failed" and ("signal 9" in reason or "SIGKILL" in reason) and not left
    c.check(
        f"the {device} runtime SIGKILLed under its supervisor: the manifest says failed, naming the signal",
        ok,
        {"status": m.get("status"), "end_reason": reason, "left": left, "stderr": err[-800:]},
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", type=Path, required=True, help="fsdp-train-native")
    ap.add_argument("--root", type=Path, required=True, help="the repository (for python/fsdp_studio)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    args = ap.parse_args()
    if not args.cli.is_file():
        ap.error(
            f"--cli {args.cli}: no such file"
            " (native/build-gpu/Release/fsdp-train-native after first-run.sh's build part)"
        )
    sys.path.insert(0, str(args.root.resolve() / "python"))
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.out / "supervised-work"
    work.mkdir(exist_ok=True)
    tokens = write_tokens(work / "tokens.bin", 200_000, SMALL["vocab"], seed=3)
    c = Checks()
    for check in (completes, runtime_killed):
        check(c, args.root.resolve(), args.cli.resolve(), tokens, work, args.device)
    (args.out / "supervised.json").write_text(json.dumps(c.results, indent=2, default=str))
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())

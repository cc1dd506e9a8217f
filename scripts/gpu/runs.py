"""What the GPU scripts share: token files in the runtime's format (native/FORMATS.md), run configs,
running the native CLI alone or under mpirun (as runs/launch/mpirun.ts starts it) and reading its
metrics.jsonl, and comparing a run's measured memory with its plan."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any


def write_token_ids(path: Path, ids: bytes | list[int], vocab: int, tokenizer: str) -> Path:
    """A token file (native/FORMATS.md) of the given ids (uint16)."""
    import array
    import sys

    a = array.array("H")
    a.extend(ids)  # array("H", some_bytes) would read the bytes as raw uint16s; extend takes each byte as an id
    if sys.byteorder != "little":
        a.byteswap()
    payload = a.tobytes()
    count = len(a)
    header = (
        b"FSDPTOK\0"
        + struct.pack("<IIQII", 1, 1, count, vocab, zlib.crc32(payload))
        + tokenizer.encode().ljust(16, b"\0")
        + bytes(16)
    )
    assert len(header) == 64
    # A new file renamed over the old one: a trainer reading the old one keeps reading it, whole
    # (the runtime refuses a token file rewritten in place under it).
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        f.write(header + payload)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def write_tokens(path: Path, count: int, vocab: int, seed: int) -> Path:
    """A token file of `count` pseudo-random ids below `vocab` (throughput and memory do not depend
    on the text; the runtime's own tests train on the fortunes corpus)."""
    import random

    rng = random.Random(seed)
    return write_token_ids(path, [rng.randrange(vocab) for _ in range(count)], vocab, "random")


def text_corpus(limit: int) -> bytes:
    """Real text on a machine without network: the Python standard library's sources (sorted, so
    the same bytes every time), up to `limit` bytes."""
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    out = bytearray()
    for f in sorted(root.rglob("*.py")):
        if "test" in f.parts or "site-packages" in f.parts:
            continue
        try:
            out += f.read_bytes()
        except OSError:
            continue
        if len(out) >= limit:
            break
    return bytes(out[:limit])


def config(
    train: Path,
    *,
    d_model: int,
    n_layers: int,
    n_heads: int,
    vocab: int,
    seq: int,
    batch: int,
    steps: int,
    dtype: str = "float32",
    device: str = "cuda",
    extra: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    c: dict[str, dict[str, Any]] = {
        "model": {
            "d_model": d_model,
            "n_layers": n_layers,
            "n_heads": n_heads,
            "vocab_size": vocab,
            "max_seq_len": seq,
        },
        "data": {"train": str(train), "seq_len": seq},
        "training": {
            "batch_size_per_gpu": batch,
            "max_steps": steps,
            "learning_rate": 6e-4,
            "warmup_steps": 2,
            "seed": 7,
        },
        "fsdp": {"sharding_strategy": "NO_SHARD"},
        "mixed_precision": {"param_dtype": dtype, "reduce_dtype": dtype, "buffer_dtype": dtype},
        "checkpointing": {"save_every_n_steps": 0, "save_final": False},
        "logging": {"every_n_steps": 1},
        "launch": {"device": device},
    }
    for section, values in (extra or {}).items():
        c.setdefault(section, {}).update(values)
    return c


def mpirun_argv(ranks: int, argv: list[str]) -> list[str]:
    """mpirun around argv as runs/launch/mpirun.ts makes it for one host."""
    root = ["--allow-run-as-root"] if hasattr(os, "getuid") and os.getuid() == 0 else []
    return [
        "mpirun",
        "-n",
        str(ranks),
        "--oversubscribe",
        "--bind-to",
        "none",
        *root,
        "-x",
        "OMP_WAIT_POLICY",
        "-x",
        "LD_LIBRARY_PATH",
        *argv,
    ]


def events_of(run_dir: Path) -> list[dict[str, Any]]:
    metrics = run_dir / "metrics.jsonl"
    return [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()] if metrics.exists() else []


def run(
    cli: Path, cfg: dict[str, Any], run_dir: Path, timeout: float = 300, ranks: int = 1, extra: list[str] | None = None
) -> tuple[int, list[dict[str, Any]], str]:
    """Runs the CLI on cfg (under mpirun with `ranks` > 1); returns its exit code, the events of metrics.jsonl and
    its stderr."""
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = run_dir / "config.json"
    if ranks > 1:
        cfg = {**cfg, "launch": {**cfg.get("launch", {}), "nproc_per_node": ranks}}
    cfg_path.write_text(json.dumps(cfg, indent=2))
    argv = [str(cli), "--config", str(cfg_path), "--run-dir", str(run_dir), *(extra or [])]
    env = {**os.environ, "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "passive")}
    try:
        p = subprocess.run(
            mpirun_argv(ranks, argv) if ranks > 1 else argv, capture_output=True, text=True, timeout=timeout, env=env
        )
    except subprocess.TimeoutExpired as e:
        return 124, events_of(run_dir), f"timed out after {timeout} s: {(e.stderr or b'')[-2000:]!r}"
    return p.returncode, events_of(run_dir), p.stderr[-4000:]


def measured_peaks(events: list[dict[str, Any]], rank: int | None = None) -> dict[str, int]:
    """The highest peak per category over the step events (the run's, or one rank's)."""
    steps = [
        e
        for e in events
        if e.get("type") == "step" and (e.get("rank") == rank if rank is not None else "rank" not in e)
    ]
    out: dict[str, int] = {}
    for s in steps:
        for k, v in s["mem_peak_by_category"].items():
            out[k] = max(out.get(k, 0), v)
    return out


CATEGORIES = ("params", "grads", "optimizer", "activations", "workspace", "comm", "other")


def plan_comparison(events: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """Every rank's measured peak per category beside the plan: {rank: {category: {planned, measured, difference}}}
    (difference = measured - planned, in bytes; rank "0" for a one-process run)."""
    starts = of_type(events, "run_start")
    if not starts:
        return {}
    plan = starts[0]["memory_plan"]
    ranks = sorted({e["rank"] for e in events if e.get("type") == "step" and "rank" in e}) or [None]
    out: dict[str, dict[str, dict[str, int]]] = {}
    for r in ranks:
        m = measured_peaks(events, r)
        out[str(0 if r is None else r)] = {
            k: {"planned": plan[k], "measured": m.get(k, 0), "difference": m.get(k, 0) - plan[k]} for k in CATEGORIES
        }
    return out


def plan_differences(events: list[dict[str, Any]]) -> dict[str, Any]:
    """plan_comparison's categories that differ, by rank (empty when measured = plan everywhere)."""
    out: dict[str, Any] = {}
    for rank, categories in plan_comparison(events).items():
        diff = {k: v for k, v in categories.items() if v["difference"] != 0}
        if diff:
            out[rank] = diff
    return out


class PlanLedger:
    """Measured peak = plan for every run a script makes, reported as ONE check at the end: every run's
    differing categories with planned, measured and difference bytes. The runs' other checks (losses,
    resume, refusals) do not depend on it, so a bookkeeping mismatch does not hide their results."""

    def __init__(self) -> None:
        self.runs: dict[str, dict[str, Any]] = {}

    def add(self, run: str, events: list[dict[str, Any]]) -> None:
        if of_type(events, "run_start") and of_type(events, "step"):
            self.runs[run] = plan_differences(events)

    def report(self, checks: Any, name: str = "measured peak = plan per category, every run and rank") -> None:
        """checks.check(name, ok, detail): ok when at least one run was compared and none differs."""
        differing = {run: diff for run, diff in self.runs.items() if diff}
        checks.check(
            name,
            bool(self.runs) and not differing,
            {"runs_compared": len(self.runs), "runs_differing": len(differing), "differences": differing}
            if self.runs
            else "no run reached a step to compare",
        )


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == kind]

"""What the GPU scripts share: token files in the runtime's format (native/FORMATS.md), run configs,
and running the native CLI and reading its metrics.jsonl."""

from __future__ import annotations

import json
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any


def write_tokens(path: Path, count: int, vocab: int, seed: int) -> Path:
    """A token file of `count` pseudo-random ids below `vocab` (throughput and memory do not depend
    on the text; the runtime's own tests train on the fortunes corpus)."""
    import random

    rng = random.Random(seed)
    payload = struct.pack(f"<{count}H", *(rng.randrange(vocab) for _ in range(count)))
    header = b"FSDPTOK\0" + struct.pack("<IIQII", 1, 1, count, vocab, zlib.crc32(payload)) + b"random".ljust(16, b"\0") + bytes(16)
    assert len(header) == 64
    path.write_bytes(header + payload)
    return path


def config(train: Path, *, d_model: int, n_layers: int, n_heads: int, vocab: int, seq: int, batch: int, steps: int,
           dtype: str = "float32", device: str = "cuda", extra: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    c: dict[str, dict[str, Any]] = {
        "model": {"d_model": d_model, "n_layers": n_layers, "n_heads": n_heads, "vocab_size": vocab, "max_seq_len": seq},
        "data": {"train": str(train), "seq_len": seq},
        "training": {"batch_size_per_gpu": batch, "max_steps": steps, "learning_rate": 6e-4, "warmup_steps": 2, "seed": 7},
        "fsdp": {"sharding_strategy": "NO_SHARD"},
        "mixed_precision": {"param_dtype": dtype, "reduce_dtype": dtype, "buffer_dtype": dtype},
        "checkpointing": {"save_every_n_steps": 0, "save_final": False},
        "logging": {"every_n_steps": 1},
        "launch": {"device": device},
    }
    for section, values in (extra or {}).items():
        c.setdefault(section, {}).update(values)
    return c


def run(cli: Path, cfg: dict[str, Any], run_dir: Path, timeout: float = 300) -> tuple[int, list[dict[str, Any]], str]:
    """Runs the CLI on cfg; returns its exit code, the events of metrics.jsonl and its stderr."""
    run_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = run_dir / "config.json"
    cfg_path.write_text(json.dumps(cfg, indent=2))
    p = subprocess.run([str(cli), "--config", str(cfg_path), "--run-dir", str(run_dir)], capture_output=True, text=True, timeout=timeout)
    metrics = run_dir / "metrics.jsonl"
    events = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()] if metrics.exists() else []
    return p.returncode, events, p.stderr[-4000:]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("type") == kind]

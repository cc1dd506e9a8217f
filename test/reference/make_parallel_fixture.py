"""Makes test/fixtures/reference/parallel/fp32.json: the native trainer's sharding strategies held to
PyTorch 2's (format: test/fixtures/reference/README.md, "Parallel fixture").

1. The native trainer starts a run of CONFIG below on text of Debian's fortunes (the sample data's
   byte tokens, unshuffled) and saves its step-0 checkpoint (stability.on_nan: rollback does);
   `fsdp-train export --hf` writes that checkpoint as a Hugging Face GPT-2 folder.
2. PyTorch 2 trains gpt.py from those weights on the same batches for 20 AdamW steps in float32,
   under torchrun at 1 and at 2 ranks, once per strategy: DistributedDataParallel (the runtime's
   NO_SHARD), FSDP2 fully_shard (FULL_SHARD) and fully_shard(reshard_after_forward=False)
   (SHARD_GRAD_OP) — parallel_worker.py.
3. The fixture keeps the config, the token ids, the CRC-32 of the starting weights and each run's
   loss, gradient norm and learning rate per step. test/native/parallel-reference.test.ts runs the
   native trainer with each strategy at 1 and 2 ranks and compares.

Run from the repository root with the project's Python environment:
``npm run fixtures:reference`` (or ``node scripts/reference.mjs parallel``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Any

from fixture_file import provenance, write_json

ROOT = Path(__file__).resolve().parents[2]
FORMAT = "fsdp-studio/parallel-reference"
VERSION = 1
STEPS = 20
GLOBAL_BATCH = 4  # sequences per step: 4 on one rank, 2 on each of two
SEQ = 16
SAMPLE_TOKENS = ROOT / "samples" / "data" / "fortunes-byte-train.tok"

CONFIG: dict[str, Any] = {
    "name": "parallel-reference",
    "model": {
        "d_model": 32,
        "n_layers": 2,
        "n_heads": 4,
        "vocab_size": 256,
        "max_seq_len": SEQ,
        "mlp_ratio": 4,
        "tie_embeddings": True,
        "dropout": 0,
        "init_std": 0.02,
    },
    "data": {"seq_len": SEQ, "shuffle": False, "prefetch_batches": 0},
    "training": {
        "gradient_accumulation_steps": 1,
        "max_steps": STEPS,
        "learning_rate": 3e-3,
        "schedule": "warmup_cosine",
        "warmup_steps": 3,
        "min_lr_ratio": 0.1,
        "decay_ratio": 0.2,
        "weight_decay": 0.1,
        "betas": [0.9, 0.95],
        "eps": 1e-8,
        "max_grad_norm": 1.0,
        "layer_lr_decay": 1.0,
        "seed": 2313,
    },
    "mixed_precision": {"param_dtype": "float32", "reduce_dtype": "float32"},
    # rollback saves the step-0 checkpoint the PyTorch runs start from (and asks for checkpoints).
    "stability": {"on_nan": "rollback"},
    "checkpointing": {"save_every_n_steps": 1000, "keep_last_n": 2},
    "logging": {"tensorboard": False},
    "launch": {"device": "cpu", "threads_per_rank": 1},
}

# The runtime's strategy ↔ PyTorch's.
STRATEGIES = {"NO_SHARD": "ddp", "FULL_SHARD": "fully_shard", "SHARD_GRAD_OP": "fully_shard_keep"}


def read_tokens(path: Path, count: int) -> list[int]:
    """The first `count` token ids of a token file (native/FORMATS.md: 64-byte header, then uint16 ids)."""
    data = path.read_bytes()
    if data[:8] != b"FSDPTOK\0":
        raise ValueError(f"{path}: not a token file")
    n = int.from_bytes(data[16:24], "little")
    if n < count:
        raise ValueError(f"{path}: {n} tokens, {count} needed")
    return [int.from_bytes(data[64 + 2 * i : 66 + 2 * i], "little") for i in range(count)]


def run(argv: list[str], **kw: Any) -> None:
    r = subprocess.run(argv, cwd=ROOT, **kw)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(map(str, argv))}")


def native_start(work: Path, tokens_file: Path) -> tuple[Path, list[dict[str, Any]]]:
    """Runs the native trainer on one rank; returns the Hugging Face export of its step-0 checkpoint and its own
    steps."""
    config = json.loads(json.dumps(CONFIG))
    config["data"]["train"] = str(tokens_file)
    config["training"]["batch_size_per_gpu"] = GLOBAL_BATCH
    config["fsdp"] = {"sharding_strategy": "NO_SHARD"}
    (work / "config.json").write_text(json.dumps(config))
    node = shutil.which("node") or "node"
    run(
        [node, "bin/fsdp-train.mjs", str(work / "config.json"), "--run-dir", str(work / "run")],
        stdout=subprocess.DEVNULL,
    )
    run(
        [
            node,
            "bin/fsdp-train.mjs",
            "export",
            str(work / "run" / "checkpoints" / "step-00000000"),
            "--hf",
            str(work / "hf"),
        ]
    )
    steps = [
        e for e in map(json.loads, (work / "run" / "metrics.jsonl").read_text().splitlines()) if e["type"] == "step"
    ]
    return work / "hf" / "model.safetensors", steps


def pytorch_run(work: Path, weights: Path, tokens: list[int], world: int, strategy: str) -> dict[str, Any]:
    config = json.loads(json.dumps(CONFIG))
    config["training"]["batch_size_per_gpu"] = GLOBAL_BATCH // world
    job = work / f"job-{world}-{strategy}.json"
    out = work / f"result-{world}-{strategy}.json"
    job.write_text(json.dumps({"config": config, "weights": str(weights), "tokens": tokens, "strategy": strategy}))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(world),
            str(Path(__file__).resolve().parent / "parallel_worker.py"),
            "--job",
            str(job),
            "--out",
            str(out),
        ],
        env=env,
    )
    return json.loads(out.read_text())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "test" / "fixtures" / "reference" / "parallel")
    args = p.parse_args()
    if not SAMPLE_TOKENS.exists():
        raise SystemExit(
            f"{SAMPLE_TOKENS} is missing: run the set-up first (npm test or npm start prepares the sample data)"
        )
    tokens = read_tokens(SAMPLE_TOKENS, STEPS * GLOBAL_BATCH * SEQ + 1)
    with tempfile.TemporaryDirectory(prefix="fsdp-parallel-ref-") as tmp:
        work = Path(tmp)
        # The runtime reads the same ids from a file of its own (the sample file holds many more).
        weights, native_steps = native_start(work, SAMPLE_TOKENS)
        runs = []
        for world in (1, 2):
            for native, strategy in STRATEGIES.items():
                result = pytorch_run(work, weights, tokens, world, strategy)
                runs.append(
                    {"world_size": world, "sharding_strategy": native, "pytorch": strategy, "steps": result["steps"]}
                )
                worst = max(
                    abs(a["loss"] - b["loss"]) / abs(b["loss"])
                    for a, b in zip(native_steps, result["steps"], strict=True)
                )
                print(
                    f"{world} rank(s), {native} ↔ {strategy}: worst relative loss difference to the native 1-rank"
                    f" run {worst:.2e}",
                    flush=True,
                )
        document = {
            "format": FORMAT,
            "version": VERSION,
            "made_by": provenance(["node", "scripts/reference.mjs", "parallel"], "cpu"),
            "config": CONFIG,
            "global_batch": GLOBAL_BATCH,
            "tokens": {
                "source": "samples/data/fortunes-byte-train.tok (Debian's fortunes, byte tokens), the first ids",
                "ids": tokens,
            },
            "initial_weights": {
                "from": "the native trainer's step-0 checkpoint of this config, exported with fsdp-train export --hf",
                "safetensors_crc32": zlib.crc32(weights.read_bytes()),
            },
            "runs": runs,
        }
        size = write_json(args.out / "fp32.json", document)
        print(f"wrote {args.out / 'fp32.json'} ({size} bytes)")


if __name__ == "__main__":
    main()

"""The configurations whose GPU memory is measured (issue 9, part 2), and for each the estimator's
input (``MemoryInput`` of core/memory/memory-input.ts, as test/fixtures/measured/README.md asks).

The default grid: plain (one GPU, no wrapper) and FSDP2 (``fully_shard`` on a one-GPU mesh) ×
activation checkpointing none / every block / selective × fp32 / bf16 × two model sizes × two
sequence lengths × three micro-batch sizes = 144 points. ``full`` adds GPT-2 355M and micro-batch 8.
``smoke`` is a tiny model for exercising the harness on a CPU.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Literal

from gpt import GptShape

Strategy = Literal["plain", "fsdp2"]
Precision = Literal["fp32", "bf16"]
Checkpointing = Literal["none", "every", "selective"]


@dataclass(frozen=True)
class ModelPreset:
    id: str
    name: str  # as the estimator's presets name it (core/memory/model-presets.ts)
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    max_seq_len: int

    def shape(self) -> GptShape:
        return GptShape(self.vocab_size, self.d_model, self.n_layers, self.n_heads, self.max_seq_len)


PRESETS: dict[str, ModelPreset] = {
    p.id: p
    for p in (
        ModelPreset("tiny", "custom", 256, 64, 2, 4, 128),
        ModelPreset("gpt-d512-l8", "custom", 50257, 512, 8, 8, 1024),
        ModelPreset("gpt2-124m", "GPT-2 124M", 50257, 768, 12, 12, 1024),
        ModelPreset("gpt2-355m", "GPT-2 355M", 50257, 1024, 24, 16, 1024),
    )
}


@dataclass(frozen=True)
class Point:
    model: ModelPreset
    strategy: Strategy
    precision: Precision
    checkpointing: Checkpointing
    seq_len: int
    micro_batch: int

    @property
    def id(self) -> str:
        return (
            f"{self.model.id}/{self.strategy}/{self.precision}/ac-{self.checkpointing}"
            f"/s{self.seq_len}/b{self.micro_batch}"
        )

    def estimator_input(self) -> dict[str, Any]:
        """The estimator's MemoryInput for this point, without ``gpu``."""
        m = self.model
        low = "bfloat16" if self.precision == "bf16" else "float32"
        return {
            "framework": "pytorch",
            "device": "cuda",
            "model": {
                "name": m.name,
                "vocabSize": m.vocab_size,
                "dModel": m.d_model,
                "nLayers": m.n_layers,
                "nHeads": m.n_heads,
                "nKvHeads": m.n_heads,
                "ffnHidden": 4 * m.d_model,
                "mlp": "gelu",
                "norm": "layernorm",
                "bias": True,
                "positionEmbeddings": m.max_seq_len,
                "tieEmbeddings": True,
            },
            "seqLen": self.seq_len,
            "microBatch": self.micro_batch,
            "gradAccumSteps": 1,
            "strategy": "FULL_SHARD" if self.strategy == "fsdp2" else "NO_SHARD",
            "nprocPerNode": 1,
            "nnodes": 1,
            # bf16: FSDP2 MixedPrecisionPolicy(param bf16, reduce fp32) or autocast(bf16) for plain.
            "precision": {"param": low, "reduce": "float32", "activation": low},
            "checkpointing": {
                "policy": {"none": "none", "every": "every_n", "selective": "selective"}[self.checkpointing],
                "everyN": 1,
            },
            "offload": {"optimizer": False, "params": False},
            "attention": "flash",
            "dropout": 0,
            "fsdp": {"backwardPrefetch": "BACKWARD_PRE", "forwardPrefetch": False},
            "ddp": {"bucketCapMb": 25, "gradientAsBucketView": False},
            "zero": {
                "reduceBucketSize": 5e8,
                "allgatherBucketSize": 5e8,
                "prefetchBucketSize": 5e7,
                "maxLiveParameters": 1e9,
                "paramPersistenceThreshold": 1e5,
                "contiguousGradients": True,
            },
        }


def _product(models: list[str], seqs: list[int], micro_batches: list[int]) -> list[Point]:
    strategies: list[Strategy] = ["plain", "fsdp2"]
    precisions: list[Precision] = ["fp32", "bf16"]
    policies: list[Checkpointing] = ["none", "every", "selective"]
    return [
        Point(PRESETS[m], s, p, c, t, b)
        for m, s, p, c, t, b in itertools.product(models, strategies, precisions, policies, seqs, micro_batches)
    ]


GRIDS: dict[str, list[Point]] = {
    "default": _product(["gpt-d512-l8", "gpt2-124m"], [512, 1024], [1, 2, 4]),
    "full": _product(["gpt-d512-l8", "gpt2-124m", "gpt2-355m"], [512, 1024], [1, 4, 8]),
    "smoke": _product(["tiny"], [32, 64], [1, 2]),
}

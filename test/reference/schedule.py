"""Learning-rate schedules of ``training.schedule`` (core/schemas/run-config.schema.json), as
PyTorch schedulers over the optimizer's groups. Step s (1-based) is the s-th optimizer step; the
rate it uses is the group's rate when it runs.

- warmup_cosine, linear, wsd, constant: written from the schema's definitions as a LambdaLR
  (warmup rises linearly from 0, so step s of w warmup steps uses peak * s / w);
- one_cycle: torch.optim.lr_scheduler.OneCycleLR itself (start at peak / 25, cosine up to the
  peak at step ``warmup_steps`` — 30 % of the steps when 0 — then cosine down to
  peak * min_lr_ratio at the last step), since the runtime states it follows PyTorch's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from torch.optim.lr_scheduler import LambdaLR, OneCycleLR


def _cosine(start: float, end: float, progress: float) -> float:
    progress = min(max(progress, 0.0), 1.0)
    return end + (start - end) * 0.5 * (1.0 + math.cos(math.pi * progress))


def _linear(start: float, end: float, progress: float) -> float:
    return start + (end - start) * min(max(progress, 0.0), 1.0)


def lr_factor(training: Mapping[str, Any], step: int) -> float:
    """The rate of optimizer step ``step`` as a fraction of the peak (not for one_cycle)."""
    kind = training.get("schedule", "warmup_cosine")
    total = int(training["max_steps"])
    warmup = int(training.get("warmup_steps", 0))
    floor = float(training.get("min_lr_ratio", 0.1))
    if kind == "one_cycle":
        raise ValueError("one_cycle is PyTorch's OneCycleLR: use scheduler()")
    if warmup > 0 and step <= warmup:
        return step / warmup
    after = max(1, total - warmup)
    if kind == "warmup_cosine":
        return _cosine(1.0, floor, (step - warmup) / after)
    if kind == "linear":
        return _linear(1.0, floor, (step - warmup) / after)
    if kind == "wsd":
        decay_steps = total * float(training.get("decay_ratio", 0.2))
        if decay_steps % 1 == 0.5:
            raise ValueError(
                "training.decay_ratio x max_steps ends in .5: C++ and Python round it differently; pick another"
            )
        decay_start = max(warmup, total - round(decay_steps))
        return 1.0 if step <= decay_start else _linear(1.0, floor, (step - decay_start) / max(1, total - decay_start))
    if kind == "constant":
        return 1.0
    raise ValueError(f"training.schedule: {kind!r} is not one of warmup_cosine, wsd, one_cycle, linear, constant")


def scheduler(optimizer: torch.optim.Optimizer, training: Mapping[str, Any]) -> torch.optim.lr_scheduler.LRScheduler:
    """A scheduler to step once after each optimizer step (never after the last)."""
    if training.get("schedule") != "one_cycle":
        return LambdaLR(optimizer, lambda index: lr_factor(training, index + 1))
    total = int(training["max_steps"])
    warmup = int(training.get("warmup_steps", 0))
    floor = float(training.get("min_lr_ratio", 0.1))
    if floor <= 0:
        raise ValueError("training.min_lr_ratio: one_cycle needs a floor above 0 (OneCycleLR divides by it)")
    return OneCycleLR(
        optimizer,
        max_lr=[g["lr"] for g in optimizer.param_groups],
        total_steps=total,
        pct_start=warmup / total if warmup > 0 else 0.3,
        anneal_strategy="cos",
        cycle_momentum=False,
        div_factor=25.0,
        final_div_factor=1.0 / (25.0 * floor),
        three_phase=False,
    )

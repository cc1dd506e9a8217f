"""Three training steps with the caching allocator's counters read by phase (issue 9, part 2), as
test/fixtures/measured/README.md defines them:

- step 1 allocates the optimizer state and warms the allocator; steps 2–3 give
  ``max_memory_allocated`` / ``max_memory_reserved``;
- step 3 is cut into phases — forward (through the loss), backward, optimizer (step and
  ``zero_grad(set_to_none=True)``) — with the peak counters reset before each and read after it;
- ``logits`` and ``loss`` are dropped after backward, so they are not live at the optimizer step.

The counters come from a ``MemoryCounters``: CUDA's on a GPU; on a CPU there are none (every value
is None), which lets the same loop run — and be tested — where no GPU is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

import torch
from gpt import loss_of

PHASES = ("forward", "backward", "optimizer")


class MemoryCounters(Protocol):
    def reset_peak(self) -> None: ...
    def allocated(self) -> int | None: ...
    def peak_allocated(self) -> int | None: ...
    def peak_reserved(self) -> int | None: ...
    def stats(self) -> dict[str, Any] | None: ...


class CudaCounters:
    """torch.cuda's caching-allocator counters of the current device."""

    def reset_peak(self) -> None:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()

    def allocated(self) -> int | None:
        torch.cuda.synchronize()
        return torch.cuda.memory_allocated()

    def peak_allocated(self) -> int | None:
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated()

    def peak_reserved(self) -> int | None:
        return torch.cuda.max_memory_reserved()

    def stats(self) -> dict[str, Any] | None:
        return dict(torch.cuda.memory_stats())


class NoCounters:
    """A device without allocator counters (the CPU): the loop runs, nothing is measured."""

    def reset_peak(self) -> None:
        pass

    def allocated(self) -> int | None:
        return None

    def peak_allocated(self) -> int | None:
        return None

    def peak_reserved(self) -> int | None:
        return None

    def stats(self) -> dict[str, Any] | None:
        return None


def _max(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return max(known) if len(known) == len(values) and known else None


def measure_three_steps(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    counters: MemoryCounters,
    autocast: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
    on_phase: Callable[[int, str], None] | None = None,
) -> dict[str, Any]:
    """Runs steps 1–3 on one micro-batch and returns the README's ``measured`` object, plus the
    three losses (``losses``) so a caller can see the steps trained. ``on_phase(step, phase)`` is
    called at the end of every phase of every step."""
    losses: list[float] = []
    peaks_allocated: list[int | None] = []
    peaks_reserved: list[int | None] = []
    phases: dict[str, dict[str, int | None]] = {}
    for step in (1, 2, 3):
        if step >= 2:
            counters.reset_peak()
        for phase in PHASES:
            if step == 3:
                counters.reset_peak()
            if phase == "forward":
                with autocast():
                    logits = model(inputs)
                    loss = loss_of(logits, targets)
            elif phase == "backward":
                loss.backward()
                losses.append(float(loss.detach()))
                del logits, loss
            else:
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
            if step == 3:
                phases[phase] = {
                    "peak_allocated": counters.peak_allocated(),
                    "end_allocated": counters.allocated(),
                    "peak_reserved": counters.peak_reserved(),
                }
                peaks_allocated.append(phases[phase]["peak_allocated"])
                peaks_reserved.append(phases[phase]["peak_reserved"])
            if on_phase is not None:
                on_phase(step, phase)
        if step == 2:
            peaks_allocated.append(counters.peak_allocated())
            peaks_reserved.append(counters.peak_reserved())
    return {
        "max_memory_allocated": _max(peaks_allocated),
        "max_memory_reserved": _max(peaks_reserved),
        "phases": phases,
        "memory_stats": counters.stats(),
        "losses": losses,
    }

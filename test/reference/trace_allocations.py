"""Records every storage PyTorch allocates and frees, in order, through three training steps of the
harness's GPT as test/reference/measure_memory.py runs them (plain module, autocast for bf16,
AdamW(foreach=True), zero_grad(set_to_none=True), `del logits, loss` after backward), on the CPU.

The order is what the CUDA caching allocator sees: which tensors are live when each request comes.
PyTorch's dispatcher shows every operator's outputs (a TorchDispatchMode); a storage's end is seen
by a weak reference to it. Kernels' internal scratch is not seen (the CUDA kernels' own is modelled
apart, core/memory/frameworks/pytorch-block.ts). Selective checkpointing saves the CPU attention
kernel's outputs too, as the harness's policy saves the CUDA kernels' (the CPU op is not in its list).

    python3 test/reference/trace_allocations.py --vocab 1000 --d-model 64 --layers 2 --heads 2 \
        --seq 32 --batch 8 --checkpointing every --precision bf16 [--fake] > trace.json

--fake runs under FakeTensorMode: the same order at any size, nothing computed (plain module only).
Output: JSON {"command", "torch", "events": [[kind, id, bytes, op, phase], ...]}: kind "a" (alloc,
bytes) or "f" (free), phase "setup" (parameters and batch) or "<step>/<forward|backward|optimizer>".
test/fixtures/pytorch-op-order/ holds recorded traces; test/unit/memory-replay-order.test.ts holds
the replay to them.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
import weakref
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpt import Gpt, GptShape, initialise, loss_of
from parallelize import Checkpointed, apply_checkpointing


class AllocationLog(TorchDispatchMode):
    """Logs each new storage an operator returns, and (by weak reference) when it is freed."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[list[Any]] = []
        self.phase = "setup"
        self._seen: weakref.WeakSet[Any] = weakref.WeakSet()
        self._next = 1

    def note(self, t: torch.Tensor, op: str) -> None:
        try:
            storage = t.untyped_storage()
        except (RuntimeError, NotImplementedError):
            return
        if storage in self._seen or storage.nbytes() == 0:
            return
        self._seen.add(storage)
        i = self._next
        self._next += 1
        self.events.append(["a", i, storage.nbytes(), op, self.phase])
        weakref.finalize(storage, self.freed, i)

    def freed(self, i: int) -> None:
        # The phase when the storage dies, not when it was allocated.
        self.events.append(["f", i, 0, "", self.phase])

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, torch.Tensor):
                self.note(t, str(func.overloadpacket.__name__))
        return out


def selective_like_cuda() -> Any:
    """The harness's selective policy, with the CPU attention kernel saved as the CUDA ones are."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    names = [
        "mm",
        "addmm",
        "bmm",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
    ]
    save = {getattr(aten, n).default for n in names if hasattr(aten, n)}

    def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
        return CheckpointPolicy.MUST_SAVE if op in save else CheckpointPolicy.PREFER_RECOMPUTE

    return functools.partial(create_selective_checkpoint_contexts, policy)


def trace(a: argparse.Namespace) -> list[list[Any]]:
    log = AllocationLog()
    torch.manual_seed(0)
    model = Gpt(GptShape(a.vocab, a.d_model, a.layers, a.heads, max(a.seq, 32)), attention="sdpa")
    initialise(model, 1234, 0.02)
    if a.checkpointing == "selective":
        for i, block in enumerate(model.blocks):
            model.blocks[i] = Checkpointed(block, selective_like_cuda())
    else:
        apply_checkpointing(model, a.checkpointing)
    for p in model.parameters():  # model.to(device): every parameter, in module order
        log.note(p, "parameter")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq + 1))
    inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    del tokens
    for t in (inputs, targets):
        log.note(t, "batch")
    autocast = (
        (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if a.precision == "bf16" else contextlib.nullcontext
    )
    with log:
        for step in (1, 2, 3):
            log.phase = f"{step}/forward"
            with autocast():
                logits = model(inputs)
                loss = loss_of(logits, targets)
            log.phase = f"{step}/backward"
            loss.backward()
            del logits, loss
            log.phase = f"{step}/optimizer"
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    return log.events


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("vocab", 1000), ("d-model", 64), ("layers", 2), ("heads", 2), ("seq", 32), ("batch", 8)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--checkpointing", choices=["none", "every", "selective"], default="none")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--fake", action="store_true", help="run under FakeTensorMode (any size, nothing computed)")
    a = parser.parse_args(argv)
    if a.fake:
        from torch._subclasses.fake_tensor import FakeTensorMode

        with FakeTensorMode(allow_non_fake_inputs=True):
            events = trace(a)
    else:
        events = trace(a)
    json.dump(
        {
            "command": " ".join(["python3", "test/reference/trace_allocations.py", *argv]),
            "torch": torch.__version__,
            "events": events,
        },
        sys.stdout,
    )
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

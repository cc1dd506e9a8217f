"""What is applied to the model from outside, as torchtitan does: activation checkpointing around
blocks, then FSDP2 (``fully_shard``) per block and at the root. The model (gpt.py) knows nothing
of either. Each needs a PyTorch new enough; ``missing_feature`` says what this one lacks."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch.utils.checkpoint as activation_checkpoint
from gpt import Gpt
from torch import nn


def missing_feature(checkpointing: str, strategy: str) -> str | None:
    """Why this PyTorch cannot run the combination, or None when it can."""
    if checkpointing == "selective" and not hasattr(activation_checkpoint, "create_selective_checkpoint_contexts"):
        return (
            "selective checkpointing needs torch.utils.checkpoint.create_selective_checkpoint_contexts"
            f" (PyTorch >= 2.4); this is {torch.__version__}"
        )
    if strategy == "fsdp2" and _fully_shard() is None:
        return f"FSDP2 needs torch.distributed.fsdp.fully_shard (PyTorch >= 2.6); this is {torch.__version__}"
    return None


def _fully_shard() -> tuple[Callable[..., Any], type] | None:
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    except Exception:  # ImportError; PyTorch 1.13 on Python 3.11 even raises ValueError importing its FSDP
        return None
    return fully_shard, MixedPrecisionPolicy


class Checkpointed(nn.Module):
    """A block whose activations are recomputed in backward (non-reentrant torch.utils.checkpoint);
    with ``context_fn``, only what its policy does not save (selective)."""

    def __init__(self, block: nn.Module, context_fn: Callable[[], Any] | None = None) -> None:
        super().__init__()
        self.block = block
        self.context_fn = context_fn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kwargs: dict[str, Any] = {"context_fn": self.context_fn} if self.context_fn is not None else {}
        return activation_checkpoint.checkpoint(self.block, x, use_reentrant=False, **kwargs)


def _selective_context() -> Callable[[], Any]:
    """Save the outputs of matrix products and of SDPA; recompute norms, GELU and the rest
    (test/fixtures/measured/README.md; Korthikanti et al. 2022, selective recomputation)."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    aten = torch.ops.aten
    names = [
        "mm",
        "addmm",
        "bmm",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
    ]
    save = {getattr(aten, n).default for n in names if hasattr(aten, n)}

    def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> Any:
        return CheckpointPolicy.MUST_SAVE if op in save else CheckpointPolicy.PREFER_RECOMPUTE

    return functools.partial(create_selective_checkpoint_contexts, policy)


def apply_checkpointing(model: Gpt, policy: str, every_n: int = 1) -> None:
    """``every``: blocks n-1, 2n-1, … recompute everything; ``selective``: every block keeps its
    matrix-product and attention outputs; ``none``: nothing."""
    if policy == "none":
        return
    for i, block in enumerate(model.blocks):
        if policy == "every" and (i + 1) % every_n == 0:
            model.blocks[i] = Checkpointed(block)
        elif policy == "selective":
            model.blocks[i] = Checkpointed(block, _selective_context())
        elif policy != "every":
            raise ValueError(f"checkpointing: {policy!r} is not none, every or selective")


def apply_fsdp2(model: Gpt, mesh: Any, param_dtype: torch.dtype | None) -> None:
    """One FSDP2 unit per block plus the root (embeddings, final LayerNorm, head). ``param_dtype``
    bf16: MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)."""
    found = _fully_shard()
    if found is None:
        raise RuntimeError(missing_feature("none", "fsdp2"))
    fully_shard, MixedPrecisionPolicy = found
    mp = (
        MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32)
        if param_dtype is not None
        else MixedPrecisionPolicy()
    )
    for block in model.blocks:
        fully_shard(block, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)


@functools.cache
def one_gpu_mesh() -> Any:
    """A one-rank process group (NCCL, loopback) and its device mesh, made once per process; on a
    machine without CUDA (the CPU dry run) gloo and a CPU mesh, which FSDP2 runs on too."""
    import socket

    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh

    if not dist.is_initialized():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dist.init_process_group(
            "nccl" if torch.cuda.is_available() else "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1
        )
    return init_device_mesh("cuda" if torch.cuda.is_available() else "cpu", (1,))

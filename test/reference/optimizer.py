"""AdamW as the runtime configures it (core/schemas/run-config.schema.json ``training``):

- decay groups: decoupled weight decay on matrix weights only (the weights of the linear layers:
  attn.qkv, attn.proj, mlp.fc, mlp.fc2 and an untied lm_head), not on biases, LayerNorm
  parameters or embeddings;
- layer-wise learning-rate decay: block i of L gets ``lr * layer_lr_decay ** (L - i)``, the
  embeddings the lowest rate ``layer_lr_decay ** (L + 1)``, the head (final LayerNorm, untied
  lm_head) the full rate;
- global gradient-norm clipping to ``max_grad_norm`` (0 disables it).

The update itself is torch.optim.AdamW's: this is the PyTorch side of the comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from gpt import Gpt
from torch import nn


def lr_scale(param_name: str, n_layers: int, layer_lr_decay: float) -> float:
    """The factor on the peak learning rate of the parameter with this name."""
    if param_name.startswith("embedding."):
        return layer_lr_decay ** (n_layers + 1)
    if param_name.startswith("blocks."):
        return layer_lr_decay ** (n_layers - int(param_name.split(".")[1]))
    return 1.0


def decayed_names(model: nn.Module) -> set[str]:
    """Names of the parameters weight decay applies to: the weights of linear layers."""
    return {f"{name}.weight" for name, m in model.named_modules() if isinstance(m, nn.Linear)}


def adamw(model: Gpt, training: Mapping[str, Any]) -> torch.optim.AdamW:
    """torch.optim.AdamW over one parameter group per (learning-rate factor, decay) pair.

    Each group's ``lr`` is the peak rate times its factor, so a scheduler that multiplies every
    group's initial rate (LambdaLR, OneCycleLR with per-group max_lr) keeps the factors.
    """
    peak = float(training["learning_rate"])
    decay = float(training.get("weight_decay", 0.1))
    layer_decay = float(training.get("layer_lr_decay", 1.0))
    decayed = decayed_names(model)
    groups: dict[tuple[float, bool], list[nn.Parameter]] = {}
    for name, p in model.named_parameters():
        key = (lr_scale(name, model.shape.n_layers, layer_decay), name in decayed)
        groups.setdefault(key, []).append(p)
    betas = training.get("betas", [0.9, 0.95])
    return torch.optim.AdamW(
        [
            {"params": ps, "lr": peak * scale, "weight_decay": decay if decays else 0.0}
            for (scale, decays), ps in groups.items()
        ],
        lr=peak,
        betas=(float(betas[0]), float(betas[1])),
        eps=float(training.get("eps", 1e-8)),
    )


def gradient(param: torch.Tensor) -> torch.Tensor:
    """A parameter's gradient after backward: every parameter of gpt.py's model takes part in the loss."""
    if param.grad is None:
        raise ValueError(f"a parameter of shape {tuple(param.shape)} has no gradient: was backward run?")
    return param.grad


def clip_gradients(model: nn.Module, max_grad_norm: float) -> tuple[float, float]:
    """Clips the global gradient norm in place; returns (the norm before clipping, the factor applied)."""
    params = [p for p in model.parameters() if p.grad is not None]
    if max_grad_norm <= 0:
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params]))
        return float(norm), 1.0
    norm = float(torch.nn.utils.clip_grad_norm_(params, max_grad_norm))
    # clip_grad_norm_ multiplies by max_norm / (norm + 1e-6) when that is below 1.
    factor = max_grad_norm / (norm + 1e-6)
    return norm, factor if factor < 1.0 else 1.0

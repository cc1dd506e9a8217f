"""FSDP Studio's GPT in PyTorch: the model of the native runtime, parameter for parameter.

Same parameter names, shapes and order as native/src/model/param_layout.cc (so a flat
concatenation of ``named_parameters()`` is the runtime's units laid end to end), same ops and
numerics as native/src/reference/reference_gpt.h:

- embeddings: ``wte[token] + wpe[position]``;
- pre-LN blocks: ``x + proj(attention(ln1(x)))``, then ``x + fc2(gelu(fc(ln2(x))))``;
- LayerNorm eps 1e-5; GELU with the tanh approximation (GPT-2's);
- causal attention with scores ``q k^T / sqrt(d_model / n_heads)``; qkv is one (3C, C) matrix
  holding q, k, v in that order, heads contiguous inside each;
- final LayerNorm, LM head without bias, tied to ``wte`` unless ``tie_embeddings`` is false;
- loss: mean softmax cross-entropy over all tokens.

No dropout: the runtime's masks come from a counter-based RNG that PyTorch cannot reproduce, so
every comparison runs with ``model.dropout: 0``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch import nn

#: "eager" writes softmax(q k^T) v out (the runtime's op order); "sdpa" calls
#: F.scaled_dot_product_attention (PyTorch >= 2.0), which picks a fused (flash) kernel on a GPU.
AttentionKind = Literal["eager", "sdpa"]

LAYERNORM_EPS = 1e-5


@dataclass(frozen=True)
class GptShape:
    """The model section of a run config (core/schemas/run-config.schema.json)."""

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    max_seq_len: int
    mlp_ratio: int = 4
    tie_embeddings: bool = True

    @staticmethod
    def from_config(model: Mapping[str, Any]) -> GptShape:
        """Reads a run config's ``model`` section; the optional keys take the schema's defaults."""
        shape = GptShape(
            vocab_size=int(model["vocab_size"]),
            d_model=int(model["d_model"]),
            n_layers=int(model["n_layers"]),
            n_heads=int(model["n_heads"]),
            max_seq_len=int(model["max_seq_len"]),
            mlp_ratio=int(model.get("mlp_ratio", 4)),
            tie_embeddings=bool(model.get("tie_embeddings", True)),
        )
        if shape.d_model % shape.n_heads:
            raise ValueError(f"model.d_model: {shape.d_model} is not divisible by model.n_heads ({shape.n_heads})")
        if float(model.get("dropout", 0)) != 0:
            raise ValueError(
                "model.dropout: the PyTorch reference has no dropout (the runtime's masks cannot be reproduced); use 0"
            )
        return shape

    @property
    def head_size(self) -> int:
        return self.d_model // self.n_heads

    @property
    def ffn_hidden(self) -> int:
        return self.mlp_ratio * self.d_model


class Embedding(nn.Module):
    """Token and learned position embeddings (parameters ``embedding.wte``, ``embedding.wpe``)."""

    def __init__(self, s: GptShape) -> None:
        super().__init__()
        self.wte = nn.Parameter(torch.empty(s.vocab_size, s.d_model))
        self.wpe = nn.Parameter(torch.empty(s.max_seq_len, s.d_model))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return F.embedding(tokens, self.wte) + self.wpe[: tokens.shape[1]]


class CausalSelfAttention(nn.Module):
    def __init__(self, s: GptShape, attention: AttentionKind) -> None:
        super().__init__()
        self.n_heads = s.n_heads
        self.attention = attention
        self.qkv = nn.Linear(s.d_model, 3 * s.d_model)
        self.proj = nn.Linear(s.d_model, s.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        hs = C // self.n_heads
        q, k, v = (t.view(B, T, self.n_heads, hs).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))
        if self.attention == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            y = scores.masked_fill(future, float("-inf")).softmax(dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Mlp(nn.Module):
    def __init__(self, s: GptShape) -> None:
        super().__init__()
        self.fc = nn.Linear(s.d_model, s.ffn_hidden)
        self.fc2 = nn.Linear(s.ffn_hidden, s.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    """A pre-LN block. Attribute order = the runtime's parameter order inside a block unit."""

    def __init__(self, s: GptShape, attention: AttentionKind) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(s.d_model, eps=LAYERNORM_EPS)
        self.attn = CausalSelfAttention(s, attention)
        self.ln2 = nn.LayerNorm(s.d_model, eps=LAYERNORM_EPS)
        self.mlp = Mlp(s)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self, shape: GptShape, attention: AttentionKind = "eager") -> None:
        super().__init__()
        self.shape = shape
        self.embedding = Embedding(shape)
        self.blocks = nn.ModuleList(Block(shape, attention) for _ in range(shape.n_layers))
        self.final_ln = nn.LayerNorm(shape.d_model, eps=LAYERNORM_EPS)
        self.lm_head = None if shape.tie_embeddings else nn.Linear(shape.d_model, shape.vocab_size, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Logits [B, T, V] of token ids [B, T]."""
        x = self.embedding(tokens)
        for block in self.blocks:
            x = block(x)
        x = self.final_ln(x)
        return F.linear(x, self.embedding.wte) if self.lm_head is None else self.lm_head(x)


def loss_of(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over every token, computed in at least float32."""
    V = logits.shape[-1]
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


@torch.no_grad()
def initialise(model: Gpt, seed: int, init_std: float) -> None:
    """GPT-2 initialisation as native/src/model/init.h states it: weights ~ N(0, init_std), residual
    output projections (attn.proj, mlp.fc2) ~ N(0, init_std / sqrt(2 L)), biases 0, LayerNorm
    weights 1. The same distribution as the runtime, not the same values: the runtime draws from
    its own counter-based RNG, and the fixtures carry the values."""
    residual_std = init_std / math.sqrt(2.0 * model.shape.n_layers)
    g = torch.Generator(device=model.embedding.wte.device).manual_seed(seed)
    for name, module in model.named_modules():
        if isinstance(module, nn.LayerNorm):
            module.weight.fill_(1.0)
            module.bias.zero_()
        elif isinstance(module, nn.Linear):
            residual = name.endswith("attn.proj") or name.endswith("mlp.fc2")
            module.weight.normal_(0.0, residual_std if residual else init_std, generator=g)
            if module.bias is not None:
                module.bias.zero_()
        elif isinstance(module, Embedding):
            module.wte.normal_(0.0, init_std, generator=g)
            module.wpe.normal_(0.0, init_std, generator=g)

"""Makes the decoder family's reference fixtures of test/fixtures/reference/decoder/ (format: README.md
there): tiny random-init LlamaForCausalLM and Qwen3ForCausalLM models of the pinned transformers, in
float64, their weights written in the runtime's layout (decoder-layout.md), a fixed batch, the
logits, the mean cross-entropy, every parameter's gradient, and a few AdamW steps.
native/test/decoder_fixture_test.cc replays them with the float64 reference path
(native/src/reference/reference_decoder.h).

transformers computes three things in float32 whatever the model's dtype — RMSNorm's input (its
upcast for bf16), RoPE's cos/sin and inv_freq, and the eager attention's softmax. For the float64
ground truth those casts are lifted: RMSNorm's forward keeps the input's dtype, the rotary embedding
computes inv_freq (the same formula as transformers' rope functions, transcribed here and checked
against transformers' own float32 values within float32 rounding), cos and sin in float64, and
attention is transformers' "sdpa" (PyTorch's scaled_dot_product_attention, float64 throughout).
transformers' own float32 inv_freq is recorded so the runtime's llama3 scaling is held to it too.

Run from the repository root: ``.venv/bin/python test/reference/make_decoder_fixtures.py --out
test/fixtures/reference/decoder``.
"""

from __future__ import annotations

import argparse
import math
import sys
import types
from pathlib import Path
from typing import Any, cast

import torch
import transformers
from fixture_file import encode_array, invocation, provenance, write_json
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedModel, Qwen3Config, Qwen3ForCausalLM

FORMAT = "fsdp-studio/decoder-reference-fixture"
VERSION = 1
ADAMW_STEPS = 3

# Tiny configs (config.json keys). Each covers part of the family: grouped-query attention (heads a
# multiple of the key-value heads), Llama 3's rope scaling (a head of 6 over an original context of
# 512 has all three bands: kept, interpolated, divided), tied and untied heads, both biases, Qwen3's
# per-head q/k norm with head_dim decoupled from hidden_size / heads.
CONFIGS: dict[str, dict[str, Any]] = {
    "llama-gqa-llama3-tied": {
        "family": "llama",
        "hf": {
            "vocab_size": 32,
            "hidden_size": 12,
            "intermediate_size": 16,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "max_position_embeddings": 1024,
            "rms_norm_eps": 1e-5,
            "tie_word_embeddings": True,
            "attention_bias": False,
            "mlp_bias": False,
            "rope_parameters": {
                "rope_type": "llama3",
                "rope_theta": 10000.0,
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 8.0,
                "original_max_position_embeddings": 512,
            },
        },
        "seed": 11,
    },
    "llama-mqa-untied-biases": {
        "family": "llama",
        "hf": {
            "vocab_size": 24,
            "hidden_size": 12,
            "intermediate_size": 16,
            "num_hidden_layers": 2,
            "num_attention_heads": 3,
            "num_key_value_heads": 1,
            "max_position_embeddings": 64,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": False,
            "attention_bias": True,
            "mlp_bias": True,
            "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0},
        },
        "seed": 12,
    },
    "qwen3-qk-norm-head-dim-untied": {
        "family": "qwen3",
        "hf": {
            "vocab_size": 24,
            "hidden_size": 8,
            "intermediate_size": 12,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 6,
            "max_position_embeddings": 64,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": False,
            "attention_bias": False,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
        },
        "seed": 13,
    },
    "qwen3-qk-norm-tied-attention-bias": {
        "family": "qwen3",
        "hf": {
            "vocab_size": 28,
            "hidden_size": 12,
            "intermediate_size": 16,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 1,
            "head_dim": 8,
            "max_position_embeddings": 64,
            "rms_norm_eps": 1e-6,
            "tie_word_embeddings": True,
            "attention_bias": True,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        },
        "seed": 14,
    },
}
BATCH = {"B": 2, "T": 7}
INIT_STD = 0.2  # wide enough that the logits are far from uniform
PERTURB = 0.1  # norms' weights and biases moved off 1 and 0, so every op matters
ADAMW: dict[str, Any] = {"lr": 1e-2, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}


def build(spec: dict[str, Any]) -> PreTrainedModel:
    """The transformers model in float64, random-init (seeded), with the norms and biases perturbed."""
    torch.manual_seed(spec["seed"])
    kwargs = {**spec["hf"], "initializer_range": INIT_STD, "attn_implementation": "sdpa"}
    model: PreTrainedModel
    if spec["family"] == "llama":
        model = LlamaForCausalLM(LlamaConfig(**kwargs))
    else:
        model = Qwen3ForCausalLM(Qwen3Config(**kwargs))
    model.double()
    g = torch.Generator().manual_seed(spec["seed"] + 1)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:  # RMSNorm weights and biases
                p.add_(torch.randn(p.shape, generator=g, dtype=torch.float64) * PERTURB)
    return model


def inv_freq_float64(hf: dict[str, Any]) -> torch.Tensor:
    """transformers' default and llama3 inverse frequencies (modeling_rope_utils.py), in float64."""
    rope = hf["rope_parameters"]
    dim = hf.get("head_dim") or hf["hidden_size"] // hf["num_attention_heads"]
    inv = 1.0 / (rope["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    if rope["rope_type"] == "default":
        return inv
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old = rope["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    scaled = torch.where(wavelen > old / low, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old / high) * ~(wavelen > old / low)
    return torch.where(medium, smoothed, scaled)


def _rms_norm_keeping_dtype(self: nn.Module, hidden_states: torch.Tensor) -> torch.Tensor:
    """transformers' RMSNorm without its float32 upcast, which would round a float64 input."""
    weight = cast(torch.Tensor, self.weight)
    variance = hidden_states.pow(2).mean(-1, keepdim=True)
    return weight * (hidden_states * torch.rsqrt(variance + cast(float, self.variance_epsilon)))


def lift_float32_casts(model: PreTrainedModel, hf: dict[str, Any]) -> torch.Tensor:
    """Makes the model float64 end to end (see the module's note); returns transformers' own float32 inv_freq."""
    for module in model.modules():
        if type(module).__name__.endswith("RMSNorm"):
            module.forward = types.MethodType(_rms_norm_keeping_dtype, module)
    rotary = model.get_submodule("model.rotary_emb")
    transformers_inv_freq = cast(torch.Tensor, rotary.inv_freq).detach().clone()
    inv = inv_freq_float64(hf)
    worst = float(((inv - transformers_inv_freq.double()).abs() / inv).max())
    if worst > 1e-6:
        raise AssertionError(f"inv_freq: the float64 transcription is {worst:.3g} off transformers' own values")

    def rotary_forward(self: nn.Module, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        freqs = position_ids[..., None].to(torch.float64) * inv.to(x.device)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    rotary.forward = types.MethodType(rotary_forward, rotary)
    return transformers_inv_freq


def our_layout(model: PreTrainedModel, spec: dict[str, Any]) -> list[tuple[str, list[str], list[torch.Tensor]]]:
    """(our name, the transformers names, their tensors) in decoder-layout.md's order; stacked rows where ours packs."""
    hf = spec["hf"]
    named = dict(model.named_parameters())
    out: list[tuple[str, list[str], list[torch.Tensor]]] = []

    def add(ours: str, *theirs: str) -> None:
        out.append((ours, list(theirs), [named[n] for n in theirs]))

    add("embedding.wte", "model.embed_tokens.weight")
    for i in range(hf["num_hidden_layers"]):
        b, h = f"blocks.{i}.", f"model.layers.{i}."
        a = h + "self_attn."
        add(b + "ln1.weight", h + "input_layernorm.weight")
        add(b + "attn.qkv.weight", a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight")
        if hf["attention_bias"]:
            add(b + "attn.qkv.bias", a + "q_proj.bias", a + "k_proj.bias", a + "v_proj.bias")
        if spec["family"] == "qwen3":
            add(b + "attn.q_norm.weight", a + "q_norm.weight")
            add(b + "attn.k_norm.weight", a + "k_norm.weight")
        add(b + "attn.proj.weight", a + "o_proj.weight")
        if hf["attention_bias"]:
            add(b + "attn.proj.bias", a + "o_proj.bias")
        add(b + "ln2.weight", h + "post_attention_layernorm.weight")
        add(b + "mlp.gate_up.weight", h + "mlp.gate_proj.weight", h + "mlp.up_proj.weight")
        if hf.get("mlp_bias", False):
            add(b + "mlp.gate_up.bias", h + "mlp.gate_proj.bias", h + "mlp.up_proj.bias")
        add(b + "mlp.down.weight", h + "mlp.down_proj.weight")
        if hf.get("mlp_bias", False):
            add(b + "mlp.down.bias", h + "mlp.down_proj.bias")
    add("final_ln.weight", "model.norm.weight")
    if not hf["tie_word_embeddings"]:
        add("lm_head.weight", "lm_head.weight")
    # Every trainable tensor of transformers' model is somewhere in ours (a tied head is wte itself).
    covered = {n for _, theirs, _ in out for n in theirs}
    missing = [n for n in named if n not in covered]
    if missing:
        raise AssertionError(f"transformers' parameters missing from the layout: {missing}")
    return out


def flat(layout: list[tuple[str, list[str], list[torch.Tensor]]], grad: bool = False) -> torch.Tensor:
    """The parameters (or their gradients) as one vector in our layout."""
    parts = []
    for _, _, tensors in layout:
        for t in tensors:
            v = t.grad if grad else t
            if v is None:
                raise AssertionError("a parameter has no gradient")
            parts.append(v.detach().reshape(-1))
    return torch.cat(parts)


def fixed_batch(seed: int, vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """inputs, targets: [B, T] token ids; targets are the inputs shifted by one."""
    g = torch.Generator().manual_seed(seed + 2)
    seq = torch.randint(0, vocab, (BATCH["B"], BATCH["T"] + 1), generator=g)
    return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()


def loss_and_logits(model: PreTrainedModel, inputs: torch.Tensor, targets: torch.Tensor) -> tuple[Any, torch.Tensor]:
    """The mean cross-entropy over B·T (the runtime's loss) and the logits [B, T, V]."""
    logits = model(input_ids=inputs).logits
    loss = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return loss, logits


def adamw_steps(
    model: PreTrainedModel,
    layout: list[tuple[str, list[str], list[torch.Tensor]]],
    inputs: torch.Tensor,
    targets: torch.Tensor,
) -> dict[str, Any]:
    """ADAMW_STEPS of torch.optim.AdamW on the batch, in the runtime's groups: decay on the matrix weights but
    the embedding (as GPT-2's; a tied head is the embedding)."""
    decay = [p for ours, _, ts in layout for p in ts if p.dim() == 2 and ours != "embedding.wte"]
    no_decay = [p for ours, _, ts in layout for p in ts if p.dim() == 1 or ours == "embedding.wte"]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": ADAMW["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
        lr=ADAMW["lr"],
        betas=tuple(ADAMW["betas"]),
        eps=ADAMW["eps"],
        foreach=False,
    )
    losses = []
    for _ in range(ADAMW_STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss, _ = loss_and_logits(model, inputs, targets)
        loss.backward()
        losses.append(float(loss.detach()))
        optimizer.step()
    return {**ADAMW, "steps": ADAMW_STEPS, "losses": losses, "final_params": encode_array(flat(layout))}


def make_fixture(name: str, spec: dict[str, Any], command: list[str]) -> dict[str, Any]:
    model = build(spec)
    transformers_inv_freq = lift_float32_casts(model, spec["hf"])
    layout = our_layout(model, spec)
    parameters, offset = [], 0
    for ours, theirs, tensors in layout:
        numel = sum(t.numel() for t in tensors)
        shape = [sum(t.shape[0] for t in tensors), *tensors[0].shape[1:]]
        parameters.append({"name": ours, "transformers": theirs, "shape": shape, "offset": offset, "numel": numel})
        offset += numel
    inputs, targets = fixed_batch(spec["seed"], spec["hf"]["vocab_size"])
    initial = flat(layout).clone()
    loss, logits = loss_and_logits(model, inputs, targets)
    loss.backward()
    grads = flat(layout, grad=True).clone()
    made_by = provenance(command, "cpu")
    made_by["transformers"] = transformers.__version__
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": name,
        "made_by": made_by,
        "architecture": {"llama": "LlamaForCausalLM", "qwen3": "Qwen3ForCausalLM"}[spec["family"]],
        "family": spec["family"],
        "hf_config": spec["hf"],
        "init": {"seed": spec["seed"], "initializer_range": INIT_STD, "perturb_norms_and_biases_std": PERTURB},
        "parameters": parameters,
        "n_params": offset,
        "batch": {**BATCH, "inputs": inputs.tolist(), "targets": targets.tolist()},
        "params": encode_array(initial),
        "transformers_inv_freq": encode_array(transformers_inv_freq.float()),
        "loss": float(loss.detach()),
        "logits": encode_array(logits.detach().reshape(-1)),
        "grads": encode_array(grads),
        "adamw": adamw_steps(model, layout, inputs, targets),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--out", type=Path, required=True, help="folder for the fixtures (test/fixtures/reference/decoder)"
    )
    args = parser.parse_args(argv)
    torch.use_deterministic_algorithms(True)
    command = invocation()
    for name, spec in CONFIGS.items():
        size = write_json(args.out / f"{name}.json", make_fixture(name, spec, command))
        print(f"{args.out / (name + '.json')}: {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

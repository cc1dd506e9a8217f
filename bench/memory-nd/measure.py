"""PyTorch's own memory tools on the CPU, for the N-D parallel estimate to be held to.

One rank of a world of `--world` ranks runs in this process with the fake process group
(torch.testing._internal.distributed.fake_pg): collectives return at once but allocate their
outputs, so every tensor a rank holds is real and counted. A small Llama-style model (the ops
torchtitan's llama3 model runs: RMSNorm, rotary embeddings in fp32 complex, SDPA with grouped-query
attention, SwiGLU) is split as torchtitan does it (fully_shard per block and at the root;
ColwiseParallel / RowwiseParallel with SequenceParallel norms and a sequence-sharded loss when
--sp), trained for two steps with AdamW, and tracked by torch.distributed._tools.mem_tracker's
MemTracker (parameters, gradients, optimizer state, activations, temporaries per step) — FSDP2's
own FSDPMemTracker runs on the same model when only FSDP is used.

With --experts, the blocks after the first --dense-layers are MoE blocks with the ops torchtitan's MoE
module runs for its deepseek_v3 model: a linear router with fp32 softmax scores and top-k, the routed
tokens gathered in expert order, the experts' SwiGLU through torch._grouped_mm (in the model's dtype:
torchtitan's .bfloat16() casts are no-ops under its default bf16 mixed precision, and would add copies
here that a GPU run does not have), the scores applied to the expert outputs, scatter_add onto the
shared experts' output. --kv-lora-rank switches attention to multi-head latent attention (DeepSeek's
MLA). Only FSDP (no TP, no expert parallel: its all-to-all needs real peers) is wired for MoE, --ac
and --bf16; experts are sharded on dim 1 when the world outnumbers them, as torchtitan's apply_fsdp
does, instead of dim 0 with padding. --ac full wraps every block in torch's checkpoint_wrapper before
fully_shard (torchtitan's activation_checkpoint.mode = "full"); --bf16 gives fully_shard a
MixedPrecisionPolicy (bf16 parameters in compute, fp32 reduce).

    .venv/bin/python bench/memory-nd/measure.py --world 8 --tp 2 --sp   # one JSON line on stdout
    .venv/bin/python bench/memory-nd/measure.py --world 8 --tracker fsdp --experts 8 --top-k 2 --expert-ffn 512
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Args:
    def __init__(self, dim, layers, heads, kv_heads, ffn, vocab, head_dim=None):
        self.dim, self.layers, self.heads, self.kv_heads, self.ffn, self.vocab = (
            dim,
            layers,
            heads,
            kv_heads,
            ffn,
            vocab,
        )
        self.head_dim = head_dim or dim // heads
        # MoE and MLA fields (set from the command line; 0: a dense Llama block, GQA attention).
        self.experts = self.top_k = self.expert_ffn = self.shared = self.dense_layers = 0
        self.kv_lora_rank = self.q_lora_rank = self.qk_nope = self.qk_rope = self.v_head = 0


def rope_freqs(head_dim: int, seq: int) -> torch.Tensor:
    freqs = 1.0 / (500000 ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    t = torch.arange(seq).float()
    return torch.polar(torch.ones(seq, head_dim // 2), torch.outer(t, freqs))


def apply_rotary(xq, xk, freqs):
    # As torchtitan's llama3 apply_rotary_emb: fp32 complex, then back to the input's dtype.
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    f = freqs[: xq.shape[1]].view(1, xq.shape[1], 1, -1)
    return torch.view_as_real(xq_ * f).flatten(3).type_as(xq), torch.view_as_real(xk_ * f).flatten(3).type_as(xk)


class Attention(nn.Module):
    def __init__(self, a: Args):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = a.heads, a.kv_heads, a.head_dim
        self.wq = nn.Linear(a.dim, a.heads * a.head_dim, bias=False)
        self.wk = nn.Linear(a.dim, a.kv_heads * a.head_dim, bias=False)
        self.wv = nn.Linear(a.dim, a.kv_heads * a.head_dim, bias=False)
        self.wo = nn.Linear(a.heads * a.head_dim, a.dim, bias=False)

    def forward(self, x, freqs):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, -1, self.head_dim)
        k = self.wk(x).view(b, s, -1, self.head_dim)
        v = self.wv(x).view(b, s, -1, self.head_dim)
        q, k = apply_rotary(q, k, freqs)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=q.shape[1] != k.shape[1])
        return self.wo(out.transpose(1, 2).contiguous().view(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self, a: Args):
        super().__init__()
        self.w1 = nn.Linear(a.dim, a.ffn, bias=False)
        self.w2 = nn.Linear(a.ffn, a.dim, bias=False)
        self.w3 = nn.Linear(a.dim, a.ffn, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LatentAttention(nn.Module):
    """DeepSeek's multi-head latent attention as torchtitan's deepseek_v3 model runs it."""

    def __init__(self, a: Args):
        super().__init__()
        self.heads, self.nope, self.rope, self.v_head = a.heads, a.qk_nope, a.qk_rope, a.v_head
        qk = a.qk_nope + a.qk_rope
        if a.q_lora_rank == 0:
            self.wq = nn.Linear(a.dim, a.heads * qk, bias=False)
        else:
            self.wq_a = nn.Linear(a.dim, a.q_lora_rank, bias=False)
            self.q_norm = nn.RMSNorm(a.q_lora_rank)
            self.wq_b = nn.Linear(a.q_lora_rank, a.heads * qk, bias=False)
        self.q_lora_rank, self.kv_lora_rank = a.q_lora_rank, a.kv_lora_rank
        self.wkv_a = nn.Linear(a.dim, a.kv_lora_rank + a.qk_rope, bias=False)
        self.kv_norm = nn.RMSNorm(a.kv_lora_rank)
        self.wkv_b = nn.Linear(a.kv_lora_rank, a.heads * (a.qk_nope + a.v_head), bias=False)
        self.wo = nn.Linear(a.heads * a.v_head, a.dim, bias=False)

    def forward(self, x, freqs):
        b, s, _ = x.shape
        q = self.wq(x) if self.q_lora_rank == 0 else self.wq_b(self.q_norm(self.wq_a(x)))
        q_nope, q_pe = torch.split(q.view(b, s, self.heads, -1), [self.nope, self.rope], dim=-1)
        q = torch.cat([q_nope, rotary_one(q_pe, freqs)], dim=-1)
        kv, k_pe = torch.split(self.wkv_a(x), [self.kv_lora_rank, self.rope], dim=-1)
        k_pe = rotary_one(k_pe.unsqueeze(2), freqs)
        kv = self.wkv_b(self.kv_norm(kv)).view(b, s, self.heads, self.nope + self.v_head)
        k_nope, v = torch.split(kv, [self.nope, self.v_head], dim=-1)
        k = torch.cat([k_nope, k_pe.expand(-1, -1, self.heads, -1)], dim=-1)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).contiguous().view(b, s, -1))


def rotary_one(x, freqs):
    # deepseek_v3's apply_rotary_emb: one tensor at a time, fp32 complex.
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(x_ * freqs[: x.shape[1]].view(1, x.shape[1], 1, -1)).flatten(3).type_as(x)


class MoE(nn.Module):
    """torchtitan's MoE: token-choice top-k router, grouped experts, shared experts."""

    def __init__(self, a: Args):
        super().__init__()
        self.experts, self.top_k = a.experts, a.top_k
        self.gate = nn.Linear(a.dim, a.experts, bias=False)
        # GroupedExperts' parameters: (experts, hidden, dim), (experts, dim, hidden), (experts, hidden, dim).
        self.w1 = nn.Parameter(torch.randn(a.experts, a.expert_ffn, a.dim) * 0.02)
        self.w2 = nn.Parameter(torch.randn(a.experts, a.dim, a.expert_ffn) * 0.02)
        self.w3 = nn.Parameter(torch.randn(a.experts, a.expert_ffn, a.dim) * 0.02)
        self.shared_experts = FeedForward(Args(a.dim, 0, 1, 1, a.expert_ffn * a.shared, 0)) if a.shared else None

    def forward(self, x):
        b, s, d = x.shape
        x = x.view(-1, d)
        scores = F.softmax(self.gate(x).float(), dim=-1)
        top_scores, selected = torch.topk(scores, k=self.top_k, dim=-1)
        counts = torch.bincount(selected.view(-1), minlength=self.experts)
        order = torch.argsort(selected.view(-1), stable=True)
        token_idx = (order // self.top_k).reshape(-1, 1).expand(-1, d)
        routed = torch.gather(x, dim=0, index=token_idx)
        offsets = torch.cumsum(counts, dim=0).to(torch.int32)
        h = F.silu(torch._grouped_mm(routed, self.w1.transpose(-2, -1), offs=offsets))
        h = h * torch._grouped_mm(routed, self.w3.transpose(-2, -1), offs=offsets)
        experts_out = torch._grouped_mm(h, self.w2.transpose(-2, -1), offs=offsets)
        routed_out = (experts_out.float() * top_scores.view(-1)[order].reshape(-1, 1)).to(x.dtype)
        out = self.shared_experts(x) if self.shared_experts is not None else torch.zeros_like(x)
        return out.scatter_add(dim=0, index=token_idx, src=routed_out).view(b, s, d)


class Block(nn.Module):
    def __init__(self, a: Args, layer: int = 0):
        super().__init__()
        self.attention_norm = nn.RMSNorm(a.dim)
        self.attention = LatentAttention(a) if a.kv_lora_rank else Attention(a)
        self.ffn_norm = nn.RMSNorm(a.dim)
        self.moe_enabled = a.experts > 0 and layer >= a.dense_layers
        if self.moe_enabled:
            self.moe = MoE(a)
        else:
            self.feed_forward = FeedForward(a)

    def forward(self, x, freqs):
        h = x + self.attention(self.attention_norm(x), freqs)
        return h + (self.moe if self.moe_enabled else self.feed_forward)(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, a: Args, seq: int):
        super().__init__()
        self.tok_embeddings = nn.Embedding(a.vocab, a.dim)
        self.register_buffer("freqs_cis", rope_freqs(a.qk_rope or a.head_dim, seq), persistent=False)
        self.layers = nn.ModuleDict({str(i): Block(a, i) for i in range(a.layers)})
        self.norm = nn.RMSNorm(a.dim)
        self.output = nn.Linear(a.dim, a.vocab, bias=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers.values():
            h = layer(h, self.freqs_cis)
        return self.output(self.norm(h))


def peak_of_steps(tracker, step, steps: int = 2) -> dict:
    """Runs `steps` training steps under a memory tracker (from the second on, the optimizer state is
    there) and returns the tracker's peak, bytes by kind of memory."""
    with tracker:
        for _ in range(steps):
            step()
            tracker.reset_mod_stats()
    snap = tracker.get_tracker_snapshot("peak")
    return {str(k): v for dev, cats in snap.items() for k, v in cats.items()}


def local_elements(params) -> int:
    """Elements this rank holds of the parameters: a DTensor's local shard, a plain tensor whole."""
    return sum(p.to_local().numel() if hasattr(p, "to_local") else p.numel() for p in params)


def add_model_args(ap: argparse.ArgumentParser) -> None:
    """The dense model's shape and the sequence length, as measure.py and measure_pp.py both take them."""
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--ffn", type=int, default=1536)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--seq", type=int, default=256)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--sp", action="store_true", help="sequence parallel norms (torchtitan's TP plan)")
    add_model_args(ap)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=0, help="0: dim / heads")
    ap.add_argument("--experts", type=int, default=0, help="routed experts per MoE layer (0: dense)")
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--expert-ffn", type=int, default=0)
    ap.add_argument("--shared-experts", type=int, default=0)
    ap.add_argument("--dense-layers", type=int, default=0, help="the first layers keep a dense MLP of --ffn")
    ap.add_argument("--kv-lora-rank", type=int, default=0, help="> 0: multi-head latent attention")
    ap.add_argument("--q-lora-rank", type=int, default=0)
    ap.add_argument("--qk-nope-head-dim", type=int, default=128)
    ap.add_argument("--qk-rope-head-dim", type=int, default=64)
    ap.add_argument("--v-head-dim", type=int, default=128)
    ap.add_argument("--ac", choices=["none", "full"], default="none")
    ap.add_argument(
        "--bf16",
        action="store_true",
        help="FSDP2 mixed precision: bf16 parameters in compute, fp32 reduce (torchtitan's default)",
    )
    ap.add_argument("--tracker", choices=["mem", "fsdp"], default="mem")
    args = ap.parse_args()
    if (args.experts or args.bf16 or args.ac != "none") and args.tp > 1:
        sys.exit("measure.py: --experts, --ac and --bf16 are wired for FSDP only (--tp 1)")
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)

    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", rank=0, world_size=args.world, store=FakeStore())
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    dp = args.world // args.tp
    mesh = init_device_mesh("cpu", (dp, args.tp), mesh_dim_names=("dp", "tp"))
    a = Args(args.dim, args.layers, args.heads, args.kv_heads, args.ffn, args.vocab, args.head_dim)
    a.experts, a.top_k, a.expert_ffn, a.shared, a.dense_layers = (
        args.experts,
        args.top_k,
        args.expert_ffn,
        args.shared_experts,
        args.dense_layers,
    )
    if args.kv_lora_rank:
        a.kv_lora_rank, a.q_lora_rank = args.kv_lora_rank, args.q_lora_rank
        a.qk_nope, a.qk_rope, a.v_head = args.qk_nope_head_dim, args.qk_rope_head_dim, args.v_head_dim
    model = Transformer(a, args.seq)
    total_params = sum(p.numel() for p in model.parameters())
    if args.ac == "full":
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

        # torchtitan's _apply_full_ac: the whole block, no RNG state kept.
        for name, block in list(model.layers.items()):
            model.layers[name] = checkpoint_wrapper(block, preserve_rng_state=False)

    if args.tp > 1:
        from torch.distributed.tensor import Replicate, Shard
        from torch.distributed.tensor.parallel import (
            ColwiseParallel,
            PrepareModuleInput,
            RowwiseParallel,
            SequenceParallel,
            parallelize_module,
        )

        tp = mesh["tp"]
        sp = args.sp
        # torchtitan's llama3 plan (torchtitan/models/llama3/infra/parallelize.py: apply_tp), with or without SP.
        root_plan = {
            "tok_embeddings": RowwiseParallel(
                input_layouts=Replicate(), output_layouts=Shard(1) if sp else Replicate()
            ),
            # The LM head's output stays sharded over the vocabulary (loss parallel).
            "output": ColwiseParallel(
                input_layouts=Shard(1) if sp else Replicate(), output_layouts=Shard(-1), use_local_output=True
            ),
        }
        if sp:
            root_plan["norm"] = SequenceParallel()
        parallelize_module(model, tp, root_plan)
        for block in model.layers.values():
            plan = {
                "attention": PrepareModuleInput(
                    input_layouts=(Shard(1) if sp else Replicate(), None), desired_input_layouts=(Replicate(), None)
                ),
                "attention.wq": ColwiseParallel(),
                "attention.wk": ColwiseParallel(),
                "attention.wv": ColwiseParallel(),
                "attention.wo": RowwiseParallel(output_layouts=Shard(1) if sp else Replicate()),
                "feed_forward": PrepareModuleInput(
                    input_layouts=(Shard(1) if sp else Replicate(),), desired_input_layouts=(Replicate(),)
                ),
                "feed_forward.w1": ColwiseParallel(),
                "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1) if sp else Replicate()),
                "feed_forward.w3": ColwiseParallel(),
            }
            if sp:
                plan["attention_norm"] = SequenceParallel()
                plan["ffn_norm"] = SequenceParallel()
            parallelize_module(block, tp, plan)
        for block in model.layers.values():
            # Local heads after colwise sharding.
            attention: Any = block.attention
            attention.heads //= args.tp
            attention.kv_heads //= args.tp

    if dp > 1:
        # As torchtitan's apply_fsdp: the embedding, each block, then norm + output (kept gathered
        # after forward, as FSDP would prefetch them at once for backward), then the root.
        from torch.distributed.fsdp import MixedPrecisionPolicy
        from torch.distributed.tensor import Shard

        # MixedPrecisionPolicy() is fully_shard's own default: parameters and reductions in their dtype.
        mp = (
            MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
            if args.bf16
            else MixedPrecisionPolicy()
        )
        fully_shard(model.tok_embeddings, mesh=mesh["dp"], mp_policy=mp)
        for block in model.layers.values():
            moe = getattr(block, "moe", None) or getattr(
                getattr(block, "_checkpoint_wrapped_module", None), "moe", None
            )
            if moe is not None and dp > moe.experts:
                # torchtitan's apply_fsdp: experts on dim 1 when the FSDP degree outnumbers them (no padding).
                experts = {moe.w1, moe.w2, moe.w3}

                def on_dim_1(p: nn.Parameter, experts: set[nn.Parameter] = experts) -> Shard | None:
                    return Shard(1) if p in experts else None

                fully_shard(block, mesh=mesh["dp"], shard_placement_fn=on_dim_1, mp_policy=mp)
            else:
                fully_shard(block, mesh=mesh["dp"], mp_policy=mp)
        fully_shard([model.norm, model.output], mesh=mesh["dp"], reshard_after_forward=False, mp_policy=mp)
        fully_shard(model, mesh=mesh["dp"], mp_policy=mp)

    # The for-loop AdamW: no multi-tensor temporaries, and it takes DTensor and plain parameters side by side.
    optim = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False, fused=False)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq))
    targets = torch.randint(0, args.vocab, (args.batch, args.seq))

    def step():
        logits = model(tokens)
        # Loss parallel keeps the logits sharded over the vocabulary: the loss of the local shard has
        # the memory of torchtitan's (its cross-rank max and sum are scalars per token).
        local_vocab = logits.shape[-1]
        loss = F.cross_entropy(logits.float().flatten(0, 1), (targets % local_vocab).flatten())
        loss.backward()
        optim.step()
        optim.zero_grad(set_to_none=True)

    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed._tools.mem_tracker import MemTracker

    tracker: MemTracker
    if args.tracker == "fsdp":
        tracker = FSDPMemTracker(model, optim)
    else:
        tracker = MemTracker()
        tracker.track_external(model, optim)
    peak = peak_of_steps(tracker, step)
    sharded_params = local_elements(model.parameters())
    fields = (
        "dim",
        "layers",
        "heads",
        "kv_heads",
        "ffn",
        "vocab",
        "experts",
        "top_k",
        "expert_ffn",
        "shared",
        "dense_layers",
        "kv_lora_rank",
        "qk_nope",
        "qk_rope",
        "v_head",
    )
    print(
        json.dumps(
            {
                "torch": torch.__version__,
                "world": args.world,
                "tp": args.tp,
                "sp": args.sp,
                "dp": dp,
                "ac": args.ac,
                "bf16": args.bf16,
                "tracker": args.tracker,
                "model": {k: getattr(a, k) for k in fields},
                "seq": args.seq,
                "batch": args.batch,
                "param_elements": total_params,
                "local_param_elements": sharded_params,
                "peak": peak,
            }
        )
    )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

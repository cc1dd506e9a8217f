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

    .venv/bin/python bench/memory-nd/measure.py --world 8 --tp 2 --sp   # one JSON line on stdout
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class Args:
    def __init__(self, dim, layers, heads, kv_heads, ffn, vocab):
        self.dim, self.layers, self.heads, self.kv_heads, self.ffn, self.vocab = dim, layers, heads, kv_heads, ffn, vocab
        self.head_dim = dim // heads


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


class Block(nn.Module):
    def __init__(self, a: Args):
        super().__init__()
        self.attention_norm = nn.RMSNorm(a.dim)
        self.attention = Attention(a)
        self.ffn_norm = nn.RMSNorm(a.dim)
        self.feed_forward = FeedForward(a)

    def forward(self, x, freqs):
        h = x + self.attention(self.attention_norm(x), freqs)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, a: Args, seq: int):
        super().__init__()
        self.tok_embeddings = nn.Embedding(a.vocab, a.dim)
        self.register_buffer("freqs_cis", rope_freqs(a.head_dim, seq), persistent=False)
        self.layers = nn.ModuleDict({str(i): Block(a) for i in range(a.layers)})
        self.norm = nn.RMSNorm(a.dim)
        self.output = nn.Linear(a.dim, a.vocab, bias=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers.values():
            h = layer(h, self.freqs_cis)
        return self.output(self.norm(h))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--sp", action="store_true", help="sequence parallel norms (torchtitan's TP plan)")
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--ffn", type=int, default=1536)
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--tracker", choices=["mem", "fsdp"], default="mem")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)

    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", rank=0, world_size=args.world, store=FakeStore())
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    dp = args.world // args.tp
    mesh = init_device_mesh("cpu", (dp, args.tp), mesh_dim_names=("dp", "tp"))
    a = Args(args.dim, args.layers, args.heads, args.kv_heads, args.ffn, args.vocab)
    model = Transformer(a, args.seq)

    if args.tp > 1:
        from torch.distributed.tensor import Replicate, Shard
        from torch.distributed.tensor.parallel import ColwiseParallel, PrepareModuleInput, RowwiseParallel, SequenceParallel, parallelize_module

        tp = mesh["tp"]
        sp = args.sp
        # torchtitan's llama3 plan (torchtitan/models/llama3/infra/parallelize.py: apply_tp), with or without SP.
        root_plan = {
            "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1) if sp else Replicate()),
            # The LM head's output stays sharded over the vocabulary (loss parallel).
            "output": ColwiseParallel(input_layouts=Shard(1) if sp else Replicate(), output_layouts=Shard(-1), use_local_output=True),
        }
        if sp:
            root_plan["norm"] = SequenceParallel()
        parallelize_module(model, tp, root_plan)
        for block in model.layers.values():
            plan = {
                "attention": PrepareModuleInput(input_layouts=(Shard(1) if sp else Replicate(), None), desired_input_layouts=(Replicate(), None)),
                "attention.wq": ColwiseParallel(),
                "attention.wk": ColwiseParallel(),
                "attention.wv": ColwiseParallel(),
                "attention.wo": RowwiseParallel(output_layouts=Shard(1) if sp else Replicate()),
                "feed_forward": PrepareModuleInput(input_layouts=(Shard(1) if sp else Replicate(),), desired_input_layouts=(Replicate(),)),
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
            block.attention.heads //= args.tp
            block.attention.kv_heads //= args.tp

    if dp > 1:
        # As torchtitan's apply_fsdp: the embedding, each block, then norm + output (kept gathered
        # after forward, as FSDP would prefetch them at once for backward), then the root.
        fully_shard(model.tok_embeddings, mesh=mesh["dp"])
        for block in model.layers.values():
            fully_shard(block, mesh=mesh["dp"])
        fully_shard([model.norm, model.output], mesh=mesh["dp"], reshard_after_forward=False)
        fully_shard(model, mesh=mesh["dp"])

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

    if args.tracker == "fsdp":
        from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker

        tracker = FSDPMemTracker(model, optim)
    else:
        from torch.distributed._tools.mem_tracker import MemTracker

        tracker = MemTracker()
        tracker.track_external(model, optim)
    with tracker:
        for _ in range(2):
            step()
            tracker.reset_mod_stats()
    snap = tracker.get_tracker_snapshot("peak")
    peak = {str(k): v for dev, cats in snap.items() for k, v in cats.items()}
    sharded_params = sum(p.to_local().numel() if hasattr(p, "to_local") else p.numel() for p in model.parameters())
    print(json.dumps({"world": args.world, "tp": args.tp, "sp": args.sp, "dp": dp, "tracker": args.tracker, "model": {k: getattr(a, k) for k in ("dim", "layers", "heads", "kv_heads", "ffn", "vocab")}, "seq": args.seq, "batch": args.batch, "local_param_elements": sharded_params, "peak": peak}))
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())

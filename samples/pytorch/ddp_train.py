"""A small GPT trained with DistributedDataParallel on Debian's fortunes corpus (byte tokens): a
script of your own to start from, logging through FSDP Studio's companion. Change the model, the
data and the loop; keep the two `fsdp_studio` calls to see your curves and NaNs in the editor.

samples/ddp-python.fsdp-launch.yaml runs it ("FSDP: Launch FSDP run" on that file): FSDP Studio
starts 2 ranks of a plain `python` command, each with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT, which torch.distributed's default env:// rendezvous reads — torchrun would set the
same, so `torchrun --nproc_per_node 2 ddp_train.py` works too, and `python ddp_train.py` alone runs
one rank. CPUs use the gloo backend, GPUs nccl (one per rank).

    python ddp_train.py [--steps 60] [--batch 8] [--seq 64] [--lr 3e-3] [--warmup 6]
                        [--max-grad-norm 1.0] [--data ../data/fortunes-byte-train.tok]

`fsdp_studio.log(step, loss=…)` draws the dashboard's charts (rank 0 writes), and
`fsdp_studio.watch(model)` names the first module where a NaN or Inf appears; the editor puts the
companion on PYTHONPATH for the runs it starts (elsewhere: `pip install ./python`, or the script
runs without it). It also prints `step N: loss X`, for your terminal. It saves no checkpoints
(Stop ends it; samples/pytorch/fsdp2_train.py shows DCP checkpoints, Stop and Resume).
The data is made by `node --import tsx samples/prepare-data.ts` (npm start and npm test do it).
"""

import argparse
import math
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

try:
    import fsdp_studio  # on PYTHONPATH for runs the editor starts; elsewhere: pip install ./python
except ImportError:
    fsdp_studio = None  # type: ignore[assignment]  # the script runs without the companion too

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser(description="A small GPT trained with DDP, logging through FSDP Studio's companion.")
    p.add_argument("--data", default=os.path.normpath(os.path.join(HERE, "..", "data", "fortunes-byte-train.tok")))
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=8, help="sequences per rank and step")
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=6, help="steps of linear learning-rate warmup")
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="clip gradients at this norm (0: off)")
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args()


def load_tokens(path):
    """A token file as samples/prepare-data.ts writes it (native/FORMATS.md): a 64-byte header, then uint16 ids."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except FileNotFoundError:
        raise SystemExit(f"{path}: no such file; make it with node --import tsx samples/prepare-data.ts") from None
    if len(head) < 64 or head[:8] != b"FSDPTOK\0":
        raise SystemExit(f"{path}: not a token file; make it with node --import tsx samples/prepare-data.ts")
    count = int.from_bytes(head[16:24], "little")
    vocab = int.from_bytes(head[24:28], "little")
    return np.memmap(path, dtype=np.uint16, mode="r", offset=64, shape=(count,)), vocab


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab, seq, d=64, layers=2, heads=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.embed(idx) + self.pos[: idx.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def lr_at(step, args):
    """Linear warmup, then cosine decay to a tenth of the peak."""
    if step <= args.warmup:
        return args.lr * step / max(1, args.warmup)
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * progress)))


def main():
    args = parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if world > 1:
        dist.init_process_group("nccl" if cuda else "gloo")
    torch.manual_seed(args.seed)  # the same initial weights on every rank (DDP also broadcasts rank 0's)

    tokens, vocab = load_tokens(args.data)
    model: nn.Module = TinyGPT(vocab, args.seq).to(device)
    if fsdp_studio:
        fsdp_studio.watch(model)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)

    rng = np.random.default_rng(args.seed + rank)  # each rank reads its own sequences
    started = time.perf_counter()
    for step in range(1, args.steps + 1):
        starts = rng.integers(0, len(tokens) - args.seq - 1, size=args.batch)
        batch = torch.from_numpy(np.stack([tokens[s : s + args.seq + 1].astype(np.int64) for s in starts])).to(device)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), batch[:, 1:].reshape(-1))
        lr = lr_at(step, args)
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(
            model.parameters(), args.max_grad_norm if args.max_grad_norm > 0 else float("inf")
        )
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

        mean_loss = loss.detach().clone()
        if world > 1:
            dist.all_reduce(mean_loss)
            mean_loss /= world
        tokens_per_s = step * args.batch * args.seq * world / (time.perf_counter() - started)
        if rank == 0:
            if fsdp_studio:
                fsdp_studio.log(step, loss=mean_loss, lr=lr, grad_norm=grad_norm, tokens_per_s=tokens_per_s)
            print(f"step {step}: loss {mean_loss.item():.4f}", flush=True)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # Ended without the interpreter's shutdown, in which PyTorch's gloo threads, still holding the last
    # collective's tensors, can abort a run that completed (SIGABRT; pytorch/pytorch#179291's kind).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)

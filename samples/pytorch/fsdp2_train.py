"""Your own PyTorch 2 training under torchrun with FSDP2, as FSDP Studio runs it from
samples/fsdp2-torchrun.fsdp-launch.yaml ("FSDP: Launch FSDP run"):

    torchrun --standalone --nproc_per_node 2 pytorch/fsdp2_train.py --data data/fortunes-byte-train.tok

A small causal transformer learns Debian's fortunes (the sample data's byte tokens) on the CPU with
the gloo backend, every block and the whole model sharded with `fully_shard`. Rank 0
writes TensorBoard scalars with torch.utils.tensorboard's SummaryWriter (train/loss,
train/learning_rate, train/grad_norm, train/tokens_per_s), which the dashboard reads from the
folder the launch spec names; nothing of FSDP Studio is imported. Checkpoints are
torch.distributed.checkpoint (DCP) folders, every rank writing its shards, saved every
--save-every steps and when a stop signal arrives — FSDP Studio's Stop sends SIGTERM, which torchrun
passes to every rank; all ranks stop after the same step. Started again in the same folder (Resume)
it continues from the newest checkpoint, and SummaryWriter appends to the same log folder.
"""

import argparse
import math
import os
import signal
import sys
import time
import warnings
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor
from torch.utils.tensorboard import SummaryWriter


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x):
        t = x.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Decoder(nn.Module):
    def __init__(self, vocab, seq, d=64, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.embed(ids) + self.pos[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def read_tokens(path):
    """A token file of FSDP Studio's samples (native/FORMATS.md): a 64-byte header, then uint16 ids."""
    header = np.fromfile(path, dtype=np.uint8, count=64)
    if bytes(header[:8]) != b"FSDPTOK\0":
        raise SystemExit(f"{path}: not an FSDP Studio token file")
    count = int(header[16:24].view(np.uint64)[0])
    vocab = int(header[24:28].view(np.uint32)[0])
    return np.memmap(path, dtype=np.uint16, mode="r", offset=64, shape=(count,)), vocab


def batch(tokens, step, rank, world, size, seq):
    """Rank `rank`'s part of global batch `step`: consecutive sequences, the same on every run."""
    first = ((step - 1) * world + rank) * size
    rows = [tokens[(j * seq) % (len(tokens) - seq - 1) :][: seq + 1] for j in range(first, first + size)]
    ids = torch.from_numpy(np.stack(rows).astype(np.int64))
    return ids[:, :-1], ids[:, 1:]


def newest_checkpoint(folder):
    if not os.path.isdir(folder):
        return 0
    return max(
        (
            int(n[5:])
            for n in os.listdir(folder)
            if n.startswith("step-") and os.path.exists(os.path.join(folder, n, ".metadata"))
        ),
        default=0,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="data/fortunes-byte-train.tok")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=8, help="sequences per rank and step")
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument(
        "--step-sleep", type=float, default=0.0, help="seconds to wait after each step (to watch a short run)"
    )
    p.add_argument("--tb", default="runs-tb/fsdp2")
    p.add_argument("--checkpoint", default="checkpoints-fsdp2")
    p.add_argument("--save-every", type=int, default=50)
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    # The logits are a view (a Linear over [B, T, C]); nothing writes into them in place.
    warnings.filterwarnings("ignore", message="FSDP2-wrapped module")
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    tokens, vocab = read_tokens(args.data)
    model = Decoder(vocab, args.seq)
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)

    start = newest_checkpoint(args.checkpoint)
    if start:
        model_state, opt_state = get_state_dict(model, opt)
        state: dict[str, Any] = {"model": model_state, "optim": opt_state}
        dcp.load(state, checkpoint_id=os.path.join(args.checkpoint, f"step-{start}"))
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        print(f"rank {rank}: resumed from {args.checkpoint}/step-{start}", flush=True)

    def save(step):
        model_state, opt_state = get_state_dict(model, opt)
        dcp.save(
            {"model": model_state, "optim": opt_state}, checkpoint_id=os.path.join(args.checkpoint, f"step-{step}")
        )

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    writer = SummaryWriter(args.tb) if rank == 0 else None

    step = start
    while step < args.steps:
        step += 1
        t0 = time.time()
        lr = args.lr * min(1.0, step / 10) * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = batch(tokens, step, rank, world, args.batch, args.seq)
        loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        # Over FSDP2's sharded parameters the norm is a DTensor: full_tensor() gives every rank its value.
        grad_norm = norm.full_tensor() if isinstance(norm, DTensor) else norm
        opt.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        mean_loss /= world
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if writer:
            writer.add_scalar("train/loss", mean_loss.item(), step)
            writer.add_scalar("train/learning_rate", lr, step)
            writer.add_scalar("train/grad_norm", grad_norm.item(), step)
            writer.add_scalar("train/tokens_per_s", world * args.batch * args.seq / (time.time() - t0), step)
            writer.flush()
        # Every rank stops after the same step: a stop signal seen by any is seen by all.
        flag = torch.tensor([1.0 if stop else 0.0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() > 0 or step % args.save_every == 0 or step == args.steps:
            save(step)
        if flag.item() > 0:
            print(f"rank {rank}: stopped after step {step}", flush=True)
            break
    if writer:
        writer.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # Ended without the interpreter's shutdown, in which PyTorch's gloo threads, still holding the last
    # collective's tensors, can abort a run that completed (SIGABRT; pytorch/pytorch#179291's kind).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)

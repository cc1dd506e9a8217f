"""A small DDP training script, written for FSDP Studio's tests as a person would write theirs.

A two-block decoder (embedding, attention, MLP, head) learns a synthetic language (each token
follows from the last by a fixed rule, with noise) on CPU with the gloo backend, on however many
ranks the launcher started (torchrun's or FSDP Studio's environment rendezvous: RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT; or mpirun's OMPI_COMM_WORLD_* variables). It logs through the FSDP
Studio companion, saves a checkpoint every few steps and at a stop signal (all ranks agree on
stopping after the same step), resumes from its checkpoint, and can plant a NaN in one module's
forward on one rank at one step, so that the NaN view can be checked to name that module.

    python3 ddp_train.py --steps 200 [--step-sleep 0.05] [--checkpoint DIR] [--save-every 20]
        [--nan-step K --nan-rank R --nan-module blocks.1.mlp] [--on-nan report|raise]
        [--hold-at N --hold-while FILE]

--hold-at/--hold-while: after step N every rank waits while FILE exists (a stop signal ends the
wait), so a test can act on a run that is certainly still running however loaded the machine is.
"""

import argparse
import math
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import fsdp_studio

VOCAB = 64
SEQ = 32


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        att = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class Mlp(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.act = nn.GELU()
        self.out = nn.Linear(4 * d, d)
        self.plant = False

    def forward(self, x):
        y = self.out(self.act(self.fc(x)))
        if self.plant:
            # The planted fault: a value that is not a number, made by this module's own arithmetic.
            y = y * torch.tensor(float("nan"))
        return y


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = Mlp(d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyDecoder(nn.Module):
    def __init__(self, d=64, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.zeros(SEQ, d))
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB)

    def forward(self, ids):
        x = self.embed(ids) + self.pos[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def batch(step, rank, size):
    """Sequences of the synthetic language, different per step and rank, the same on every run."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    start = torch.randint(0, VOCAB, (size, 1), generator=g)
    steps = torch.arange(SEQ + 1).unsqueeze(0)
    ids = (start * 5 + 3 * steps) % VOCAB
    noise = torch.rand(ids.shape, generator=g) < 0.1
    ids = torch.where(noise, torch.randint(0, VOCAB, ids.shape, generator=g), ids)
    return ids[:, :-1], ids[:, 1:]


def init_distributed():
    """Joins the job the launcher started: env:// variables, or mpirun's."""
    env = os.environ
    if "RANK" not in env and "OMPI_COMM_WORLD_RANK" in env:
        env["RANK"] = env["OMPI_COMM_WORLD_RANK"]
        env["WORLD_SIZE"] = env["OMPI_COMM_WORLD_SIZE"]
        env["LOCAL_RANK"] = env.get("OMPI_COMM_WORLD_LOCAL_RANK", env["RANK"])
        env.setdefault("MASTER_ADDR", "127.0.0.1")
    world = int(env.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    return (dist.get_rank() if world > 1 else 0), world


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--eval-every", type=int, default=25)
    p.add_argument("--nan-step", type=int, default=0)
    p.add_argument("--nan-rank", type=int, default=0)
    p.add_argument("--nan-module", default="blocks.1.mlp")
    p.add_argument("--on-nan", default="report")
    p.add_argument("--hold-at", type=int, default=0)
    p.add_argument("--hold-while", default=None)
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    rank, world = init_distributed()
    model = TinyDecoder()
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    fsdp_studio.watch(model, on_nan=args.on_nan)

    start = 0
    ckpt = os.path.join(args.checkpoint, "last.pt") if args.checkpoint else None
    if ckpt and os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"]
        print(f"rank {rank}: resumed from {ckpt} at step {start}", flush=True)

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))

    def save(step):
        if ckpt and rank == 0:
            os.makedirs(args.checkpoint, exist_ok=True)
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)

    def lr_at(step):
        warm = 10
        return args.lr * min(1.0, step / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, step / args.steps)))

    step = start
    while step < args.steps:
        step += 1
        t0 = time.time()
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        plant = step == args.nan_step and rank == args.nan_rank
        model.get_submodule(args.nan_module).plant = plant
        x, y = batch(step, rank, args.batch)
        logits = ddp(x)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        mean_loss = loss.detach().clone()
        if world > 1:
            dist.all_reduce(mean_loss)
            mean_loss /= world
        if args.step_sleep:
            time.sleep(args.step_sleep)
        elapsed = time.time() - t0
        fsdp_studio.log(
            step, loss=mean_loss, lr=lr_at(step), grad_norm=grad_norm, tokens_per_s=world * args.batch * SEQ / elapsed
        )
        if args.eval_every and step % args.eval_every == 0:
            with torch.no_grad():
                model.eval()
                ex, ey = batch(10**6 + step, 0, 16)
                fsdp_studio.log(step, {"eval/loss": F.cross_entropy(model(ex).reshape(-1, VOCAB), ey.reshape(-1))})
                model.train()
        if args.hold_while and step >= args.hold_at:
            while not stop and os.path.exists(args.hold_while):
                time.sleep(0.1)
        # Every rank stops after the same step: a stop signal seen by any is seen by all.
        flag = torch.tensor([1.0 if stop else 0.0])
        if world > 1:
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() > 0:
            save(step)
            print(f"rank {rank}: stopped after step {step}", flush=True)
            break
        if args.save_every and step % args.save_every == 0:
            save(step)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return 0


def end_process(code):
    """Ends this process with `code` (None: 0), skipping the interpreter's shutdown."""
    # The process ends here without the interpreter's shutdown. PyTorch's gloo worker threads may still
    # hold the last collective's tensors (destroy_process_group does not join them), and dropping those
    # needs the GIL, which a finalizing interpreter no longer gives: the thread then aborts the whole
    # process (SIGABRT, "terminate called without an active exception") after a run that completed
    # (seen in PyTorch 2.13: ProcessGroupGloo::runLoop destroying an AsyncWork in Py_FinalizeEx; the
    # class of pytorch/pytorch#179291). Everything this script writes is written, closed or flushed by now.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


if __name__ == "__main__":
    end_process(main())

"""A training script that only prints, as many do: no companion, no TensorBoard, no metrics file.

A small MLP learns a fixed random linear map on the CPU with PyTorch; every step it prints its
loss in the words and format of nanoGPT's train.py (karpathy/nanoGPT: `iter N: loss X, time Yms,
mfu Z%`, the MFU -100.00%: not measured), and every `--eval-every` steps nanoGPT's evaluation line
(`step N: train loss X, val loss Y`). With `--format build-nanogpt` it prints as build-nanogpt's
train_gpt2.py (karpathy/build-nanogpt) does instead: `validation loss: X` at the top of every
`--eval-every`th step, then each step's `step N | loss: X | lr X | norm: X | dt: Xms | tok/sec: X`.
FSDP Studio's tests check that these lines alone fill the dashboard's charts.

    python3 print_only_train.py --steps 30 [--step-sleep 0.1] [--eval-every 10] [--format nanogpt|build-nanogpt]
        [--nan-step K]  (build-nanogpt's format: the loss NaN from step K, as a diverged run prints it)
"""

import argparse
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--step-sleep", type=float, default=0.0)
parser.add_argument("--eval-every", type=int, default=10)
parser.add_argument("--format", choices=("nanogpt", "build-nanogpt"), default="nanogpt")
parser.add_argument("--nan-step", type=int, default=-1, help="from this step on the loss is NaN (a diverged run)")
args = parser.parse_args()

torch.manual_seed(0)
target = torch.nn.Linear(16, 4)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
print(f"number of parameters: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M")


def batch():
    x = torch.randn(64, 16)
    with torch.no_grad():
        return x, target(x)


@torch.no_grad()
def estimate_loss():
    out = {}
    for split in ("train", "val"):
        x, y = batch()
        out[split] = torch.nn.functional.mse_loss(model(x), y).item()
    return out


def get_lr(it, max_lr=3e-3, warmup_steps=5):
    # build-nanogpt's schedule, cut short: a linear warmup, then the maximum.
    return max_lr * (it + 1) / warmup_steps if it < warmup_steps else max_lr


if args.format == "build-nanogpt":
    for step in range(args.steps + 1):
        t0 = time.time()
        if step % args.eval_every == 0:
            print(f"validation loss: {estimate_loss()['val']:.4f}")
        x, y = batch()
        loss = torch.nn.functional.mse_loss(model(x), y)
        if step == args.nan_step:
            loss = loss * float("nan")  # its gradients NaN too: every later step's loss follows
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        lr = get_lr(step)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        optimizer.step()
        time.sleep(args.step_sleep)
        dt = time.time() - t0
        tokens_per_sec = x.shape[0] / dt
        print(
            f"step {step:5d} | loss: {loss.item():.6f} | lr {lr:.4e} | norm: {norm:.4f} | dt: {dt * 1000:.2f}ms"
            f" | tok/sec: {tokens_per_sec:.2f}"
        )
    raise SystemExit(0)

t0 = time.time()
running_mfu = -1.0  # this script does not estimate its MFU: nanoGPT prints -100.00% until it has
for iter_num in range(args.steps + 1):
    if iter_num % args.eval_every == 0:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    x, y = batch()
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    time.sleep(args.step_sleep)
    t1 = time.time()
    dt, t0 = t1 - t0, t1
    print(f"iter {iter_num}: loss {loss.item():.4f}, time {dt * 1000:.2f}ms, mfu {running_mfu * 100:.2f}%")

"""An accelerate run, written for FSDP Studio's tests as a person would write theirs.

    accelerate launch --multi_gpu --num_processes 2 accelerate_train.py --steps 30 --checkpoint ckpt [--step-sleep 0.1]
        [--hold-at N --hold-while FILE]

The decoder and synthetic language of ddp_train.py, prepared by an Accelerator on the CPU (two
processes: DDP on gloo; accelerate's --cpu would start one, and several only through mpirun, so the
processes are started by its elastic launcher and Accelerator(cpu=True) keeps them on the CPU) that
logs with FsdpStudioTracker and TensorBoard (project_dir/tb). State is saved with
accelerator.save_state every --save-every steps and when a stop signal arrives (every process stops
after the same step); a run started again in the same folder continues from the newest saved state.
--hold-at/--hold-while: after logging step N every process waits while FILE exists (a stop signal
ends the wait), so a test can stop a run that is certainly still running however loaded the machine.
"""

import argparse
import os
import signal
import time

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import ProjectConfiguration
from ddp_train import SEQ, VOCAB, TinyDecoder, batch, end_process

from fsdp_studio.integrations.accelerate import FsdpStudioTracker


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--checkpoint", default="ckpt")
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--hold-at", type=int, default=0)
    p.add_argument("--hold-while", default=None)
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    accelerator = Accelerator(
        cpu=True,
        log_with=[FsdpStudioTracker(), "tensorboard"],
        project_config=ProjectConfiguration(project_dir=".", logging_dir="tb"),
    )
    accelerator.init_trackers("accelerate-run")
    print(
        f"rank {accelerator.process_index} of {accelerator.num_processes}: {accelerator.distributed_type}", flush=True
    )
    model = TinyDecoder()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    model, opt = accelerator.prepare(model, opt)

    saved = (
        sorted((int(n[5:]) for n in os.listdir(args.checkpoint) if n.startswith("step-")), reverse=True)
        if os.path.isdir(args.checkpoint)
        else []
    )
    start = saved[0] if saved else 0
    if start:
        accelerator.load_state(os.path.join(args.checkpoint, f"step-{start}"))
        print(f"rank {accelerator.process_index}: resumed at step {start}", flush=True)

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))
    step = start
    while step < args.steps:
        step += 1
        t0 = time.time()
        x, y = batch(step, accelerator.process_index, args.batch)
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        accelerator.backward(loss)
        grad_norm = accelerator.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        mean_loss = accelerator.reduce(loss.detach(), reduction="mean")
        if args.step_sleep:
            time.sleep(args.step_sleep)
        accelerator.log(
            {
                "train/loss": mean_loss.item(),
                "train/grad_norm": float(grad_norm),
                "train/tokens_per_s": accelerator.num_processes * args.batch * SEQ / (time.time() - t0),
            },
            step=step,
        )
        if args.hold_while and step >= args.hold_at:
            while not stop and os.path.exists(args.hold_while):
                time.sleep(0.1)
        flag = accelerator.reduce(torch.tensor([1.0 if stop else 0.0]), reduction="sum")
        if flag.item() > 0 or step % args.save_every == 0:
            accelerator.save_state(os.path.join(args.checkpoint, f"step-{step}"))
        if flag.item() > 0:
            print(f"rank {accelerator.process_index}: stopped after step {step}", flush=True)
            break
    accelerator.end_training()


if __name__ == "__main__":
    end_process(main())  # not the interpreter's shutdown, where PyTorch's gloo threads can abort it (ddp_train.py)

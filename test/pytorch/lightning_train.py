"""A Lightning run, written for FSDP Studio's tests as a person would write theirs.

    python lightning_train.py --steps 30 --out out [--step-sleep 0.1] [--hold-at N --hold-while FILE]

The decoder and synthetic language of ddp_train.py as a LightningModule on the CPU, logged by
FsdpStudioLogger and Lightning's TensorBoardLogger (event files under OUT/tb/). A ModelCheckpoint
keeps the last checkpoint every --save-every steps; a stop signal ends the run after the current
step with a checkpoint; a run started again in the same folder resumes from it (ckpt_path).
--hold-at/--hold-while: once step N (Lightning counts from 0) is logged the run waits while FILE
exists (a stop signal ends the wait), so a test can stop a run that is certainly still running
however loaded the machine is.
"""

import argparse
import os
import signal
import time

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from ddp_train import VOCAB, TinyDecoder, batch
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import TensorBoardLogger

from fsdp_studio.integrations.lightning import FsdpStudioLogger


class Synthetic(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x, y = batch(i + 1, 0, 1)
        return x[0], y[0]


class Decoder(pl.LightningModule):
    def __init__(self, sleep):
        super().__init__()
        self.model = TinyDecoder()
        self.sleep = sleep

    def training_step(self, b, _index):
        t0 = time.time()
        x, y = b
        loss = F.cross_entropy(self.model(x).reshape(-1, VOCAB), y.reshape(-1))
        self.log("train/loss", loss)
        if self.sleep:
            time.sleep(self.sleep)
        self.log("train/tokens_per_s", x.numel() / (time.time() - t0))
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=3e-3, weight_decay=0.01)


class StopOnSignal(pl.Callback):
    """A stop signal ends training after the current step; the last checkpoint is saved then."""

    def __init__(self, checkpoint, hold_at=0, hold_while=None):
        self.stop: list[bool] = []
        self.checkpoint = checkpoint
        self.hold_at = hold_at
        self.hold_while = hold_while
        signal.signal(signal.SIGTERM, lambda *_: self.stop.append(True))
        signal.signal(signal.SIGINT, lambda *_: self.stop.append(True))

    def on_train_batch_start(self, trainer, module, b, index):
        # At the next batch's start step N's metrics have gone to the loggers (global_step is N + 1).
        if self.hold_while and trainer.global_step > self.hold_at:
            while not self.stop and os.path.exists(self.hold_while):
                time.sleep(0.1)

    def on_train_batch_end(self, trainer, module, outputs, b, index):
        if self.stop and not trainer.should_stop:
            trainer.should_stop = True
            trainer.save_checkpoint(os.path.join(self.checkpoint, "last.ckpt"))
            print(f"stopped after step {trainer.global_step}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--out", default="out")
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--hold-at", type=int, default=0)
    p.add_argument("--hold-while", default=None)
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    checkpoints = os.path.join(args.out, "checkpoints")
    trainer = pl.Trainer(
        max_steps=args.steps,
        accelerator="cpu",
        devices=1,
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=[FsdpStudioLogger(), TensorBoardLogger(args.out, name="tb", version=0)],
        callbacks=[
            ModelCheckpoint(dirpath=checkpoints, save_last=True, every_n_train_steps=args.save_every),
            StopOnSignal(checkpoints, args.hold_at, args.hold_while),
        ],
        default_root_dir=args.out,
    )
    last = os.path.join(checkpoints, "last.ckpt")
    data = torch.utils.data.DataLoader(Synthetic(4 * args.steps), batch_size=4)
    trainer.fit(Decoder(args.step_sleep), data, ckpt_path=last if os.path.exists(last) else None)


if __name__ == "__main__":
    main()

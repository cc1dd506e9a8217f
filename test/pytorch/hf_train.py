"""A Hugging Face Trainer run, written for FSDP Studio's tests as a person would write theirs.

    python hf_train.py --out out --steps 30 [--step-sleep 0.1] [--nan-step K --nan-module transformer.h.1.mlp]
        [--hold-at N --hold-while FILE]

A small GPT-2 (transformers' GPT2LMHeadModel from a GPT2Config, random init: nothing is read from
a hub) learns the synthetic language of ddp_train.py on the CPU. The Trainer logs every step to
TensorBoard (report_to=["tensorboard"]: event files under OUT/runs/) and to FSDP Studio through
FsdpStudioCallback; fsdp_studio.watch(model) reports where a NaN appears. --nan-step plants a NaN
in the output of one module (by name) at one step. A stop signal (SIGTERM, SIGINT) ends the run
after the current step with a checkpoint; a run started again in the same folder resumes from the
newest checkpoint (the Trainer's own resume_from_checkpoint). --hold-at/--hold-while: once step N is
logged the run waits while FILE exists (a stop signal ends the wait), so a test can stop a run that
is certainly still running however loaded the machine is.
"""

import argparse
import os
import signal
import time
import warnings

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

import fsdp_studio
from fsdp_studio.integrations.huggingface import FsdpStudioCallback

VOCAB = 64
SEQ = 32


def synthetic(n, seed):
    """The synthetic language of ddp_train.py: each token follows the last by a fixed rule, with noise."""
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, VOCAB, (n, 1), generator=g)
    ids = (start * 5 + 3 * torch.arange(SEQ).unsqueeze(0)) % VOCAB
    noise = torch.rand(ids.shape, generator=g) < 0.1
    ids = torch.where(noise, torch.randint(0, VOCAB, ids.shape, generator=g), ids)
    return [{"input_ids": row, "labels": row} for row in ids]


class StopOnSignal(TrainerCallback):
    """A stop signal ends training after the current step, with a checkpoint."""

    def __init__(self, sleep, hold_at=0, hold_while=None):
        self.stop: list[bool] = []
        self.sleep = sleep
        self.hold_at = hold_at
        self.hold_while = hold_while
        signal.signal(signal.SIGTERM, lambda *_: self.stop.append(True))
        signal.signal(signal.SIGINT, lambda *_: self.stop.append(True))

    def on_step_end(self, args, state, control, **kwargs):
        if self.sleep:
            time.sleep(self.sleep)
        if self.stop:
            control.should_save = True
            control.should_training_stop = True
            print(f"stopped after step {state.global_step}", flush=True)

    def on_log(self, args, state, control, logs=None, **kwargs):
        # After the TensorBoard and FSDP Studio callbacks (they come first) have logged the step.
        if self.hold_while and state.global_step >= self.hold_at:
            while not self.stop and os.path.exists(self.hold_while):
                time.sleep(0.1)


def plant_nan(model, module_name, step, trainer_state):
    """Multiplies the named module's output by NaN in the forward of one training step."""

    def hook(module, inputs, output):
        if module.training and trainer_state().global_step + 1 == step:
            return output * float("nan")
        return output

    # Ahead of the hooks fsdp_studio.watch put there: the NaN is the module's own output, as a fault in
    # its arithmetic would make it.
    model.get_submodule(module_name).register_forward_hook(hook, prepend=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="out")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--step-sleep", type=float, default=0.0)
    p.add_argument("--nan-step", type=int, default=0)
    p.add_argument("--nan-module", default="transformer.h.1.mlp")
    p.add_argument("--hold-at", type=int, default=0)
    p.add_argument("--hold-while", default=None)
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=VOCAB, n_positions=SEQ, n_embd=32, n_layer=2, n_head=2, bos_token_id=None, eos_token_id=None
        )
    )
    fsdp_studio.watch(model)
    training = TrainingArguments(
        output_dir=args.out,
        max_steps=args.steps,
        per_device_train_batch_size=4,
        learning_rate=3e-3,
        warmup_steps=3,
        logging_steps=1,
        save_steps=args.save_every,
        save_strategy="steps",
        report_to=["tensorboard"],
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
        seed=0,
    )
    stop = StopOnSignal(args.step_sleep, args.hold_at, args.hold_while)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = Trainer(
            model=model,
            args=training,
            train_dataset=synthetic(4 * args.steps, 1),
            callbacks=[FsdpStudioCallback(), stop],
        )
        if args.nan_step:
            plant_nan(model, args.nan_module, args.nan_step, lambda: trainer.state)
        last = transformers.trainer_utils.get_last_checkpoint(args.out) if os.path.isdir(args.out) else None
        if last:
            print(f"resuming from {last}", flush=True)
        trainer.train(resume_from_checkpoint=last)


if __name__ == "__main__":
    main()

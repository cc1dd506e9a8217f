"""Makes the reference fixtures of test/fixtures/reference/ (format: README.md there): for each tiny
config, the initial weights, a fixed batch, and 10 optimizer steps of PyTorch in float64 and in
float32; plus the learning rate of every schedule, step by step. The native runtime's tests
(native/test/reference_fixture_test.cc) replay them.

Run from the repository root: ``npm run fixtures:reference`` (makes the project's .venv if it is
missing, then runs ``test/reference/make_fixtures.py --out test/fixtures/reference`` with its python).
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path
from typing import Any

import torch
from fixture_file import encode_array, invocation, provenance, write_json
from gpt import Gpt, GptShape, initialise, loss_of
from optimizer import adamw, clip_gradients, gradient
from schedule import scheduler

FORMAT = "fsdp-studio/reference-fixture"
SCHEDULES_FORMAT = "fsdp-studio/reference-schedules"
VERSION = 1
STEPS = 10
LOGITS_SAMPLE = 16  # logits recorded per step at flat indices k * (count // 16)

# Two tiny run configs (core/schemas/run-config.schema.json). Every key the model and the optimizer
# read is written out, so the runtime's defaults do not enter the comparison.
CONFIGS: dict[str, dict[str, Any]] = {
    # GPT-2 shaped: tied head, GPT-2 init, warmup then cosine, layer-wise LR decay, clipping active.
    "tied-warmup-cosine": {
        "model": {
            "d_model": 32,
            "n_layers": 2,
            "n_heads": 4,
            "vocab_size": 64,
            "max_seq_len": 16,
            "mlp_ratio": 4,
            "tie_embeddings": True,
            "dropout": 0,
            "init_std": 0.02,
        },
        "data": {"seq_len": 16},
        "training": {
            "batch_size_per_gpu": 4,
            "gradient_accumulation_steps": 1,
            "max_steps": STEPS,
            "learning_rate": 3e-3,
            "schedule": "warmup_cosine",
            "warmup_steps": 3,
            "min_lr_ratio": 0.1,
            "decay_ratio": 0.2,
            "weight_decay": 0.1,
            "betas": [0.9, 0.95],
            "eps": 1e-8,
            "max_grad_norm": 0.5,
            "layer_lr_decay": 0.8,
            "seed": 1234,
        },
        "perturb": 0.0,
    },
    # Odd sizes everywhere: untied head, 3 heads of 8, mlp_ratio 3, sequences shorter than the
    # position table, 2 micro-batches accumulated, a wide init and non-trivial LayerNorm parameters
    # and biases (perturbed), one_cycle, no clipping.
    "untied-accumulate-one-cycle": {
        "model": {
            "d_model": 24,
            "n_layers": 3,
            "n_heads": 3,
            "vocab_size": 50,
            "max_seq_len": 16,
            "mlp_ratio": 3,
            "tie_embeddings": False,
            "dropout": 0,
            "init_std": 0.2,
        },
        "data": {"seq_len": 12},
        "training": {
            "batch_size_per_gpu": 3,
            "gradient_accumulation_steps": 2,
            "max_steps": STEPS,
            "learning_rate": 2e-3,
            "schedule": "one_cycle",
            "warmup_steps": 4,
            "min_lr_ratio": 0.05,
            "decay_ratio": 0.2,
            "weight_decay": 0.05,
            "betas": [0.85, 0.99],
            "eps": 1e-6,
            "max_grad_norm": 0,
            "layer_lr_decay": 0.9,
            "seed": 99,
        },
        "perturb": 0.1,
    },
}

# Schedules on their own: every kind, with and without warmup, at peak 1.
SCHEDULE_CASES: list[dict[str, Any]] = [
    {"schedule": s, "max_steps": 20, "learning_rate": 1.0, "warmup_steps": w, "min_lr_ratio": 0.1, "decay_ratio": 0.3}
    for s in ("warmup_cosine", "linear", "wsd", "constant", "one_cycle")
    for w in (0, 5)
]


def run_config(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The spec as a run config the runtime's parser accepts (data.train names no file: the batch is in the fixture)."""
    return {
        "name": name,
        "model": spec["model"],
        "data": {"train": "fixture-batch.tok", **spec["data"]},
        "training": spec["training"],
        "fsdp": {"sharding_strategy": "NO_SHARD"},
    }


def initial_model(shape: GptShape, spec: dict[str, Any]) -> Gpt:
    """The float32 starting point: GPT-2 init, then (optionally) every bias and LayerNorm parameter
    moved by N(0, perturb) so no op sees only zeros and ones."""
    model = Gpt(shape)
    initialise(model, spec["training"]["seed"], spec["model"]["init_std"])
    if spec["perturb"] > 0:
        g = torch.Generator().manual_seed(spec["training"]["seed"] + 1)
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() == 1:  # biases and LayerNorm parameters
                    p.add_(torch.randn(p.shape, generator=g) * spec["perturb"])
    return model


def fixed_batch(spec: dict[str, Any], vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """inputs, targets: [micro-batches, B, T] token ids; targets are the inputs shifted by one."""
    t = spec["training"]
    g = torch.Generator().manual_seed(t["seed"] + 2)
    seq = torch.randint(
        0, vocab, (t["gradient_accumulation_steps"], t["batch_size_per_gpu"], spec["data"]["seq_len"] + 1), generator=g
    )
    return seq[..., :-1].contiguous(), seq[..., 1:].contiguous()


def stats(t: torch.Tensor) -> dict[str, Any]:
    """Checksums of logits: sum, sum of |x|, L2 norm, and a fixed sample of values."""
    flat = t.detach().reshape(-1).double()
    stride = flat.numel() // LOGITS_SAMPLE
    return {
        "sum": float(flat.sum()),
        "abs_sum": float(flat.abs().sum()),
        "norm": float(flat.norm()),
        "sample": [float(flat[k * stride]) for k in range(LOGITS_SAMPLE)],
    }


def train(
    start: Gpt, spec: dict[str, Any], dtype: torch.dtype, inputs: torch.Tensor, targets: torch.Tensor
) -> dict[str, Any]:
    """10 optimizer steps on the fixed batch, recording what the runtime's test compares."""
    t = spec["training"]
    model = copy.deepcopy(start).to(dtype)
    optimizer = adamw(model, t)
    lr_schedule = scheduler(optimizer, t)
    # The head's group has learning-rate factor 1: its rate is the schedule's.
    head_group = next(g for g in optimizer.param_groups if any(p is model.final_ln.weight for p in g["params"]))
    micro = inputs.shape[0]
    steps: list[dict[str, Any]] = []
    logits_step1: torch.Tensor | None = None
    for step in range(1, STEPS + 1):
        optimizer.zero_grad(set_to_none=True)
        losses, logits_all = [], []
        for m in range(micro):
            logits = model(inputs[m])
            loss = loss_of(logits, targets[m])
            (loss / micro).backward()
            losses.append(float(loss))
            logits_all.append(logits.detach())
        logits = torch.cat(logits_all)
        if step == 1:
            logits_step1 = logits.reshape(-1).clone()
        grad_norms = {n: float(gradient(p).norm()) for n, p in model.named_parameters()}
        before = {n: p.detach().clone() for n, p in model.named_parameters()}
        grad_norm, clip = clip_gradients(model, float(t["max_grad_norm"]))
        lr = head_group["lr"]
        optimizer.step()
        weights = {
            n: {"norm": float(p.detach().norm()), "delta_norm": float((p.detach() - before[n]).norm())}
            for n, p in model.named_parameters()
        }
        steps.append(
            {
                "step": step,
                "lr": lr,
                "loss": sum(losses) / micro,
                "micro_losses": losses,
                "grad_norm": grad_norm,
                "clip": clip,
                "logits": stats(logits),
                "grad_norms": grad_norms,
                "weights": weights,
            }
        )
        if step < STEPS:
            lr_schedule.step()
    assert logits_step1 is not None
    final = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return {
        "dtype": {torch.float64: "float64", torch.float32: "float32"}[dtype],
        "steps": steps,
        "logits_step1": encode_array(logits_step1),
        "final_params": encode_array(final),
    }


def make_fixture(name: str, spec: dict[str, Any], command: list[str]) -> dict[str, Any]:
    shape = GptShape.from_config(spec["model"])
    start = initial_model(shape, spec)
    inputs, targets = fixed_batch(spec, shape.vocab_size)
    layout, offset = [], 0
    for n, p in start.named_parameters():
        layout.append({"name": n, "shape": list(p.shape), "offset": offset, "numel": p.numel()})
        offset += p.numel()
    return {
        "format": FORMAT,
        "version": VERSION,
        "name": name,
        "made_by": provenance(command, "cpu"),
        "config": run_config(name, spec),
        "init": {
            "seed": spec["training"]["seed"],
            "init_std": spec["model"]["init_std"],
            "perturb_bias_and_layernorm_std": spec["perturb"],
        },
        "parameters": layout,
        "n_params": offset,
        "batch": {
            "micro_batches": inputs.shape[0],
            "B": inputs.shape[1],
            "T": inputs.shape[2],
            "inputs": inputs.tolist(),
            "targets": targets.tolist(),
        },
        "initial_params": encode_array(torch.cat([p.detach().reshape(-1) for p in start.parameters()])),
        "logits_sample_count": LOGITS_SAMPLE,
        "runs": {
            "float64": train(start, spec, torch.float64, inputs, targets),
            "float32": train(start, spec, torch.float32, inputs, targets),
        },
    }


def schedule_fixture(command: list[str]) -> dict[str, Any]:
    """Each case's rate at steps 1..max_steps, read from the optimizer before each step."""
    cases = []
    for training in SCHEDULE_CASES:
        p = torch.nn.Parameter(torch.zeros(1))
        optimizer = torch.optim.SGD([p], lr=training["learning_rate"])
        s = scheduler(optimizer, training)
        rates = []
        for step in range(1, training["max_steps"] + 1):
            rates.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            if step < training["max_steps"]:
                s.step()
        cases.append({"training": training, "lr": rates})
    return {"format": SCHEDULES_FORMAT, "version": VERSION, "made_by": provenance(command, "cpu"), "cases": cases}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the fixtures (test/fixtures/reference)")
    args = parser.parse_args(argv)
    torch.use_deterministic_algorithms(True)
    command = invocation()
    for name, spec in CONFIGS.items():
        size = write_json(args.out / f"{name}.json", make_fixture(name, spec, command))
        print(f"{args.out / (name + '.json')}: {size} bytes")
    size = write_json(args.out / "schedules.json", schedule_fixture(command))
    print(f"{args.out / 'schedules.json'}: {size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

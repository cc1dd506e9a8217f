"""One PyTorch 2 training run of the parallel reference fixture, on every rank torchrun started:

    torchrun --nproc_per_node W test/reference/parallel_worker.py --job JOB.json --out RESULT.json

JOB.json (written by make_parallel_fixture.py) holds the run config, the weights file (a Hugging
Face GPT-2 folder's model.safetensors exported from a native checkpoint), the token ids and the
PyTorch strategy: "ddp" (DistributedDataParallel: the runtime's NO_SHARD), "fully_shard" (FSDP2
per block and at the root, resharding after forward: FULL_SHARD) or "fully_shard_keep" (FSDP2 with
reshard_after_forward=False: SHARD_GRAD_OP). The model is gpt.py's, in float32; the optimizer
and schedule optimizer.py's and schedule.py's. Global batch p is sequences [p G, (p + 1) G) of the
tokens (sequence j is tokens [j T, j T + T]; G = ranks x batch_size_per_gpu), rank r taking the
r-th B of them, as the runtime's unshuffled distributed sampler does. Rank 0 writes each step's
loss (the mean over ranks), gradient norm before clipping and learning rate.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpt import Gpt, GptShape, loss_of
from optimizer import adamw
from schedule import scheduler

# GPT-2 (Conv1D) name pieces of a block → gpt.py's, and whether the matrix is stored transposed.
_BLOCK = {
    "ln_1": ("ln1", False),
    "ln_2": ("ln2", False),
    "attn.c_attn": ("attn.qkv", True),
    "attn.c_proj": ("attn.proj", True),
    "mlp.c_fc": ("mlp.fc", True),
    "mlp.c_proj": ("mlp.fc2", True),
}


def gpt_state_of_gpt2(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A GPT-2 state dict (transformer.* names, Conv1D (in, out) matrices) as gpt.py's parameters."""
    out: dict[str, torch.Tensor] = {}
    for name, t in tensors.items():
        key = name.removeprefix("transformer.")
        if key in ("wte.weight", "wpe.weight"):
            out[f"embedding.{key.split('.')[0]}"] = t
        elif key.startswith("ln_f."):
            out[f"final_ln.{key[5:]}"] = t
        elif key == "lm_head.weight":
            out[key] = t
        elif key.startswith("h."):
            _, layer, rest = key.split(".", 2)
            module, leaf = rest.rsplit(".", 1)
            mine, transposed = _BLOCK[module]
            out[f"blocks.{layer}.{mine}.{leaf}"] = t.t().contiguous() if transposed and leaf == "weight" else t
        else:
            raise ValueError(f"{name}: not a GPT-2 tensor")
    return out


def wrap(model: Gpt, strategy: str) -> torch.nn.Module:
    if strategy == "ddp":
        return torch.nn.parallel.DistributedDataParallel(model)
    from torch.distributed.fsdp import fully_shard

    keep = strategy == "fully_shard_keep"
    for block in model.blocks:
        fully_shard(block, reshard_after_forward=not keep)
    fully_shard(model, reshard_after_forward=not keep)
    return model


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--job", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    job = json.loads(Path(args.job).read_text())
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()

    config = job["config"]
    training = config["training"]
    shape = GptShape.from_config(config["model"])
    model = Gpt(shape)
    from safetensors.torch import load_file

    state = gpt_state_of_gpt2(load_file(job["weights"]))
    missing = set(dict(model.named_parameters())) ^ set(state)
    if missing:
        raise ValueError(f"{job['weights']}: parameters that do not match gpt.py's: {sorted(missing)}")
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(state[name])
    # DDP wraps the model (its .module is this same object); fully_shard shards it in place. Either way
    # `model` names the parameters the optimizer and the clipping see, `wrapped` runs the forward.
    wrapped = wrap(model, job["strategy"])
    # Built after fully_shard: the optimizer holds the (sharded) parameters FSDP2 put in place.
    optimizer = adamw(model, training)
    lr_schedule = scheduler(optimizer, training)
    head_group = next(g for g in optimizer.param_groups if any(q is model.final_ln.weight for q in g["params"]))

    tokens = torch.tensor(job["tokens"], dtype=torch.long)
    T = config["data"]["seq_len"]
    B = training["batch_size_per_gpu"]
    steps = []
    for step in range(1, training["max_steps"] + 1):
        first = ((step - 1) * world + rank) * B
        seqs = torch.stack([tokens[j * T : j * T + T + 1] for j in range(first, first + B)])
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(wrapped(seqs[:, :-1]), seqs[:, 1:])
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), training["max_grad_norm"])
        if hasattr(norm, "full_tensor"):
            norm = norm.full_tensor()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        lr = head_group["lr"]
        optimizer.step()
        lr_schedule.step()
        steps.append({"step": step, "loss": float(mean) / world, "grad_norm": float(norm), "lr": lr})
    if rank == 0:
        Path(args.out).write_text(
            json.dumps({"torch": torch.__version__, "world": world, "strategy": job["strategy"], "steps": steps})
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

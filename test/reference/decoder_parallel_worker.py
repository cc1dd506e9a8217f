"""One PyTorch 2 training run of the decoder family's parallel reference fixture, on every rank torchrun started:

    torchrun --nproc_per_node W test/reference/decoder_parallel_worker.py --job JOB.json --out RESULT.json

JOB.json (written by make_decoder_parallel_fixture.py) holds the run config, the Hugging Face folder
`fsdp-train export --hf` wrote from the native trainer's step-0 checkpoint (config.json and
model.safetensors of a LlamaForCausalLM or Qwen3ForCausalLM), the token ids and the PyTorch strategy:
"fully_shard" (FSDP2 per decoder layer and at the root, resharding after forward: the runtime's
FULL_SHARD) or "fully_shard_keep" (reshard_after_forward=False: SHARD_GRAD_OP). The model is
transformers' own, loaded in float32 with eager attention; the optimizer is torch.optim.AdamW with the
runtime's decay groups (decoder-layout.md: the linear layers' weights — q/k/v, o, gate/up, down and an
untied lm_head — decay; the embedding, the RMSNorms' weights and biases do not), the schedule
schedule.py's. Batches as parallel_worker.py's: global batch p is sequences [p G, (p + 1) G) of the
tokens (sequence j is tokens [j T, j T + T]; G = ranks x batch_size_per_gpu), rank r taking the r-th B
of them. Rank 0 writes each step's loss (the mean over ranks), gradient norm before clipping and
learning rate.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpt import loss_of
from schedule import scheduler


def adamw(model: nn.Module, training: dict[str, Any]) -> torch.optim.AdamW:
    """torch.optim.AdamW with two groups: the nn.Linear weights decayed, everything else not.

    A tied lm_head is the embedding's parameter: named_parameters() names it once, as the embedding,
    so it lands in the undecayed group — as the runtime, which decays no embedding.
    """
    if float(training.get("layer_lr_decay", 1.0)) != 1.0:
        raise ValueError("training.layer_lr_decay: the decoder fixture is made with 1.0 only")
    linear = {f"{name}.weight" for name, m in model.named_modules() if isinstance(m, nn.Linear)}
    decayed: list[nn.Parameter] = []
    plain: list[nn.Parameter] = []
    for name, p in model.named_parameters():
        (decayed if name in linear else plain).append(p)
    betas = training.get("betas", [0.9, 0.95])
    peak = float(training["learning_rate"])
    return torch.optim.AdamW(
        [
            {"params": decayed, "lr": peak, "weight_decay": float(training.get("weight_decay", 0.1))},
            {"params": plain, "lr": peak, "weight_decay": 0.0},
        ],
        lr=peak,
        betas=(float(betas[0]), float(betas[1])),
        eps=float(training.get("eps", 1e-8)),
    )


def wrap(model: Any, strategy: str) -> None:
    """FSDP2 in place: each decoder layer a unit, the root (embedding, final norm, head) another."""
    from torch.distributed.fsdp import fully_shard

    if strategy not in ("fully_shard", "fully_shard_keep"):
        raise ValueError(f"strategy {strategy!r}: fully_shard or fully_shard_keep")
    keep = strategy == "fully_shard_keep"
    for layer in model.model.layers:
        fully_shard(layer, reshard_after_forward=not keep)
    fully_shard(model, reshard_after_forward=not keep)


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

    from transformers import AutoModelForCausalLM

    config = job["config"]
    training = config["training"]
    model = AutoModelForCausalLM.from_pretrained(job["folder"], dtype=torch.float32, attn_implementation="eager")
    model.train()
    architecture = type(model).__name__
    wrap(model, job["strategy"])
    # Built after fully_shard: the optimizer holds the (sharded) parameters FSDP2 put in place.
    optimizer = adamw(model, training)
    lr_schedule = scheduler(optimizer, training)

    tokens = torch.tensor(job["tokens"], dtype=torch.long)
    T = config["data"]["seq_len"]
    B = training["batch_size_per_gpu"]
    steps = []
    for step in range(1, training["max_steps"] + 1):
        first = ((step - 1) * world + rank) * B
        seqs = torch.stack([tokens[j * T : j * T + T + 1] for j in range(first, first + B)])
        optimizer.zero_grad(set_to_none=True)
        # Logits of the inputs and the loss against the next tokens here (not labels=, which shifts
        # inside the model and drops the last position).
        loss = loss_of(model(input_ids=seqs[:, :-1], use_cache=False).logits, seqs[:, 1:])
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), training["max_grad_norm"])
        if hasattr(norm, "full_tensor"):
            norm = norm.full_tensor()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        lr = optimizer.param_groups[0]["lr"]
        optimizer.step()
        lr_schedule.step()
        steps.append({"step": step, "loss": float(mean) / world, "grad_norm": float(norm), "lr": lr})
    if rank == 0:
        import transformers

        Path(args.out).write_text(
            json.dumps(
                {
                    "torch": torch.__version__,
                    "transformers": transformers.__version__,
                    "model": architecture,
                    "world": world,
                    "strategy": job["strategy"],
                    "steps": steps,
                }
            )
        )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""Pipeline parallel with FSDP2 inside each stage, measured by PyTorch's own memory tools on the CPU.

measure.py runs one rank in one process with the fake process group; a pipeline cannot (its stages
send activations and gradients to each other), so here `pp × dp` real processes (gloo, spawned by
torch.multiprocessing) each build measure.py's Llama-style model, keep their stage's part of it as
torchtitan does (pipeline_parallel.py: generate_llm_fqn_per_model_part — the embedding and the output
each weigh one layer in the split; the looped schedules give each rank stages r and r + pp), wrap it
as torchtitan's apply_fsdp does under pipeline parallel (fully_shard per block with
reshard_after_forward off, norm + output together, the stage's root) over the "dp" mesh dimension
when dp > 1, and run two AdamW steps of a torch.distributed.pipelining schedule (GPipe, 1F1B,
Interleaved1F1B) over `--microbatches` micro-batches of `--micro-batch` sequences. Every rank
tracks itself with torch.distributed._tools.mem_tracker.MemTracker (a TorchDispatchMode: every
tensor created under it, plus the stage's parameters, gradients and optimizer state, counted live
by storage); rank 0 gathers the peaks and prints one JSON line.

    .venv/bin/python bench/memory-nd/measure_pp.py --pp 2 --dp 2 --schedule 1F1B --microbatches 4
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from collections.abc import Callable

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from measure import Args, Transformer, add_model_args, local_elements, peak_of_steps

LOOPED = {"Interleaved1F1B", "LoopedBFS"}


def layers_per_stage(n_layers: int, stages: int) -> list[int]:
    """torchtitan's split: the embedding and the output count as one layer each; the first stages take the remainder."""
    if stages == 1:
        return [n_layers]
    effective = n_layers + 2
    per, extra = divmod(effective, stages)
    out, left = [], n_layers
    for s in range(stages):
        n = per + (1 if s < extra else 0) - (1 if s == 0 else 0) - (1 if s == stages - 1 else 0)
        n = max(0, min(n, left))
        out.append(n)
        left -= n
    out[-1] += left
    return out


class StageModel(nn.Module):
    """The part of the model one pipeline stage holds (torchtitan deletes the rest; the forward skips what is gone)."""

    def __init__(self, full: Transformer, layer_ids: list[int], first: bool, last: bool):
        super().__init__()
        self.tok_embeddings = full.tok_embeddings if first else None
        self.register_buffer("freqs_cis", full.get_buffer("freqs_cis"), persistent=False)
        self.layers = nn.ModuleDict({str(i): full.layers[str(i)] for i in layer_ids})
        self.norm = full.norm if last else None
        self.output = full.output if last else None

    def forward(self, h):
        if self.tok_embeddings is not None:
            h = self.tok_embeddings(h)
        for layer in self.layers.values():
            h = layer(h, self.freqs_cis)
        if self.norm is None or self.output is None:
            return h
        return self.output(self.norm(h))


def pipeline_mem_tracker():
    """MemTracker, letting a stage's root module run once per micro-batch.

    MemTracker refuses a root module's second forward in one tracker session ("multiple iterative
    calls"), which every pipeline schedule makes, one per micro-batch. Its live-tensor accounting does
    not depend on the per-module statistics this guards, so the root's entry is dropped and begun again.
    """
    from torch.distributed._tools.mem_tracker import MemTracker

    class PipelineMemTracker(MemTracker):
        def _pre_fw_hook(self, module, inputs):
            if module in self.memory_tracking and not self._mod_tracker.is_bw:
                name = self._mod_tracker.get_known_fqn(module)
                if set(self._mod_tracker.parents) - {name} == {"Global"}:
                    del self.memory_tracking[module]
            super()._pre_fw_hook(module, inputs)

    return PipelineMemTracker()


def run(rank: int, args: argparse.Namespace, port: int) -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    world = args.pp * args.dp
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.distributed.pipelining import (
        PipelineStage,
        Schedule1F1B,
        ScheduleGPipe,
        ScheduleInterleaved1F1B,
        ScheduleLoopedBFS,
    )
    from torch.distributed.pipelining.schedules import PipelineScheduleMulti, PipelineScheduleSingle

    mesh = init_device_mesh("cpu", (args.pp, args.dp), mesh_dim_names=("pp", "dp"))
    pp_rank, dp_rank = mesh["pp"].get_local_rank(), mesh["dp"].get_local_rank()
    per_rank = 2 if args.schedule in LOOPED else 1
    stages = args.pp * per_rank
    split = layers_per_stage(args.layers, stages)
    starts = [sum(split[:i]) for i in range(stages)]
    mine = [pp_rank + k * args.pp for k in range(per_rank)]

    torch.manual_seed(0)
    a = Args(args.dim, args.layers, args.heads, args.kv_heads, args.ffn, args.vocab)
    full = Transformer(a, args.seq)
    mb, seq = args.micro_batch, args.seq
    parts, pipeline_stages = [], []
    for s in mine:
        first, last = s == 0, s == stages - 1
        part = StageModel(full, list(range(starts[s], starts[s] + split[s])), first, last)
        if args.dp > 1:
            # torchtitan's apply_fsdp with pipeline parallel: reshard_after_forward off ("default" policy);
            # --bf16: its mixed precision, bf16 parameters and fp32 gradient reduction.
            dp_mesh = mesh["dp"]
            mp_policy = (
                MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
                if args.bf16
                else MixedPrecisionPolicy()
            )
            if part.tok_embeddings is not None:
                fully_shard(part.tok_embeddings, mesh=dp_mesh, mp_policy=mp_policy, reshard_after_forward=False)
            for block in part.layers.values():
                fully_shard(block, mesh=dp_mesh, mp_policy=mp_policy, reshard_after_forward=False)
            if part.norm is not None and part.output is not None:
                fully_shard([part.norm, part.output], mesh=dp_mesh, mp_policy=mp_policy, reshard_after_forward=False)
            fully_shard(part, mesh=dp_mesh, mp_policy=mp_policy)
        # Static shapes (meta tensors): no metadata-inference forward and backward inside the tracked steps.
        # The float ones require grad: that is how the stage knows a gradient comes back for them.
        act = torch.bfloat16 if args.bf16 else torch.float32
        inp = (
            torch.empty(mb, seq, dtype=torch.long, device="meta")
            if first
            else torch.empty(mb, seq, args.dim, dtype=act, device="meta", requires_grad=True)
        )
        out = torch.empty(mb, seq, args.vocab if last else args.dim, dtype=act, device="meta", requires_grad=True)
        pipeline_stages.append(
            PipelineStage(
                part, s, stages, torch.device("cpu"), input_args=inp, output_args=out, group=mesh["pp"].get_group()
            )
        )
        parts.append(part)
    del full

    def loss_fn(logits, targets):
        # torchtitan's cross_entropy_loss: fp32 logits, mean over tokens.
        return F.cross_entropy(logits.float().flatten(0, 1), targets.flatten(0, 1))

    n = args.microbatches
    if per_rank == 1:
        single: dict[str, Callable[..., PipelineScheduleSingle]] = {"GPipe": ScheduleGPipe, "1F1B": Schedule1F1B}
        schedule: PipelineScheduleSingle | PipelineScheduleMulti = single[args.schedule](
            pipeline_stages[0], n_microbatches=n, loss_fn=loss_fn
        )
    else:
        multi: dict[str, Callable[..., PipelineScheduleMulti]] = {
            "Interleaved1F1B": ScheduleInterleaved1F1B,
            "LoopedBFS": ScheduleLoopedBFS,
        }
        schedule = multi[args.schedule](pipeline_stages, n_microbatches=n, loss_fn=loss_fn)

    # As measure.py: the for-loop AdamW, which takes DTensor and plain parameters side by side.
    params = [p for part in parts for p in part.parameters()]
    optim = torch.optim.AdamW(params, lr=1e-4, foreach=False, fused=False)
    # Every data-parallel rank of a pipeline rank draws its own batch; the first stage holds the tokens, the
    # last the targets.
    g = torch.Generator().manual_seed(1000 + dp_rank)
    tokens = torch.randint(0, args.vocab, (n * mb, seq), generator=g)
    targets = torch.randint(0, args.vocab, (n * mb, seq), generator=g)
    has_first, has_last = 0 in mine, stages - 1 in mine

    def step():
        # As torchtitan's train step: the last stage does not keep every micro-batch's logits to return them.
        kwargs = {"return_outputs": args.return_outputs, **({"target": targets, "losses": []} if has_last else {})}
        if has_first:
            schedule.step(tokens, **kwargs)
        else:
            schedule.step(**kwargs)
        optim.step()
        optim.zero_grad(set_to_none=True)

    tracker = pipeline_mem_tracker()
    tracker.track_external(*parts, optim)
    peak = peak_of_steps(tracker, step)
    local = local_elements(params)
    row = {
        "rank": rank,
        "pp_rank": pp_rank,
        "dp_rank": dp_rank,
        "stages": mine,
        "layers": [list(range(starts[s], starts[s] + split[s])) for s in mine],
        "first": has_first,
        "last": has_last,
        "local_param_elements": local,
        "peak": peak,
    }
    rows = [None] * world if rank == 0 else None
    dist.gather_object(row, rows, dst=0)
    if rank == 0:
        model = {k: getattr(a, k) for k in ("dim", "layers", "heads", "kv_heads", "ffn", "vocab")}
        print(
            json.dumps(
                {
                    "world": world,
                    "pp": args.pp,
                    "dp": args.dp,
                    "schedule": args.schedule,
                    "microbatches": n,
                    "micro_batch": mb,
                    "seq": seq,
                    "dtype": "bfloat16 (FSDP mixed precision, fp32 reduce)" if args.bf16 else "float32",
                    "tracker": "MemTracker",
                    "return_outputs": args.return_outputs,
                    "model": model,
                    "ranks": rows,
                }
            ),
            flush=True,
        )
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pp", type=int, required=True)
    ap.add_argument("--dp", type=int, default=1)
    ap.add_argument("--schedule", choices=["GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS"], default="1F1B")
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--micro-batch", type=int, default=2)
    add_model_args(ap)
    ap.add_argument(
        "--return-outputs",
        action="store_true",
        help="keep and return the last stage's outputs (torch's default; torchtitan turns it off)",
    )
    ap.add_argument(
        "--bf16",
        action="store_true",
        help="FSDP2 mixed precision as torchtitan's: bf16 parameters, fp32 reduce (needs --dp > 1)",
    )
    ap.add_argument("--port", type=int, default=0, help="rendezvous port (0: a free one)")
    args = ap.parse_args()
    if args.bf16 and args.dp == 1:
        ap.error("--bf16 is FSDP2's mixed precision: it needs --dp > 1")
    port = args.port
    if port == 0:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    mp.spawn(run, args=(args, port), nprocs=args.pp * args.dp, join=True)


if __name__ == "__main__":
    main()

"""DeepSpeed ZeRO over a PEFT LoRA model in real gloo processes on the CPU, for the ZeRO + LoRA estimate
(core/memory/frameworks/deepspeed.ts) to be held to (issue 36).

DeepSpeed is not in .venv (it is no dependency of the project): run this with a Python that has it, e.g. a
throwaway venv layered on .venv's torch, transformers and PEFT:

    python3 -m venv /tmp/ds-venv
    .venv/bin/python -c "import site; print(site.getsitepackages()[0])" \\
        > "$(/tmp/ds-venv/bin/python -c 'import site; print(site.getsitepackages()[0])')/main-venv.pth"
    /tmp/ds-venv/bin/pip install wheel setuptools && /tmp/ds-venv/bin/pip install --no-build-isolation deepspeed
    cd bench/memory-lora && DS_ACCELERATOR=cpu /tmp/ds-venv/bin/python measure_zero.py --stage 2 --shape smollm2-360m

Each row: the model of measure.py's shapes (random init, fp32 or bf16 as `--dtype`), PEFT's get_peft_model, then
deepspeed.initialize with the ZeRO stage, bf16 as `--dtype`, reduce_bucket_size, overlap_comm and a client
torch.optim.AdamW (foreach) over the trainable parameters, one step to make the states, then tracked steps of
forward, the loss on fp32 logits, engine.backward and engine.step. MemTracker does not see what DeepSpeed
allocates outside modules and optimizers (its ipg buckets), so the peak is counted from the CPU allocator itself:
every live tensor storage at the step's start (found through the garbage collector) plus the largest running
sum of the allocations and frees torch.profiler records during the steps (profile_memory: the allocation
events of its event tree). Rank 0 prints one
JSON line per row with every rank's peak.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import socket
import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from measure import SHAPES
from torch._C._profiler import _EventType


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="smollm2-360m")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--targets", choices=["all-linear", "qv"], default="all-linear")
    ap.add_argument("--r", type=int, default=8)
    ap.add_argument("--dropout", type=float, default=0.05)
    ap.add_argument("--gc", action="store_true", help="gradient checkpointing (non-reentrant), as TRL enables it")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="bfloat16")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--stage", type=int, choices=[1, 2, 3], default=2)
    ap.add_argument("--reduce-bucket", type=int, default=5_000_000, help="reduce_bucket_size in elements")
    ap.add_argument("--overlap-comm", action="store_true")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--rows", default="", help="a JSON list of rows overriding the arguments above, one line each")
    args = ap.parse_args()
    rows = json.loads(args.rows) if args.rows else [{}]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(rank_main, args=(args, rows, port), nprocs=args.world, join=True)


def rank_main(rank: int, args: argparse.Namespace, rows: list[dict], port: int) -> None:
    warnings.filterwarnings("ignore")
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(args.world),
        LOCAL_WORLD_SIZE=str(args.world),
    )
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // args.world))
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.world)
    for row in rows:
        one = argparse.Namespace(**{**vars(args), **row})
        out = measure(one, rank)
        peaks: list[int] | None = [0] * args.world if rank == 0 else None
        dist.gather_object(out["peak"], peaks, dst=0)
        if rank == 0:
            assert peaks is not None
            out["rank_peaks"] = peaks
            out["peak"] = max(peaks)
            print(json.dumps(out), flush=True)
    dist.destroy_process_group()


def live_storage_bytes() -> int:
    """Bytes of every distinct tensor storage a Python object holds now."""
    seen: dict[int, int] = {}
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.device.type == "cpu":
            try:
                storage = obj.untyped_storage()
            except (RuntimeError, NotImplementedError):
                continue
            if storage.data_ptr():
                seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def measure(args: argparse.Namespace, rank: int) -> dict:
    import deepspeed  # type: ignore[import-not-found]  # not in .venv: see the module's docstring
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    shape = dict(SHAPES[args.shape])
    shape["num_hidden_layers"] = args.layers
    model_type = shape.pop("model_type")
    config = AutoConfig.for_model(model_type, **shape, attn_implementation="sdpa", use_cache=False)
    # Loaded in fp32 as TRL does by default; DeepSpeed's engine casts every parameter to bf16.
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    if args.gc:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    targets = "all-linear" if args.targets == "all-linear" else ["q_proj", "v_proj"]
    lora = LoraConfig(
        r=args.r, lora_alpha=2 * args.r, lora_dropout=args.dropout, target_modules=targets, task_type="CAUSAL_LM"
    )
    model = get_peft_model(model, lora)
    if args.gc:
        model.enable_input_require_grads()
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    counts = {"trainable": sum(p.numel() for p in trainable), "parameters": sum(p.numel() for p in model.parameters())}
    optim = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    ds_config = {
        "train_micro_batch_size_per_gpu": args.batch,
        "gradient_accumulation_steps": 1,
        "bf16": {"enabled": args.dtype == "bfloat16"},
        "zero_allow_untested_optimizer": True,
        "zero_optimization": {
            "stage": args.stage,
            "reduce_bucket_size": args.reduce_bucket,
            "overlap_comm": args.overlap_comm,
            "contiguous_gradients": True,
        },
    }
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=optim, config=ds_config)
    vocab = shape["vocab_size"]
    generator = torch.Generator().manual_seed(rank)
    tokens = torch.randint(0, vocab, (args.batch, args.seq + 1), generator=generator)
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step() -> None:
        logits = engine(input_ids=inputs).logits
        loss = F.cross_entropy(logits.float().view(-1, vocab), labels.view(-1))
        engine.backward(loss)
        del logits, loss
        engine.step()

    step()  # the optimizer states exist from here on
    gc.collect()
    base = live_storage_bytes()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        for _ in range(args.steps):
            step()
    # Every CPU allocation and free made while profiling (frees of older blocks are not reported), in time order.
    changes: list[tuple[int, int]] = []
    stack = list(prof.profiler.kineto_results.experimental_event_tree())
    while stack:
        e = stack.pop()
        stack.extend(e.children)
        if e.tag == _EventType.Allocation:
            changes.append((e.start_time_ns, e.extra_fields.alloc_size))
    running = top = 0
    for _, size in sorted(changes):
        running += size
        top = max(top, running)
    return {
        "shape": args.shape,
        "layers": args.layers,
        "targets": args.targets,
        "r": args.r,
        "gc": args.gc,
        "dtype": args.dtype,
        "seq": args.seq,
        "batch": args.batch,
        "stage": args.stage,
        "reduce_bucket": args.reduce_bucket,
        "overlap_comm": args.overlap_comm,
        "world": args.world,
        **counts,
        "base": base,
        "peak": base + top,
        "deepspeed": deepspeed.__version__,
        "torch": torch.__version__,
    }


if __name__ == "__main__":
    main()

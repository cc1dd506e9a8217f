"""LoRA with PEFT under PyTorch's MemTracker on the CPU, for the LoRA estimate to be held to (issue 36).

A Hugging Face causal LM of a published model's shape (random init, nothing downloaded) is loaded in
`--dtype`, wrapped by PEFT's get_peft_model (LoraConfig: r, alpha 2r, dropout, targets), optionally
with gradient checkpointing as TRL turns it on (non-reentrant, enable_input_require_grads), and
trained for steps of forward, the loss on fp32 logits, backward and AdamW (foreach), with
zero_grad(set_to_none=True) — the loop the estimate replays. torch.distributed._tools.mem_tracker's
MemTracker tracks every tensor; the peak of the steps after the first (the AdamW states exist) is
printed as one JSON line.

With `--world N` (N > 1) each row runs in N real processes (gloo, spawned by torch.multiprocessing) as
DDP trains a PEFT model: DistributedDataParallel over the PeftModel with its defaults (bucket_cap_mb
25, gradient_as_bucket_view off), each rank its own batch; every rank tracks itself and rank 0 prints
the row with each rank's peak. DDP rebuilds its buckets at the second step's forward, inside the
tracked step, so MemTracker counts them.

    .venv/bin/python bench/memory-lora/measure.py --shape smollm2-360m --targets all-linear --r 16 --gc
    .venv/bin/python bench/memory-lora/measure.py --world 2 --shape qwen3-0.6b --layers 4 --targets qv --r 8
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import warnings
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.utils.weak import WeakIdKeyDictionary

# The published configs' shapes (config.json of HuggingFaceTB/SmolLM2-360M, Qwen/Qwen3-0.6B,
# meta-llama/Llama-3.2-1B).
SHAPES: dict[str, dict] = {
    "smollm2-360m": dict(
        model_type="llama",
        vocab_size=49152,
        hidden_size=960,
        intermediate_size=2560,
        num_hidden_layers=32,
        num_attention_heads=15,
        num_key_value_heads=5,
        tie_word_embeddings=True,
    ),
    "qwen3-0.6b": dict(
        model_type="qwen3",
        vocab_size=151936,
        hidden_size=1024,
        intermediate_size=3072,
        num_hidden_layers=28,
        num_attention_heads=16,
        num_key_value_heads=8,
        head_dim=128,
        tie_word_embeddings=True,
    ),
    "llama-3.2-1b": dict(
        model_type="llama",
        vocab_size=128256,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=64,
        tie_word_embeddings=True,
    ),
}


class _NoHook:
    def remove(self) -> None:
        pass


class _FrozenPassed(WeakIdKeyDictionary):
    """MemTracker's parameter -> grad-hook handles, with a do-nothing handle for every frozen parameter."""

    def get(self, key: Any, default: Any = None) -> Any:
        if isinstance(key, torch.Tensor) and not key.requires_grad:
            return (_NoHook(), _NoHook())
        return super().get(key, default)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="smollm2-360m")
    ap.add_argument("--layers", type=int, default=0, help="fewer blocks than the model has (0: all)")
    ap.add_argument(
        "--targets", choices=["all-linear", "qv", "none"], default="all-linear", help="none: full fine-tuning, no PEFT"
    )
    ap.add_argument("--r", type=int, default=16)
    ap.add_argument("--dropout", type=float, default=0.05)
    ap.add_argument("--gc", action="store_true", help="gradient checkpointing (non-reentrant), as TRL enables it")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument(
        "--rows",
        default="",
        help="a JSON list of rows, each overriding shape, targets, r, gc (one process imports the libraries once): "
        "one JSON line per row",
    )
    ap.add_argument("--world", type=int, default=1, help="ranks: more than 1 runs DDP in that many gloo processes")
    ap.add_argument(
        "--fsdp", action="store_true", help="with --world: FSDP2 (fully_shard per block and root) instead of DDP"
    )
    args = ap.parse_args()
    rows = json.loads(args.rows) if args.rows else [{}]
    if args.world > 1:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        mp.spawn(ddp_rank, args=(args, rows, port), nprocs=args.world, join=True)
        return
    for row in rows:
        one = argparse.Namespace(**{**vars(args), **row})
        print(json.dumps(measure(one)), flush=True)


def ddp_rank(rank: int, args: argparse.Namespace, rows: list[dict], port: int) -> None:
    """One rank of a DDP world: every row measured in turn; rank 0 prints each row with all ranks' peaks."""
    warnings.filterwarnings("ignore")
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // args.world))
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.world)
    for row in rows:
        one = argparse.Namespace(**{**vars(args), **row})
        out = measure(one, rank)
        peaks: list[dict] | None = [{}] * args.world if rank == 0 else None
        dist.gather_object(out["peak"], peaks, dst=0)
        if rank == 0:
            assert peaks is not None
            # The row's peak is the highest rank's (the ranks differ only by their batch's tokens).
            out["rank_peaks"] = [p["Total"] for p in peaks]
            out["peak"] = max(peaks, key=lambda p: p["Total"])
            out["world"] = args.world
            out["fsdp"] = args.fsdp
            print(json.dumps(out), flush=True)
    dist.destroy_process_group()


def measure(args: argparse.Namespace, rank: int = 0) -> dict:
    """One row: the model built, PEFT applied (DDP over it in a world of ranks), one step to make AdamW's states,
    then the tracked steps."""
    from peft import LoraConfig, get_peft_model
    from torch.distributed._tools.mem_tracker import MemTracker
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    shape = dict(SHAPES[args.shape])
    if args.layers:
        shape["num_hidden_layers"] = args.layers
    model_type = shape.pop("model_type")
    config = AutoConfig.for_model(model_type, **shape, attn_implementation="sdpa", use_cache=False)
    dtype = getattr(torch, args.dtype)
    model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    if args.gc:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if args.targets != "none":
        targets = "all-linear" if args.targets == "all-linear" else ["q_proj", "v_proj"]
        lora = LoraConfig(
            r=args.r, lora_alpha=2 * args.r, lora_dropout=args.dropout, target_modules=targets, task_type="CAUSAL_LM"
        )
        model = get_peft_model(model, lora)
        if args.gc:
            model.enable_input_require_grads()
    model.train()
    if dist.is_initialized() and args.fsdp:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        # accelerate 1.x's FSDP2 plugin (TRANSFORMER_BASED_WRAP, the model's _no_split_modules): fully_shard on
        # each decoder layer, then on the root (the PeftModel), MixedPrecisionPolicy() (parameters and
        # reductions in their own dtype). Frozen and trainable parameters are sharded alike.
        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        for layer in model.get_base_model().model.layers if args.targets != "none" else model.model.layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
    elif dist.is_initialized():
        from torch.nn.parallel import DistributedDataParallel

        model = DistributedDataParallel(model)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    vocab = shape["vocab_size"]
    # Each rank its own batch (the same shapes), as a DistributedSampler gives.
    generator = torch.Generator().manual_seed(rank) if dist.is_initialized() else None
    tokens = torch.randint(0, vocab, (args.batch, args.seq + 1), generator=generator)
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step() -> None:
        logits = model(input_ids=inputs).logits
        loss = F.cross_entropy(logits.float().view(-1, vocab), labels.view(-1))
        loss.backward()
        del logits, loss
        optim.step()
        optim.zero_grad(set_to_none=True)

    step()  # AdamW's states exist from here on, as in the steps the estimate gives
    tracker = MemTracker()
    tracker.track_external(model, optim)
    # MemTracker hooks every parameter's gradient, which a frozen one refuses: the frozen base gets a
    # handle that does nothing, so the tracker passes it by (it still counts the tensor itself).
    # FSDP2 swaps in new unsharded parameters at each all-gather, so the handle is given for any frozen one.
    tracker._param_to_grad_hook_handles = _FrozenPassed(tracker._param_to_grad_hook_handles)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tracker:
            for _ in range(args.steps):
                step()
                tracker.reset_mod_stats()
    snap = tracker.get_tracker_snapshot("peak")
    peak = {str(k): v for dev, cats in snap.items() for k, v in cats.items()}
    return {
        "shape": args.shape,
        "layers": shape["num_hidden_layers"],
        "targets": args.targets,
        "r": args.r,
        "dropout": args.dropout,
        "gc": args.gc,
        "dtype": args.dtype,
        "seq": args.seq,
        "batch": args.batch,
        "trainable": sum(p.numel() for p in trainable),
        "parameters": sum(p.numel() for p in model.parameters()),
        "peak": peak,
        "torch": torch.__version__,
    }


if __name__ == "__main__":
    main()

"""QLoRA (bitsandbytes NF4 + PEFT LoRA) under PyTorch's MemTracker on the CPU, for the QLoRA estimate
(core/memory/lora.ts, frameworks/pytorch-replay-lora.ts) to be held to (issue 36).

bitsandbytes is not in .venv (it is no dependency of the project): run this with a throwaway venv layered on
.venv's torch 2.13.0+cpu, transformers 5.24.0 and peft 0.21.2, with bitsandbytes 0.50.2 (its CPU backend runs
Linear4bit forward and backward: libbitsandbytes_cpu.so; the optional `kernels` package is not needed):

    python3 -m venv /tmp/bnb-venv
    .venv/bin/python -c "import site; print(site.getsitepackages()[0])" \\
        > "$(/tmp/bnb-venv/bin/python -c 'import site; print(site.getsitepackages()[0])')/main-venv.pth"
    /tmp/bnb-venv/bin/pip install bitsandbytes==0.50.2
    cd bench/memory-lora && /tmp/bnb-venv/bin/python measure_qlora.py --shape smollm2-360m --targets qv --gc

Each row as TRL's SFTTrainer runs QLoRA: a model of measure.py's shapes (random init, saved once in bf16, then
from_pretrained with BitsAndBytesConfig(load_in_4bit, nf4 or --quant fp4, double quantisation unless
--no-double-quant, compute dtype bf16), dtype
bf16 — every decoder linear becomes a Linear4bit, the tied embedding / head stays bf16), optionally gradient
checkpointing (non-reentrant, enable_input_require_grads), get_peft_model, the adapters cast to bf16 (SFTTrainer
does so for a quantised model), then measure.py's loop: forward, the loss on fp32 logits, backward, AdamW
(foreach), one untracked step to make the states, then the tracked steps.

MemTracker counts parameters, buffers, gradients, optimizer states and every tensor made while it tracks; a
Params4bit's QuantState (absmax codes, the nested absmax, codebooks, offset) is none of those and is made at
load, so its tensors are counted here (deduplicated by storage) and added to the peak as "QuantState".
What bitsandbytes' CPU path holds that its CUDA path does not: the forward of a Linear4bit whose input needs no
gradient (the first block's q/k/v before any adapter, without checkpointing) dequantises the weight then
multiplies (the default gemm_4bit) where CUDA may, by a per-architecture choice for 5-1536 tokens, run a fused
kernel without the dequantised temporary; MatMul4Bit's forward and backward dequantise the whole weight into a
bf16 temporary on both (plus an fp32 absmax of numel / 64 with double quantisation). The printed row says how
large the largest dequantised weight is, so a peak set by that moment can be told apart.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import warnings

import torch
import torch.nn.functional as F
from measure import SHAPES, _FrozenPassed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES), default="smollm2-360m")
    ap.add_argument("--layers", type=int, default=4, help="fewer blocks than the model has (0: all)")
    ap.add_argument("--targets", choices=["all-linear", "qv"], default="all-linear")
    ap.add_argument("--r", type=int, default=16)
    ap.add_argument("--dropout", type=float, default=0.05)
    ap.add_argument("--gc", action="store_true", help="gradient checkpointing (non-reentrant), as TRL enables it")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--quant", choices=["nf4", "fp4"], default="nf4", help="bnb_4bit_quant_type")
    ap.add_argument("--no-double-quant", action="store_true", help="bnb_4bit_use_double_quant off")
    ap.add_argument("--rows", default="", help="a JSON list of rows overriding the arguments above, one line each")
    args = ap.parse_args()
    rows = json.loads(args.rows) if args.rows else [{}]
    warnings.filterwarnings("ignore")
    with tempfile.TemporaryDirectory(prefix="qlora-bench-") as tmp:
        saved: dict[tuple[str, int], str] = {}
        for row in rows:
            one = argparse.Namespace(**{**vars(args), **row})
            key = (one.shape, one.layers)
            if key not in saved:
                saved[key] = save_random(one.shape, one.layers, os.path.join(tmp, f"{one.shape}-{one.layers}"))
            print(json.dumps(measure(one, saved[key])), flush=True)


def save_random(shape_name: str, layers: int, folder: str) -> str:
    """A random-init model of the shape saved in bf16: from_pretrained quantises while it loads."""
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(0)
    shape = dict(SHAPES[shape_name])
    if layers:
        shape["num_hidden_layers"] = layers
    model_type = shape.pop("model_type")
    config = AutoConfig.for_model(model_type, **shape, attn_implementation="sdpa", use_cache=False)
    AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).save_pretrained(folder)
    return folder


def quant_state_bytes(model: torch.nn.Module) -> int:
    """Bytes of every Params4bit's QuantState tensors (each storage once)."""
    seen: dict[int, int] = {}

    def add(t: object) -> None:
        if isinstance(t, torch.Tensor):
            s = t.untyped_storage()
            seen[s.data_ptr()] = s.nbytes()

    for p in model.parameters():
        qs = getattr(p, "quant_state", None)
        if qs is None:
            continue
        for t in (qs.absmax, qs.code, qs.offset):
            add(t)
        if getattr(qs, "state2", None) is not None:
            add(qs.state2.absmax)
            add(qs.state2.code)
    return sum(seen.values())


def measure(args: argparse.Namespace, folder: str) -> dict:
    import bitsandbytes  # type: ignore[import-not-found]  # not in .venv: see the module's docstring
    import peft
    import transformers
    from peft import LoraConfig, get_peft_model
    from torch.distributed._tools.mem_tracker import MemTracker
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    torch.manual_seed(0)
    bnb = BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type=args.quant,
        bnb_4bit_use_double_quant=not args.no_double_quant,
        bnb_4bit_compute_dtype=torch.bfloat16,
    )
    model: torch.nn.Module = AutoModelForCausalLM.from_pretrained(folder, quantization_config=bnb, dtype=torch.bfloat16)
    quantised = [m for m in model.modules() if isinstance(m, bitsandbytes.nn.Linear4bit)]
    largest_dequant = max(m.in_features * m.out_features * 2 for m in quantised)
    if args.gc:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})  # type: ignore[operator]
    targets = "all-linear" if args.targets == "all-linear" else ["q_proj", "v_proj"]
    lora = LoraConfig(
        r=args.r, lora_alpha=2 * args.r, lora_dropout=args.dropout, target_modules=targets, task_type="CAUSAL_LM"
    )
    model = get_peft_model(model, lora)
    if args.gc:
        model.enable_input_require_grads()
    # SFTTrainer casts a quantised model's trainable parameters to bf16 after get_peft_model.
    for p in model.parameters():
        if p.requires_grad:
            p.data = p.data.to(torch.bfloat16)
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(trainable, lr=1e-4, foreach=True)
    vocab = SHAPES[args.shape]["vocab_size"]
    tokens = torch.randint(0, vocab, (args.batch, args.seq + 1))
    inputs, labels = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step() -> None:
        logits = model(input_ids=inputs).logits
        loss = F.cross_entropy(logits.float().view(-1, vocab), labels.view(-1))
        loss.backward()
        del logits, loss
        optim.step()
        optim.zero_grad(set_to_none=True)

    step()
    qs = quant_state_bytes(model)
    tracker = MemTracker()
    tracker.track_external(model, optim)
    tracker._param_to_grad_hook_handles = _FrozenPassed(tracker._param_to_grad_hook_handles)
    with tracker:
        for _ in range(args.steps):
            step()
            tracker.reset_mod_stats()
    snap = tracker.get_tracker_snapshot("peak")
    peak = {str(k): v for dev, cats in snap.items() for k, v in cats.items()}
    peak["QuantState"] = qs
    peak["Total"] = peak.get("Total", 0) + qs
    return {
        "shape": args.shape,
        "layers": args.layers,
        "targets": args.targets,
        "r": args.r,
        "gc": args.gc,
        "quant": args.quant,
        "double_quant": not args.no_double_quant,
        "seq": args.seq,
        "batch": args.batch,
        "linear4bit": len(quantised),
        "largest_dequant": largest_dequant,
        "trainable": sum(p.numel() for p in trainable),
        "peak": peak,
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "peft": peft.__version__,
            "bitsandbytes": bitsandbytes.__version__,
        },
    }


if __name__ == "__main__":
    main()

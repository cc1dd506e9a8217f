"""PyTorch 2's side of `npm run bench:cpu` (scripts/bench/cpu.mjs): the runtime's GPT in PyTorch
(test/reference/gpt.py: same parameters, same ops), or with --arch llama transformers'
LlamaForCausalLM (random init, SDPA attention; the Llama-family row), float32 on the CPU, AdamW, one
step = forward, backward, optimizer step, eager or torch.compile (inductor). --autocast bf16 runs the
forward and the loss under torch.autocast("cpu", dtype=torch.bfloat16): PyTorch's mixed precision on
the CPU (bf16 matrix products through oneDNN, fp32 parameters, gradients and AdamW), issue 42 item 2.

It stays alive between rounds so the benchmark can interleave it with the native runtime and the
other mode (a shared machine's load then falls on all three alike) and so torch.compile compiles
once: it builds the model, takes its warm-up steps, prints {"ready": …} and then, for every line
"steps N" on standard input, takes N steps and prints one JSON line per step with its wall and CPU
seconds (CPU: all of the process's threads); "profile" takes one step under torch.profiler and
prints its ops by self CPU time. "quit" or the end of input ends it.

    .venv/bin/python scripts/bench/cpu_pytorch.py --mode eager|compile --batch 8 --seq 128 --threads 2
        [--checkpointing none|every-1] [--d-model 768 --layers 12 --heads 12 --vocab 50257]
        [--arch llama --kv-heads 3 --intermediate 1536 --rope-theta 100000] [--autocast none|bf16]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.utils.checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "test" / "reference"))
from gpt import Gpt, GptShape, initialise, loss_of


def gemm_of(autocast: str) -> str:
    """Which library this torch build multiplies with, from its build report (torch.__config__):
    fp32 linear layers go to its BLAS (BLAS_INFO), bf16 under autocast to its oneDNN (MKL-DNN).
    The results file names it beside the native runtime's run_start runtime.gemm."""
    report = torch.__config__.show()
    lines = [line.strip(" -") for line in report.splitlines()]
    onednn = next((line for line in lines if "MKL-DNN" in line or "oneDNN" in line), "oneDNN (version not reported)")
    blas = next((line for line in lines if "Math Kernel Library" in line), None)
    info = next((w for w in report.replace(",", " ").split() if w.startswith("BLAS_INFO=")), "BLAS_INFO unknown")
    if autocast == "bf16":
        return f"{onednn.split(' (Git')[0]}: bf16 operands (torch.autocast), float32 accumulation"
    return f"{info}: {blas or 'BLAS not named in torch.__config__'}, float32"


class CheckpointedGpt(torch.nn.Module):
    """The model with each block's activations recomputed in backward (activation checkpointing
    every 1 layer, as the runtime's activation_checkpointing.every_n_layers 1)."""

    def __init__(self, model: Gpt) -> None:
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        m = self.model
        x = m.embedding(tokens)
        for block in m.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        x = m.final_ln(x)
        return torch.nn.functional.linear(x, m.embedding.wte)


class LlamaLogits(torch.nn.Module):
    """LlamaForCausalLM's logits alone (the loss is taken outside, as for the GPT)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=tokens, use_cache=False).logits


def llama_model(args: argparse.Namespace) -> tuple[torch.nn.Module, torch.nn.Module, set[str]]:
    """transformers' LlamaForCausalLM of the given shape, random init, float32, tied embeddings (SmolLM2's
    layout), no biases; AdamW decays the matrix weights but the embedding, as the runtime's decoder does
    (decoder-layout.md)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=args.vocab,
        hidden_size=args.d_model,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.kv_heads or args.heads,
        intermediate_size=args.intermediate,
        max_position_embeddings=max(2048, args.seq),
        rope_parameters={"rope_type": "default", "rope_theta": args.rope_theta},
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        attention_bias=False,
        mlp_bias=False,
        initializer_range=0.02,
    )
    config._attn_implementation = "sdpa"
    model = LlamaForCausalLM(config).float()
    if args.checkpointing == "every-1":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    decayed = {n for n, q in model.named_parameters() if q.dim() >= 2 and "embed_tokens" not in n}
    return model, LlamaLogits(model), decayed


def profile(step) -> list[dict[str, object]]:
    """One step under torch.profiler: its ops by self CPU time (all threads), the top 15 and the rest."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as p:
        step()
    ops = sorted(p.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in ops) or 1.0
    top = [
        {
            "op": e.key,
            "self_cpu_ms": e.self_cpu_time_total / 1e3,
            "share": e.self_cpu_time_total / total,
            "calls": e.count,
        }
        for e in ops[:15]
    ]
    rest = sum(e.self_cpu_time_total for e in ops[15:])
    return [
        *top,
        {
            "op": "(everything else)",
            "self_cpu_ms": rest / 1e3,
            "share": rest / total,
            "calls": sum(e.count for e in ops[15:]),
        },
    ]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=["eager", "compile"], required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--checkpointing", choices=["none", "every-1"], default="none")
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--arch", choices=["gpt2", "llama"], default="gpt2")
    p.add_argument("--kv-heads", type=int, help="llama: key-value heads")
    p.add_argument("--intermediate", type=int, help="llama: the MLP's intermediate size")
    p.add_argument("--rope-theta", type=float, default=10000.0, help="llama: the rotary base")
    p.add_argument("--autocast", choices=["none", "bf16"], default="none", help="bf16: torch.autocast on the CPU")
    p.add_argument("--warmup", type=int, default=2, help="steps before the first measured one (the first compiles)")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.arch == "llama":
        model, net, decayed = llama_model(args)
    else:
        shape = GptShape(
            vocab_size=args.vocab,
            d_model=args.d_model,
            n_layers=args.layers,
            n_heads=args.heads,
            max_seq_len=max(1024, args.seq),
        )
        model = Gpt(shape, attention="sdpa")
        initialise(model, 1234, 0.02)
        net = CheckpointedGpt(model) if args.checkpointing == "every-1" else model
        # The runtime's AdamW (its schema's defaults): decay 0.1 on matrix weights only, not on biases, LayerNorm
        # or embeddings.
        decayed = {n for n, q in model.named_parameters() if q.dim() >= 2 and not n.startswith("embedding.")}
    forward = torch.compile(net) if args.mode == "compile" else net
    decay = [q for n, q in model.named_parameters() if n in decayed]
    no_decay = [q for n, q in model.named_parameters() if n not in decayed]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=6e-4, betas=(0.9, 0.95)
    )
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), generator=g)
    inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()

    def step() -> dict[str, float]:
        w0, c0 = time.perf_counter(), time.process_time()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast == "bf16"):
            loss = loss_of(forward(inputs), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return {"wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0, "loss": float(loss.detach())}

    t0 = time.perf_counter()
    first = step()
    for _ in range(args.warmup - 1):
        step()
    print(
        json.dumps(
            {
                "ready": True,
                "torch": torch.__version__,
                "threads": torch.get_num_threads(),
                "first_step_s": first["wall_s"],
                "warmup_s": time.perf_counter() - t0,
                "mode": args.mode,
                "autocast": args.autocast,
                "gemm": gemm_of(args.autocast),
                "checkpointing": args.checkpointing,
                "n_params": sum(q.numel() for q in model.parameters()),
            }
        ),
        flush=True,
    )
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words == ["profile"]:
            print(json.dumps({"profile": profile(step)}), flush=True)
            continue
        if words[0] != "steps" or len(words) != 2 or not words[1].isdigit():
            print(json.dumps({"error": f"unknown command {line.strip()!r}: expected 'steps N' or 'quit'"}), flush=True)
            continue
        for _ in range(int(words[1])):
            print(json.dumps(step()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

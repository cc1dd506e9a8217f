"""Throughput baselines (issue 9, part 3): GPT-2 124M at sequences of 1024 in bf16 on one GPU, in
PyTorch eager with SDPA flash attention and with torch.compile — tokens/s, MFU and peak memory at
the largest micro-batch that fits. These are the numbers the CUDA backend has to beat; it can run
this script and its own benchmark side by side in one call (README.md here).

On a GPU machine:  python3 test/reference/throughput.py --out "$OUT/throughput" [--model gpt2-355m] [--seq 2048]
                   python3 test/reference/throughput.py --measure-peak --out "$OUT/throughput"
(--measure-peak: the bf16 matrix-product rate this GPU reaches through torch.matmul, the
denominator of "fraction of the measured peak" in scripts/gpu/bench_runs.py.)
On a CPU it runs as a dry run (small shapes, eager only, ``"dry_run": true``) to exercise the code;
its timings are a CPU's, not baselines, and it never writes into test/fixtures/throughput/.

Modes (issue 37): ``eager`` and ``compile`` are the untuned baselines of earlier rounds (the model alone
compiled; the loss outside it on a float32 copy of the logits; the vocabulary left at 50,257).
``tuned-compile`` and ``tuned-max-autotune`` are PyTorch as its users tune it (nanoGPT, build-nanogpt):
the vocabulary padded to a multiple of 64 (50,304: the LM head on aligned kernels; targets stay below
the real vocabulary, so the padding is never a label), the loss inside the compiled graph on the bf16
logits (the compiler fuses the float32 upcast into the log-softmax: no float32 copy is materialised),
fused AdamW and flash SDPA, compiled with torch.compile's default mode and with ``max-autotune``.
MFU counts the real vocabulary's FLOPs for every mode, as the native runtime's figure does.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from fixture_file import cpu_model, invocation, write_json
from gpt import Gpt, GptShape, initialise, loss_of
from measure_memory import nvidia_driver, slug
from memory_grid import PRESETS

FORMAT = "fsdp-studio/throughput-baseline/v1"
THROUGHPUT_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "throughput"

# Dense bf16 tensor-core peaks from the vendors' data sheets (no sparsity), by device-name part.
PEAK_BF16_FLOPS: list[tuple[str, float, str]] = [
    ("H200", 989.4e12, "NVIDIA H200 data sheet: 1979 TFLOPS bf16 with sparsity, 989.4 dense"),
    ("H100 PCIe", 756.5e12, "NVIDIA H100 PCIe data sheet: 1513 TFLOPS bf16 with sparsity, 756.5 dense"),
    ("H100", 989.4e12, "NVIDIA H100 SXM data sheet: 1979 TFLOPS bf16 with sparsity, 989.4 dense"),
    ("A100", 312e12, "NVIDIA A100 data sheet: 312 TFLOPS bf16 dense"),
]


def training_flops_per_token(s: GptShape, seq_len: int) -> float:
    """As native/src/model/flops.h: 3 x forward, the matrix products of every block and the LM head
    plus causal attention (the half it computes): 3 (L (2 (4C^2 + 2CF) + 2CT) + 2VC)."""
    C, F, L, V = s.d_model, s.ffn_hidden, s.n_layers, s.vocab_size
    return 3.0 * (L * (2.0 * (4 * C * C + 2 * C * F) + 2.0 * C * seq_len) + 2.0 * V * C)


def peak_flops(device_name: str) -> tuple[float, str] | None:
    for part, flops, source in PEAK_BF16_FLOPS:
        if part in device_name:
            return flops, source
    return None


def measured_matmul_peak(device: torch.device, n: int = 8192, reps: int = 20) -> dict[str, Any]:
    """The bf16 dense matrix-product rate this device reaches (torch.matmul, n x n x n, float32
    accumulation): what "peak" means when a step's FLOP/s is compared with what the GPU can do."""
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(3):
        a @ b
    sync()
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync()
    seconds = (time.perf_counter() - t0) / reps
    return {"n": n, "reps": reps, "seconds": seconds, "tflops": 2.0 * n**3 / seconds / 1e12}


def largest_fitting(candidates: list[int], fits: Callable[[int], bool]) -> tuple[int | None, dict[int, bool]]:
    """The largest candidate (ascending) that fits, trying upwards until the first that does not."""
    tried: dict[int, bool] = {}
    best = None
    for mb in sorted(candidates):
        tried[mb] = fits(mb)
        if not tried[mb]:
            break
        best = mb
    return best, tried


def flash_only() -> AbstractContextManager[Any]:
    """Restricts SDPA to the flash kernel where PyTorch can say so (2.3+), so a baseline is not
    silently measured with another kernel."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:
        return contextlib.nullcontext()
    return sdpa_kernel(SDPBackend.FLASH_ATTENTION)


MODES = ("eager", "compile", "tuned-compile", "tuned-max-autotune")
# What torch.compile is called with per mode; None: not compiled.
COMPILE_MODE: dict[str, str | None] = {
    "eager": None,
    "compile": "default",
    "tuned-compile": "default",
    "tuned-max-autotune": "max-autotune",
}
MODE_DESCRIPTIONS = {
    "eager": "untuned: eager, loss outside on a float32 copy of the logits, vocabulary unpadded",
    "compile": "untuned: torch.compile(model) default mode, loss outside on a float32 copy, vocabulary unpadded",
    "tuned-compile": "tuned: torch.compile(model + loss) default mode, bf16 logits, vocabulary padded to 64",
    "tuned-max-autotune": (
        "tuned: torch.compile(model + loss, mode='max-autotune'), bf16 logits, vocabulary padded to 64"
    ),
}
VOCAB_ALIGNMENT = 64  # 50,257 -> 50,304, as nanoGPT and llm.c pad GPT-2's vocabulary


def is_tuned(mode: str) -> bool:
    return mode.startswith("tuned-")


def padded_vocab(vocab_size: int) -> int:
    return -(-vocab_size // VOCAB_ALIGNMENT) * VOCAB_ALIGNMENT


def tuned_loss(model: Gpt) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The model and its cross-entropy as one function, so torch.compile sees the loss too: the logits
    stay bf16 and the upcast happens inside the fused log-softmax."""

    def loss(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = model(inputs)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    return loss


class Trainer:
    """A model, its AdamW and one random batch, stepping with bf16 autocast."""

    def __init__(self, shape: GptShape, micro_batch: int, seq_len: int, device: torch.device, mode: str) -> None:
        sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
        model_shape = dataclasses.replace(shape, vocab_size=padded_vocab(shape.vocab_size)) if is_tuned(mode) else shape
        self.model = Gpt(model_shape, attention="sdpa" if sdpa else "eager").to(device)
        initialise(self.model, 1234, 0.02)
        compile_mode = COMPILE_MODE[mode]
        self.loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
        if is_tuned(mode):
            self.loss = torch.compile(tuned_loss(self.model), mode=compile_mode)
        else:
            forward = torch.compile(self.model, mode=compile_mode) if compile_mode else self.model
            self.loss = lambda inputs, targets: loss_of(forward(inputs), targets)
        fused: dict[str, Any] = {"fused": True} if device.type == "cuda" else {}
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-4, **fused)
        g = torch.Generator(device=device).manual_seed(0)
        # Labels from the real vocabulary whatever the padding: the padded rows are never a target.
        tokens = torch.randint(0, shape.vocab_size, (micro_batch, seq_len + 1), device=device, generator=g)
        self.inputs, self.targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        self.device = device

    def step(self) -> float:
        """One optimizer step; returns its wall time in seconds (device synchronised)."""
        sync = torch.cuda.synchronize if self.device.type == "cuda" else (lambda: None)
        sync()
        t0 = time.perf_counter()
        with flash_only(), torch.autocast(self.device.type, dtype=torch.bfloat16):
            loss = self.loss(self.inputs, self.targets)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        sync()
        return time.perf_counter() - t0


@contextlib.contextmanager
def released(device: torch.device) -> Iterator[None]:
    """Frees what a trial allocated, also when it ran out of memory."""
    try:
        yield
    finally:
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()


def fits(shape: GptShape, seq_len: int, device: torch.device) -> Callable[[int], bool]:
    def attempt(mb: int) -> bool:
        with released(device):
            try:
                Trainer(shape, mb, seq_len, device, mode="eager").step()
                return True
            except RuntimeError as e:  # torch.cuda.OutOfMemoryError is one
                if "out of memory" not in str(e):
                    raise
                return False

    return attempt


def measure(
    shape: GptShape,
    seq_len: int,
    micro_batch: int,
    device: torch.device,
    mode: str,
    warmup: int,
    steps: int,
    peak: tuple[float, str] | None,
) -> dict[str, Any]:
    with released(device):
        t = Trainer(shape, micro_batch, seq_len, device, mode)
        first = t.step()  # compiles, when compiling
        for _ in range(warmup - 1):
            t.step()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        times = [t.step() for _ in range(steps)]
        tokens = micro_batch * seq_len
        tokens_per_s = tokens * steps / sum(times)
        result: dict[str, Any] = {
            "tokens_per_s": round(tokens_per_s, 1),
            "step_ms_mean": round(1e3 * statistics.fmean(times), 3),
            "step_ms_median": round(1e3 * statistics.median(times), 3),
            "step_ms_min": round(1e3 * min(times), 3),
            "first_step_s": round(first, 3),
            "mfu": round(training_flops_per_token(shape, seq_len) * tokens_per_s / peak[0], 4) if peak else None,
            "achieved_tflops": float(f"{training_flops_per_token(shape, seq_len) * tokens_per_s / 1e12:.4g}"),
        }
        if device.type == "cuda":
            result["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
            result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(PRESETS), default="gpt2-124m")
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--micro-batches", default="4,8,12,16,24,32,40,48,56,64", help="candidates, comma-separated")
    parser.add_argument("--modes", default="eager,compile", help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--measure-peak", action="store_true", help="only time a bf16 matrix product (the measured peak) and write it"
    )
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    if not set(modes) <= set(MODES):
        parser.error(f"--modes {args.modes}: each must be one of {', '.join(MODES)}")
    cuda = torch.cuda.is_available()
    out_dir = args.out.resolve()
    if not cuda and (out_dir == THROUGHPUT_FIXTURES or THROUGHPUT_FIXTURES in out_dir.parents):
        parser.error(f"--out {args.out}: no GPU here; a dry run never writes into {THROUGHPUT_FIXTURES}")
    compiled = [m for m in modes if COMPILE_MODE[m]]
    if compiled and not hasattr(torch, "compile") and not args.measure_peak:
        parser.error(f"--modes {','.join(compiled)}: torch.compile needs PyTorch >= 2.0; this is {torch.__version__}")

    device = torch.device("cuda" if cuda else "cpu")
    if args.measure_peak:
        name = torch.cuda.get_device_name() if cuda else f"cpu ({cpu_model()})"
        peak_doc = {
            "format": "fsdp-studio/matmul-peak/v1",
            "device": name,
            "date": datetime.date.today().isoformat(),
            "torch": torch.__version__,
            "driver": nvidia_driver() if cuda else None,
            **measured_matmul_peak(device, 8192 if cuda else 512, 20 if cuda else 2),
        }
        if not cuda:
            peak_doc["dry_run"] = True
        write_json(out_dir / f"matmul-peak-{slug(name)}-{peak_doc['date']}{'' if cuda else '-dry-run'}.json", peak_doc)
        print(f"matmul peak: {peak_doc['tflops']:.1f} TFLOP/s ({name})")
        return 0
    shape = PRESETS[args.model].shape()
    if args.seq > shape.max_seq_len:
        shape = dataclasses.replace(
            shape, max_seq_len=args.seq
        )  # longer sequences: a longer position table, as the runtime's config sets it
    name = torch.cuda.get_device_name() if cuda else f"cpu ({cpu_model()})"
    peak = peak_flops(name) if cuda else None
    doc: dict[str, Any] = {
        "format": FORMAT,
        "device": name,
        "date": datetime.date.today().isoformat(),
        "command": " ".join(invocation()),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "driver": nvidia_driver() if cuda else None,
        "model": {"preset": args.model, **shape.__dict__},
        "seq_len": args.seq,
        "precision": "torch.autocast(bfloat16), fp32 master weights, AdamW(fused=True) on CUDA",
        "modes": {m: MODE_DESCRIPTIONS[m] for m in modes},
        "padded_vocab_size": padded_vocab(shape.vocab_size),
        "attention": "F.scaled_dot_product_attention restricted to the flash kernel"
        if hasattr(torch.nn.functional, "scaled_dot_product_attention")
        else "eager softmax(QK^T)V (no SDPA in this PyTorch)",
        "flops_per_token": training_flops_per_token(shape, args.seq),
        "flops_formula": "3 (L (2 (4C^2 + 2CF) + 2CT) + 2VC), as native/src/model/flops.h",
        "peak_flops": peak[0] if peak else None,
        "peak_flops_source": peak[1] if peak else None,
    }
    if not cuda:
        doc["dry_run"] = True
    best, tried = largest_fitting([int(x) for x in args.micro_batches.split(",")], fits(shape, args.seq, device))
    doc["micro_batch_search"] = {str(k): "fits" if v else "out of memory" for k, v in tried.items()}
    if best is None:
        parser.error(f"no micro-batch of {args.micro_batches} fits")
    doc["micro_batch"] = best
    doc["results"] = {}
    path = out_dir / f"{slug(name)}-{doc['date']}{'' if cuda else '-dry-run'}.json"
    for mode in modes:
        doc["results"][mode] = measure(shape, args.seq, best, device, mode, args.warmup, args.steps, peak)
        print(f"{mode}: {doc['results'][mode]}", flush=True)
        write_json(path, doc)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""transformers' logits of Hugging Face causal LM folders, for test/native/hf-decoder-export.test.ts:

    python hf_causal_lm_logits.py < REQUESTS

Each line of REQUESTS is one request: a JSON list of {"folder": FOLDER, "tokens": [[ids], ...]}.
Each folder is loaded with AutoModelForCausalLM.from_pretrained in float32 (bfloat16 weights widen
exactly) with eager attention; the answer, one line per request, is a list of {"architecture": str,
"shape": [B, T, V], "logits": [...]}, or {"error": the traceback} where a job raised. One process
answers the whole test file: importing torch and transformers costs ~5 s of CPU, a request under 0.1 s.
Nothing is read from a hub (HF_HUB_OFFLINE=1).
"""

import json
import os
import sys
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import AutoModelForCausalLM
from transformers.utils import logging

logging.set_verbosity_error()


def logits(folder, tokens):
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor(tokens, dtype=torch.long)).logits
    return {
        "architecture": type(model).__name__,
        "shape": list(out.shape),
        "logits": out.reshape(-1).tolist(),
    }


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        answer: list[dict[str, object]] | dict[str, str]
        try:
            answer = [logits(job["folder"], job["tokens"]) for job in json.loads(line)]
        except Exception:
            answer = {"error": traceback.format_exc()}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

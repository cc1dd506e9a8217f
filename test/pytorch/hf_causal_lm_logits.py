"""transformers' logits of Hugging Face causal LM folders, for test/native/hf-decoder-export.test.ts:

    python hf_causal_lm_logits.py < JOBS.json

JOBS.json: a list of {"folder": FOLDER, "tokens": [[ids], ...]}. Each folder is loaded with
AutoModelForCausalLM.from_pretrained in float32 (bfloat16 weights widen exactly) with eager
attention; prints a list of {"architecture": str, "shape": [B, T, V], "logits": [...]}.
Nothing is read from a hub (HF_HUB_OFFLINE=1).
"""

import json
import os
import sys

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
    jobs = json.load(sys.stdin)
    json.dump([logits(job["folder"], job["tokens"]) for job in jobs], sys.stdout)


if __name__ == "__main__":
    main()

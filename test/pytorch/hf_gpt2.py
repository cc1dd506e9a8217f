"""transformers' side of the Hugging Face export tests (test/native/hf-export.test.ts), several jobs per
start (importing transformers takes seconds):

    python hf_gpt2.py < JOBS.json

JOBS.json: a list of
  {"make": FOLDER, "model": {run config model section}, "seed": N}   a randomly initialised GPT2LMHeadModel
                                                                      of that shape, save_pretrained(FOLDER)
  {"logits": FOLDER, "tokens": [[ids], ...]}                           logits of from_pretrained(FOLDER)
Prints a list with one answer per job: {} for make; {"shape": [B, T, V], "logits": [...], "tied": bool} for logits.
Nothing is read from a hub (HF_HUB_OFFLINE=1).
"""

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging

logging.set_verbosity_error()


def logits(folder, tokens):
    model = GPT2LMHeadModel.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        out = model(torch.tensor(tokens, dtype=torch.long)).logits
    tied = model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
    return {"shape": list(out.shape), "logits": out.reshape(-1).tolist(), "tied": tied}


def make(folder, m, seed):
    torch.manual_seed(int(seed))
    config = GPT2Config(
        vocab_size=m["vocab_size"],
        n_positions=m["max_seq_len"],
        n_embd=m["d_model"],
        n_layer=m["n_layers"],
        n_head=m["n_heads"],
        n_inner=m.get("mlp_ratio", 4) * m["d_model"],
        tie_word_embeddings=m.get("tie_embeddings", True),
        bos_token_id=None,
        eos_token_id=None,
    )
    model = GPT2LMHeadModel(config)
    with torch.no_grad():
        # Biases and LayerNorm parameters away from 0 and 1, so that a swapped tensor shows in the logits.
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(torch.randn(p.shape) * 0.1)
    model.save_pretrained(folder)
    return {}


if __name__ == "__main__":
    answers = []
    for job in json.load(sys.stdin):
        answers.append(
            make(job["make"], job["model"], job["seed"]) if "make" in job else logits(job["logits"], job["tokens"])
        )
    json.dump(answers, sys.stdout)

"""The decoder fixtures' generator: its float64 inv_freq is transformers' own formula, lifting the float32 casts
matters (and keeps float64), and every transformers tensor lands in the runtime's layout."""

from __future__ import annotations

import copy
import unittest
from typing import Any

import torch
from make_decoder_fixtures import CONFIGS, build, fixed_batch, inv_freq_float64, lift_float32_casts, our_layout
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS


class DecoderFixturesTest(unittest.TestCase):
    def test_inv_freq_is_transformers_formula_in_float64(self) -> None:
        # Llama 3.2's own scaling (head_dim 64 over 8192 tokens, factor 32), and the fixtures' small one.
        cases: list[dict[str, Any]] = [
            {
                "hidden_size": 2048,
                "num_attention_heads": 32,
                "rope_parameters": {
                    "rope_type": "llama3",
                    "rope_theta": 500000.0,
                    "factor": 32.0,
                    "low_freq_factor": 1.0,
                    "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 8192,
                },
            },
            {**CONFIGS["llama-gqa-llama3-tied"]["hf"]},
        ]
        for hf in cases:
            config = LlamaConfig(**{**hf, "max_position_embeddings": 131072})
            theirs, _ = ROPE_INIT_FUNCTIONS["llama3"](config)
            ours = inv_freq_float64(hf)
            self.assertEqual(ours.dtype, torch.float64)
            self.assertLess(float(((ours - theirs.double()).abs() / ours).max()), 1e-6)

    def test_lifting_the_float32_casts_moves_float64_logits_by_float32_rounding(self) -> None:
        spec = CONFIGS["qwen3-qk-norm-head-dim-untied"]
        model = build(spec)
        inputs, _ = fixed_batch(spec["seed"], spec["hf"]["vocab_size"])
        with torch.no_grad():
            raw = model(input_ids=inputs).logits
            lifted_model = copy.deepcopy(model)
            lift_float32_casts(lifted_model, spec["hf"])
            lifted = lifted_model(input_ids=inputs).logits
        self.assertEqual(lifted.dtype, torch.float64)
        difference = float((raw - lifted).norm() / lifted.norm())
        # float32 rounding shows (the casts were there), nothing more (the lifted model is the same model).
        self.assertGreater(difference, 1e-9)
        self.assertLess(difference, 1e-5)

    def test_every_transformers_tensor_is_in_the_layout_once(self) -> None:
        for name, spec in CONFIGS.items():
            model = build(spec)
            layout = our_layout(model, spec)
            theirs = [n for _, names, _ in layout for n in names]
            self.assertEqual(sorted(theirs), sorted(n for n, _ in model.named_parameters()), name)
            hf = spec["hf"]
            D = hf.get("head_dim") or hf["hidden_size"] // hf["num_attention_heads"]
            qkv = next(tensors for ours, _, tensors in layout if ours == "blocks.0.attn.qkv.weight")
            rows = [t.shape[0] for t in qkv]
            self.assertEqual(rows, [hf["num_attention_heads"] * D, *[hf["num_key_value_heads"] * D] * 2], name)


if __name__ == "__main__":
    unittest.main()

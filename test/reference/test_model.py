"""The PyTorch GPT is the runtime's: parameter layout, initialisation, causality, config errors."""

from __future__ import annotations

import math
import unittest

import torch
from gpt import Gpt, GptShape, initialise

BLOCK = [
    "ln1.weight",
    "ln1.bias",
    "attn.qkv.weight",
    "attn.qkv.bias",
    "attn.proj.weight",
    "attn.proj.bias",
    "ln2.weight",
    "ln2.bias",
    "mlp.fc.weight",
    "mlp.fc.bias",
    "mlp.fc2.weight",
    "mlp.fc2.bias",
]


class ModelTest(unittest.TestCase):
    def test_parameters_are_the_runtime_units_in_order(self) -> None:
        # native/src/model/param_layout.cc: embedding unit, block units, head unit.
        for tied in (True, False):
            model = Gpt(GptShape(50, 24, 2, 3, 16, mlp_ratio=3, tie_embeddings=tied))
            expected = (
                ["embedding.wte", "embedding.wpe"]
                + [f"blocks.{i}.{n}" for i in range(2) for n in BLOCK]
                + ["final_ln.weight", "final_ln.bias"]
            )
            expected += [] if tied else ["lm_head.weight"]
            self.assertEqual([n for n, _ in model.named_parameters()], expected)
            shapes = {n: tuple(p.shape) for n, p in model.named_parameters()}
            self.assertEqual(shapes["blocks.0.attn.qkv.weight"], (72, 24))  # PyTorch's (out, in)
            self.assertEqual(shapes["blocks.1.mlp.fc.weight"], (72, 24))

    def test_initialisation_follows_gpt2(self) -> None:
        model = Gpt(GptShape(512, 256, 8, 4, 64))
        initialise(model, 7, 0.02)
        params = dict(model.named_parameters())
        self.assertTrue(torch.equal(params["blocks.3.ln1.weight"], torch.ones(256)))
        self.assertTrue(torch.equal(params["blocks.3.attn.qkv.bias"], torch.zeros(768)))
        self.assertAlmostEqual(float(params["blocks.3.mlp.fc.weight"].std()), 0.02, delta=0.001)
        self.assertAlmostEqual(float(params["blocks.3.mlp.fc2.weight"].std()), 0.02 / math.sqrt(16), delta=0.0003)
        self.assertFalse(torch.equal(params["blocks.0.mlp.fc.weight"], params["blocks.1.mlp.fc.weight"]))
        again = Gpt(GptShape(512, 256, 8, 4, 64))
        initialise(again, 7, 0.02)
        self.assertTrue(torch.equal(again.embedding.wte, model.embedding.wte))

    def test_a_token_sees_no_later_token(self) -> None:
        model = Gpt(GptShape(30, 16, 2, 2, 10))
        initialise(model, 1, 0.5)
        tokens = torch.randint(0, 30, (1, 10), generator=torch.Generator().manual_seed(3))
        changed = tokens.clone()
        changed[0, 6] = (tokens[0, 6] + 1) % 30
        a, b = model(tokens), model(changed)
        self.assertTrue(torch.allclose(a[:, :6], b[:, :6]))
        self.assertFalse(torch.allclose(a[:, 6:], b[:, 6:]))

    def test_config_errors_name_the_key(self) -> None:
        base = {"vocab_size": 10, "d_model": 16, "n_layers": 1, "n_heads": 3, "max_seq_len": 8}
        with self.assertRaisesRegex(ValueError, "model.d_model: 16 is not divisible by model.n_heads"):
            GptShape.from_config(base)
        with self.assertRaisesRegex(ValueError, "model.dropout"):
            GptShape.from_config({**base, "n_heads": 4, "dropout": 0.1})


if __name__ == "__main__":
    unittest.main()

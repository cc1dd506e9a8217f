"""Decay groups, layer-wise learning rates, clipping and the schedules."""

from __future__ import annotations

import itertools
import unittest

import torch
from gpt import Gpt, GptShape, initialise
from optimizer import adamw, clip_gradients, decayed_names, gradient, lr_scale
from schedule import scheduler

TRAINING = {"learning_rate": 1.0, "weight_decay": 0.1, "layer_lr_decay": 0.5, "max_steps": 10}


def rates(training: dict) -> list[float]:
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=training["learning_rate"])
    s = scheduler(opt, training)
    out = []
    for step in range(training["max_steps"]):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        if step < training["max_steps"] - 1:
            s.step()
    return out


class OptimizerTest(unittest.TestCase):
    def test_decay_applies_to_matrix_weights_only(self) -> None:
        model = Gpt(GptShape(20, 8, 1, 2, 4, tie_embeddings=False))
        self.assertEqual(
            decayed_names(model),
            {
                "blocks.0.attn.qkv.weight",
                "blocks.0.attn.proj.weight",
                "blocks.0.mlp.fc.weight",
                "blocks.0.mlp.fc2.weight",
                "lm_head.weight",
            },
        )

    def test_layer_rates_fall_towards_the_input(self) -> None:
        # The schema: block i of L gets decay^(L - i), embeddings decay^(L + 1), the head 1.
        self.assertEqual(lr_scale("embedding.wte", 3, 0.5), 0.0625)
        self.assertEqual(lr_scale("blocks.0.ln1.weight", 3, 0.5), 0.125)
        self.assertEqual(lr_scale("blocks.2.mlp.fc.bias", 3, 0.5), 0.5)
        self.assertEqual(lr_scale("final_ln.weight", 3, 0.5), 1.0)
        model = Gpt(GptShape(20, 8, 3, 2, 4))
        groups = adamw(model, TRAINING).param_groups
        by_name = {n: g for n, p in model.named_parameters() for g in groups if any(q is p for q in g["params"])}
        self.assertEqual(by_name["blocks.1.attn.qkv.weight"]["lr"], 0.25)
        self.assertEqual(by_name["blocks.1.attn.qkv.weight"]["weight_decay"], 0.1)
        self.assertEqual(by_name["blocks.1.attn.qkv.bias"]["weight_decay"], 0.0)

    def test_clipping_scales_the_global_norm_to_the_limit(self) -> None:
        model = Gpt(GptShape(20, 8, 1, 2, 4))
        initialise(model, 0, 0.5)
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        n = sum(p.numel() for p in model.parameters())
        norm, factor = clip_gradients(model, 1.0)
        self.assertAlmostEqual(norm, n**0.5, places=3)
        self.assertAlmostEqual(factor, 1.0 / (n**0.5 + 1e-6), places=9)
        after = torch.stack([gradient(p).norm() for p in model.parameters()]).norm()
        self.assertAlmostEqual(float(after), 1.0, places=5)
        self.assertEqual(clip_gradients(model, 0)[1], 1.0)


class ScheduleTest(unittest.TestCase):
    def test_warmup_rises_from_zero_and_cosine_ends_at_the_floor(self) -> None:
        r = rates(
            {"schedule": "warmup_cosine", "learning_rate": 2.0, "max_steps": 10, "warmup_steps": 4, "min_lr_ratio": 0.1}
        )
        self.assertEqual(r[:4], [0.5, 1.0, 1.5, 2.0])
        self.assertAlmostEqual(r[-1], 0.2)
        self.assertTrue(all(a > b for a, b in itertools.pairwise(r[3:])))

    def test_wsd_holds_the_peak_then_decays_linearly(self) -> None:
        r = rates(
            {
                "schedule": "wsd",
                "learning_rate": 1.0,
                "max_steps": 10,
                "warmup_steps": 0,
                "min_lr_ratio": 0.0,
                "decay_ratio": 0.2,
            }
        )
        self.assertEqual(r[:8], [1.0] * 8)
        self.assertAlmostEqual(r[8], 0.5)
        self.assertAlmostEqual(r[9], 0.0)

    def test_one_cycle_is_pytorchs_starting_at_a_25th_of_the_peak(self) -> None:
        r = rates(
            {"schedule": "one_cycle", "learning_rate": 1.0, "max_steps": 10, "warmup_steps": 4, "min_lr_ratio": 0.1}
        )
        self.assertAlmostEqual(r[0], 0.04)
        self.assertAlmostEqual(r[3], 1.0)
        self.assertAlmostEqual(r[9], 0.1)

    def test_an_unknown_schedule_is_named(self) -> None:
        with self.assertRaisesRegex(ValueError, "training.schedule: 'cosine'"):
            rates({"schedule": "cosine", "learning_rate": 1.0, "max_steps": 3})


if __name__ == "__main__":
    unittest.main()

"""The GPU harnesses (measure_memory.py, throughput.py) as far as a CPU with any PyTorch can run
them: the grid, the estimator inputs, checkpointing wrappers, the three-step phase loop, the
writers and their refusals. Nothing here measures GPU memory or speed."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import unittest
from pathlib import Path
from typing import Any

import gpu_ground_truth
import measure_memory
import throughput
import torch
from gpt import Gpt, GptShape, initialise, loss_of
from memory_grid import GRIDS, PRESETS
from memory_phases import NoCounters, measure_three_steps
from optimizer import gradient
from parallelize import apply_checkpointing, missing_feature

ESTIMATOR_KEYS = {
    "framework",
    "device",
    "model",
    "seqLen",
    "microBatch",
    "gradAccumSteps",
    "strategy",
    "nprocPerNode",
    "nnodes",
    "precision",
    "checkpointing",
    "offload",
    "attention",
    "dropout",
    "fsdp",
    "ddp",
    "zero",
}


class StepCounters:
    """Counters that rise by 100 with every read of the live bytes and remember the highest read
    since the last reset: enough to check which reads the loop combines, with no GPU."""

    def __init__(self) -> None:
        self.now, self.peak = 0, 0

    def reset_peak(self) -> None:
        self.peak = self.now

    def allocated(self) -> int | None:
        return self.now

    def peak_allocated(self) -> int | None:
        self.now += 100
        self.peak = max(self.peak, self.now)
        return self.peak

    def peak_reserved(self) -> int | None:
        return self.peak + 1

    def stats(self) -> dict[str, Any] | None:
        return {"reads": self.now // 100}


def tiny_training() -> tuple[Gpt, torch.optim.Optimizer, torch.Tensor, torch.Tensor]:
    model = Gpt(GptShape(40, 16, 2, 2, 12))
    initialise(model, 0, 0.1)
    tokens = torch.randint(0, 40, (2, 13), generator=torch.Generator().manual_seed(0))
    return model, torch.optim.AdamW(model.parameters(), lr=1e-2), tokens[:, :-1], tokens[:, 1:]


class GridTest(unittest.TestCase):
    def test_the_default_grid_covers_the_issue(self) -> None:
        points = GRIDS["default"]
        self.assertGreaterEqual(len(points), 40)
        self.assertEqual(len({p.id for p in points}), len(points))
        for attribute, values in [
            ("strategy", {"plain", "fsdp2"}),
            ("precision", {"fp32", "bf16"}),
            ("checkpointing", {"none", "every", "selective"}),
            ("seq_len", {512, 1024}),
            ("micro_batch", {1, 2, 4}),
        ]:
            self.assertEqual({getattr(p, attribute) for p in points}, values, attribute)
        self.assertEqual(len({p.model.id for p in points}), 2)

    def test_every_point_carries_the_estimators_input(self) -> None:
        point = next(p for p in GRIDS["default"] if p.id == "gpt2-124m/fsdp2/bf16/ac-selective/s1024/b4")
        i = point.estimator_input()
        self.assertEqual(set(i), ESTIMATOR_KEYS)
        self.assertEqual(i["model"]["name"], "GPT-2 124M")
        self.assertEqual(
            (i["strategy"], i["precision"]["param"], i["checkpointing"]["policy"], i["seqLen"], i["microBatch"]),
            ("FULL_SHARD", "bfloat16", "selective", 1024, 4),
        )
        plain = next(p for p in GRIDS["default"] if p.id == "gpt-d512-l8/plain/fp32/ac-every/s512/b1").estimator_input()
        self.assertEqual(
            (plain["strategy"], plain["precision"]["activation"], plain["checkpointing"]),
            ("NO_SHARD", "float32", {"policy": "every_n", "everyN": 1}),
        )


class LoopTest(unittest.TestCase):
    def test_three_steps_in_phases_train_the_model(self) -> None:
        model, optimizer, inputs, targets = tiny_training()
        seen: list[tuple[int, str]] = []
        measured = measure_three_steps(
            model, optimizer, inputs, targets, NoCounters(), on_phase=lambda s, p: seen.append((s, p))
        )
        self.assertEqual(seen, [(s, p) for s in (1, 2, 3) for p in ("forward", "backward", "optimizer")])
        self.assertLess(measured["losses"][2], measured["losses"][0])
        self.assertIsNone(measured["max_memory_allocated"])
        self.assertEqual(set(measured["phases"]), {"forward", "backward", "optimizer"})
        self.assertTrue(all(p.grad is None for p in model.parameters()), "zero_grad(set_to_none=True) after the step")

    def test_the_peak_is_the_highest_of_step_2_and_the_phases_of_step_3(self) -> None:
        model, optimizer, inputs, targets = tiny_training()
        counters = StepCounters()
        measured = measure_three_steps(model, optimizer, inputs, targets, counters)
        # Reads: end of step 2 (100), then after each phase of step 3 (200, 300, 400).
        self.assertEqual(
            [measured["phases"][p]["peak_allocated"] for p in ("forward", "backward", "optimizer")], [200, 300, 400]
        )
        self.assertEqual(measured["max_memory_allocated"], 400)
        self.assertEqual(measured["max_memory_reserved"], 401)
        self.assertEqual(measured["memory_stats"], {"reads": 4})

    def test_checkpointing_every_block_recomputes_the_same_gradients(self) -> None:
        grads = []
        for policy in ("none", "every"):
            model, _, inputs, targets = tiny_training()
            apply_checkpointing(model, policy)
            loss_of(model(inputs), targets).backward()
            grads.append(torch.cat([gradient(p).reshape(-1) for p in model.parameters()]))
        self.assertEqual(type(model.blocks[0]).__name__, "Checkpointed")
        self.assertTrue(torch.allclose(grads[0], grads[1], rtol=1e-5, atol=1e-7))


class MeasureMemoryTest(unittest.TestCase):
    def test_a_cpu_run_is_a_dry_run_and_never_lands_in_the_fixtures(self) -> None:
        if torch.cuda.is_available():
            self.skipTest("a GPU is here: this run would measure")
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            measure_memory.main(["--grid", "smoke", "--out", str(measure_memory.MEASURED_FIXTURES)])
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
            measure_memory.main(["--grid", "smoke", "--only", "s32/b2", "--out", d])
            [path] = Path(d).iterdir()
            doc = json.loads(path.read_text())
        self.assertTrue(doc["dry_run"])
        self.assertEqual(doc["format"], "fsdp-studio/measured-memory/v1")
        ran = {p["id"] for p in doc["points"]}
        self.assertIn("tiny/plain/fp32/ac-every/s32/b2", ran)
        for point in doc["points"]:
            self.assertEqual(set(point["input"]), ESTIMATOR_KEYS)
            self.assertIsNone(point["measured"]["max_memory_allocated"])
        for skipped in doc["skipped"]:
            self.assertEqual(
                skipped["reason"], missing_feature(skipped["id"].split("/")[3][3:], skipped["id"].split("/")[1])
            )
        self.assertEqual(len(doc["points"]) + len(doc["skipped"]), 12)


class GpuEntryTest(unittest.TestCase):
    def test_the_gpu_entry_refuses_a_machine_without_one(self) -> None:
        if torch.cuda.is_available():
            self.skipTest("a GPU is here")
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit):
            gpu_ground_truth.main(["--out", "/tmp/unused"])
        self.assertIn("no GPU here", err.getvalue())


class ThroughputTest(unittest.TestCase):
    def test_flops_per_token_are_6n_plus_causal_attention(self) -> None:
        s = PRESETS["gpt2-124m"].shape()
        model = Gpt(s)
        # N: every matrix-product weight, the tied head (= wte) included, wpe excluded.
        n = (
            sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
            + model.embedding.wte.numel()
        )
        self.assertEqual(throughput.training_flops_per_token(s, 1024), 6 * n + 6 * s.n_layers * 1024 * s.d_model)
        self.assertEqual(throughput.training_flops_per_token(s, 1024), 797_815_296)

    def test_the_largest_micro_batch_stops_at_the_first_that_does_not_fit(self) -> None:
        tried: list[int] = []

        def fits(micro_batch: int) -> bool:
            tried.append(micro_batch)
            return micro_batch <= 16

        best, result = throughput.largest_fitting([16, 4, 8, 32, 64], fits)
        self.assertEqual((best, tried), (16, [4, 8, 16, 32]))
        self.assertEqual(result, {4: True, 8: True, 16: True, 32: False})
        self.assertEqual(throughput.largest_fitting([8], lambda mb: False)[0], None)

    def test_peak_flops_by_device(self) -> None:
        def peak(device: str) -> float | None:
            found = throughput.peak_flops(device)
            return found[0] if found else None

        self.assertEqual(peak("NVIDIA H100 80GB HBM3"), 989.4e12)
        self.assertEqual(peak("NVIDIA H100 PCIe"), 756.5e12)
        self.assertEqual(peak("NVIDIA H200"), 989.4e12)
        self.assertIsNone(throughput.peak_flops("cpu (AMD EPYC)"))

    def test_a_cpu_run_is_a_dry_run(self) -> None:
        if torch.cuda.is_available():
            self.skipTest("a GPU is here: this run would measure")
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
            throughput.main(
                [
                    "--model",
                    "tiny",
                    "--seq",
                    "16",
                    "--micro-batches",
                    "1,2",
                    "--modes",
                    "eager",
                    "--warmup",
                    "1",
                    "--steps",
                    "2",
                    "--out",
                    d,
                ]
            )
            [path] = Path(d).iterdir()
            doc = json.loads(path.read_text())
        self.assertTrue(doc["dry_run"])
        self.assertEqual((doc["micro_batch"], doc["micro_batch_search"]), (2, {"1": "fits", "2": "fits"}))
        self.assertGreater(doc["results"]["eager"]["tokens_per_s"], 0)
        self.assertIsNone(doc["results"]["eager"]["mfu"])

    def test_the_tuned_baseline_pads_the_vocabulary_and_keeps_the_loss(self) -> None:
        self.assertEqual(throughput.padded_vocab(50257), 50304)
        self.assertEqual(throughput.padded_vocab(50304), 50304)
        shape = PRESETS["tiny"].shape()
        model = Gpt(shape)
        initialise(model, 1, 0.02)
        tokens = torch.randint(0, shape.vocab_size, (2, 9), generator=torch.Generator().manual_seed(3))
        inputs, targets = tokens[:, :-1], tokens[:, 1:]
        # In float32 the fused form is the same loss as the model's logits through loss_of.
        torch.testing.assert_close(throughput.tuned_loss(model)(inputs, targets), loss_of(model(inputs), targets))
        trainer = throughput.Trainer(shape, 2, 8, torch.device("cpu"), "tuned-compile")
        self.assertEqual(trainer.model.embedding.wte.shape[0], throughput.padded_vocab(shape.vocab_size))
        self.assertLess(int(trainer.targets.max()), shape.vocab_size)  # the padded rows are never a label

    def test_a_tuned_dry_run_compiles_the_model_with_its_loss(self) -> None:
        if torch.cuda.is_available():
            self.skipTest("a GPU is here: this run would measure")
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
            throughput.main(
                [
                    "--model",
                    "tiny",
                    "--seq",
                    "16",
                    "--micro-batches",
                    "1",
                    "--modes",
                    "tuned-compile",
                    "--warmup",
                    "1",
                    "--steps",
                    "1",
                    "--out",
                    d,
                ]
            )
            [path] = Path(d).iterdir()
            doc = json.loads(path.read_text())
        self.assertGreater(doc["results"]["tuned-compile"]["tokens_per_s"], 0)
        self.assertEqual(doc["padded_vocab_size"], throughput.padded_vocab(PRESETS["tiny"].shape().vocab_size))
        self.assertIn("vocabulary padded", doc["modes"]["tuned-compile"])

    def test_sequences_longer_than_the_presets_get_a_longer_position_table(self) -> None:
        if torch.cuda.is_available():
            self.skipTest("a GPU is here: this run would measure")
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
            throughput.main(
                [
                    "--model",
                    "tiny",
                    "--seq",
                    str(2 * PRESETS["tiny"].max_seq_len),
                    "--micro-batches",
                    "1",
                    "--modes",
                    "eager",
                    "--warmup",
                    "1",
                    "--steps",
                    "1",
                    "--out",
                    d,
                ]
            )
            [path] = Path(d).iterdir()
            doc = json.loads(path.read_text())
        self.assertEqual(doc["model"]["max_seq_len"], 2 * PRESETS["tiny"].max_seq_len)
        self.assertGreater(doc["results"]["eager"]["achieved_tflops"], 0)

    def test_the_measured_peak_is_a_timed_matrix_product(self) -> None:
        if torch.cuda.is_available():
            self.skipTest("a GPU is here: this run would measure")
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
            throughput.main(["--measure-peak", "--out", d])
            [path] = Path(d).iterdir()
            doc = json.loads(path.read_text())
        self.assertTrue(doc["dry_run"])
        self.assertEqual(doc["format"], "fsdp-studio/matmul-peak/v1")
        self.assertAlmostEqual(doc["tflops"], 2 * doc["n"] ** 3 / doc["seconds"] / 1e12)


if __name__ == "__main__":
    unittest.main()

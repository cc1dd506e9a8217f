"""The GPU benchmark's bookkeeping (scripts/gpu/bench_runs.py) on a CPU: its FLOPs per token are
throughput.py's (so native and PyTorch MFU are computed alike), the table and the targets come out
of the numbers they are given, an Nsight Compute CSV is summed per kernel in milliseconds, and the
result files are written with device, driver, torch, commit and date."""

from __future__ import annotations

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "gpu"))

import bench_runs
import throughput
from memory_grid import PRESETS

NCU = """==PROF== Connected to process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","gpu__time_duration.sum"
"","","","","","","","usecond"
"0","4242","fsdp-train-native","127.0.0.1","void fsdp::cuda::flash_forward_kernel<__nv_bfloat16, 64>(T1 *, float *)","1","13","1,200.5"
"1","4242","fsdp-train-native","127.0.0.1","nvjet_sm90_tst_256x128","1","13","300"
"2","4242","fsdp-train-native","127.0.0.1","void fsdp::cuda::flash_forward_kernel<__nv_bfloat16, 64>(T1 *, float *)","1","13","799.5"
==PROF== Disconnected from process 4242
"""  # noqa: E501 (Nsight Compute's CSV as it prints it)


def doc_with(native: float, eager: float, compiled: float) -> dict:
    return {
        "date": "2026-11-24",
        "commit": "abc1234",
        "command": "scripts/gpu/bench.sh --all",
        "load_average": [0.1, 0.1, 0.1],
        "device": "NVIDIA H100 80GB HBM3",
        "driver": "580.159.04",
        "torch": "2.11.0+cu130",
        "matmul_peak": {"tflops": 790.0},
        "skipped": ["PyTorch compile at gpt2-124m/2048: time budget"],
        "throughput": {
            "gpt2-124m/1024": {
                "native": {"micro_batch": 48, "tokens_per_s": native, "peak_flops": 989.4e12},
                "pytorch": {
                    "micro_batch": 48,
                    "peak_flops": 989.4e12,
                    "results": {"eager": {"tokens_per_s": eager}, "compile": {"tokens_per_s": compiled}},
                },
            }
        },
    }


class BenchRunsTest(unittest.TestCase):
    def test_flops_per_token_are_throughput_pys(self) -> None:
        for model in ("gpt2-124m", "gpt2-355m"):
            for seq in (1024, 2048):
                shape = PRESETS[model].shape()
                self.assertEqual(
                    bench_runs.flops_per_token(model, seq),
                    throughput.training_flops_per_token(shape, seq),
                    (model, seq),
                )

    def test_targets_compare_native_with_compile_and_eager_at_1024(self) -> None:
        met = bench_runs.targets_met(doc_with(400_000, 250_000, 330_000))
        self.assertEqual(
            met,
            {
                "gpt2-124m/1024 native >= 1.2x compile": True,
                "gpt2-124m/1024 native >= 1.5x eager": True,
                "gpt2-124m/1024 native >= 1.1x llm.c per GPU (514,800 tokens/s)": False,
            },
        )
        met = bench_runs.targets_met(doc_with(380_000, 250_000, 330_000))
        self.assertFalse(met["gpt2-124m/1024 native >= 1.2x compile"])
        self.assertTrue(met["gpt2-124m/1024 native >= 1.5x eager"])

    def test_the_tuned_baseline_gets_its_own_row_and_target_beside_the_untuned_one(self) -> None:
        doc = doc_with(530_000, 250_000, 330_000)
        doc["throughput"]["gpt2-124m/1024"]["pytorch"]["results"]["tuned-compile"] = {"tokens_per_s": 450_000}
        met = bench_runs.targets_met(doc)
        self.assertFalse(met["gpt2-124m/1024 native >= 1.2x tuned-compile"])  # 530k < 1.2 x 450k
        self.assertTrue(met["gpt2-124m/1024 native >= 1.2x compile"])
        self.assertTrue(met["gpt2-124m/1024 native >= 1.1x llm.c per GPU (514,800 tokens/s)"])
        tuned = next(r for r in bench_runs.summary_rows(doc) if "PyTorch tuned-compile" in r)
        self.assertTrue(tuned.endswith(f"| {530_000 / 450_000:.2f}x |"), tuned)
        with tempfile.TemporaryDirectory() as d:
            bench_runs.write(doc, Path(d))
            md = (Path(d) / "gpu-2026-11-24.md").read_text()
        self.assertIn("llm.c GPT-2 124M on 8 x H100", md)

    def test_the_table_gives_mfu_and_the_fraction_of_the_measured_peak(self) -> None:
        rows = bench_runs.summary_rows(doc_with(400_000, 250_000, 330_000))
        native = next(r for r in rows if "| native |" in r)
        fpt = throughput.training_flops_per_token(PRESETS["gpt2-124m"].shape(), 1024)
        self.assertIn(f"{100 * fpt * 400_000 / 989.4e12:.1f}%", native)  # MFU against the data sheet
        self.assertIn(f"{100 * fpt * 400_000 / 1e12 / 790.0:.1f}%", native)  # of the measured 790 TFLOP/s
        eager = next(r for r in rows if "PyTorch eager" in r)
        self.assertTrue(eager.endswith("| 1.60x |"), eager)

    def test_an_ncu_csv_is_summed_per_kernel_in_milliseconds(self) -> None:
        table = bench_runs.parse_ncu_csv(NCU)
        self.assertEqual([r["calls"] for r in table], [2, 1])
        self.assertAlmostEqual(table[0]["ms"], 2.0)
        self.assertAlmostEqual(table[1]["ms"], 0.3)
        self.assertAlmostEqual(table[0]["share"], 2.0 / 2.3)

    def test_results_name_device_driver_torch_commit_and_what_was_skipped(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            bench_runs.write(doc_with(400_000, 250_000, 330_000), Path(d))
            md = (Path(d) / "gpu-2026-11-24.md").read_text()
            doc = json.loads((Path(d) / "gpu-2026-11-24.json").read_text())
        for part in (
            "NVIDIA H100 80GB HBM3",
            "580.159.04",
            "2.11.0+cu130",
            "abc1234",
            "2026-11-24",
            "790.0 TFLOP/s",
            "time budget",
        ):
            self.assertIn(part, md)
        self.assertIn("targets_met", doc)

    def test_the_budget_refuses_what_would_not_fit(self) -> None:
        b = bench_runs.Budget(30)
        self.assertTrue(b.allows(10))
        self.assertFalse(b.allows(60))


if __name__ == "__main__":
    unittest.main()

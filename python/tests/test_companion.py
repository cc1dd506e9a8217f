"""The companion against real PyTorch (CPU): log(), watch() in forward, backward and the
optimizer's update, the framework integrations' mappings and their import guards.

Run: python3 -m unittest discover -s python/tests (test/runs/python-companion.test.ts runs it).
"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch
import torch.nn as nn

import fsdp_studio
from fsdp_studio import _state
from fsdp_studio.integrations import accelerate as acc_integration
from fsdp_studio.integrations import huggingface as hf_integration
from fsdp_studio.integrations import lightning as pl_integration


class Plant(nn.Module):
    """Multiplies by NaN when told: a fault in this module's own arithmetic."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.on = False

    def forward(self, x):
        y = self.lin(x)
        return y * float("nan") if self.on else y


class NanGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


class BadBackward(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.on = False

    def forward(self, x):
        y = self.lin(x)
        return NanGrad.apply(y) if self.on else y


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 4), nn.Sequential(Plant(), nn.ReLU()), BadBackward(), nn.Linear(4, 1))


class RunFolder(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        _state._explicit_step = None
        _state._last_logged = None
        _state._forwards = 0
        for k in ("RANK", "FSDP_STUDIO_RUN_DIR"):
            os.environ.pop(k, None)
        fsdp_studio.init(self.dir.name)

    def tearDown(self):
        self.dir.cleanup()

    def events(self, type_=None):
        path = os.path.join(self.dir.name, "metrics.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            es = [json.loads(line) for line in f]
        return [e for e in es if type_ is None or e["type"] == type_]

    def train(self, m, steps, before=None):
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for step in range(1, steps + 1):
            if before:
                before(step)
            fsdp_studio.set_step(step)
            loss = m(torch.ones(2, 4)).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return opt


class TestLog(RunFolder):
    def test_scalars_of_a_step_as_given_non_finite_as_null(self):
        fsdp_studio.log(3, loss=torch.tensor(2.5), lr=1e-3, grad_norm=float("inf"))
        fsdp_studio.log(4, {"train/loss": 2.0, "eval/loss": float("nan")})
        es = self.events("scalars")
        self.assertEqual([e["step"] for e in es], [3, 4])
        self.assertEqual(es[0]["values"], {"loss": 2.5, "lr": 1e-3, "grad_norm": None})
        self.assertEqual(es[1]["values"], {"train/loss": 2.0, "eval/loss": None})
        self.assertEqual(es[0]["v"], 1)

    def test_only_rank_0_logs_scalars(self):
        os.environ["RANK"] = "1"
        try:
            fsdp_studio.log(1, loss=1.0)
        finally:
            del os.environ["RANK"]
        self.assertEqual(self.events(), [])


class TestWatch(RunFolder):
    def test_forward_nan_names_the_module_that_made_it_once_per_episode(self):
        m = model()
        w = fsdp_studio.watch(m)
        planted = m[1][0]
        self.train(m, 6, before=lambda s: setattr(planted, "on", s == 3))
        w.remove()
        anomalies = self.events("anomaly")
        # Step 3's forward made the NaN; the update spread it, so step 4 on is one episode.
        self.assertEqual(len(anomalies), 1, anomalies)
        a = anomalies[0]
        self.assertEqual((a["step"], a["kind"], a["action"]), (3, "nan", "report"))
        self.assertEqual(a["where"], {"phase": "forward", "layer": "1.0", "op": "Plant"})
        with open(os.path.join(self.dir.name, a["dump"])) as f:
            dump = json.load(f)
        self.assertEqual(dump["format"], "fsdp-studio-nan-dump")
        self.assertEqual(dump["step"], 3)
        rows = [(s["layer"], s["nonfinite"] > 0) for s in dump["stats"]]
        # Modules finish innermost first: 0, then 1.0.lin, then 1.0 — the first non-finite one.
        self.assertEqual(rows, [("0", False), ("1.0.lin", False), ("1.0", True)])

    def test_a_new_episode_is_reported_after_a_clean_step(self):
        m = model()
        fsdp_studio.watch(m)
        planted = m[1][0]
        opt = torch.optim.SGD(m.parameters(), lr=0.0)  # no update: the NaN does not spread
        for step in range(1, 7):
            planted.on = step in (2, 5)
            fsdp_studio.set_step(step)
            loss = m(torch.ones(2, 4)).sum()
            opt.zero_grad()
            if torch.isfinite(loss):
                loss.backward()
        self.assertEqual([a["step"] for a in self.events("anomaly")], [2, 5])

    def test_backward_nan_names_the_first_gradient_that_is_not_finite(self):
        m = model()
        fsdp_studio.watch(m, on_nan="raise")
        m[2].on = True
        fsdp_studio.set_step(1)
        loss = m(torch.ones(2, 4)).sum()
        with self.assertRaises(FloatingPointError) as raised:
            loss.backward()
        self.assertIn("backward", str(raised.exception))
        a = self.events("anomaly")[0]
        self.assertEqual(a["where"]["phase"], "backward")
        self.assertEqual(a["action"], "stop")
        # Backward runs last module first: the gradient into 2.lin's output is the first NaN.
        self.assertEqual(a["where"]["layer"], "2.lin")

    def test_parameters_made_non_finite_by_the_update_are_found_before_the_next_forward(self):
        m = model()
        fsdp_studio.watch(m)
        with torch.no_grad():
            m[3].weight[0, 1] = float("inf")
        fsdp_studio.set_step(7)
        m(torch.ones(2, 4))
        a = self.events("anomaly")[0]
        self.assertEqual(a["kind"], "inf")
        self.assertEqual(a["where"], {"phase": "optimizer", "layer": "3", "op": "parameter", "param": "3.weight"})

    def test_other_ranks_report_anomalies_with_their_rank_in_the_dump_name(self):
        os.environ["RANK"] = "1"
        try:
            m = model()
            fsdp_studio.watch(m)
            m[1][0].on = True
            fsdp_studio.set_step(2)
            m(torch.ones(2, 4))
            fsdp_studio.log(2, loss=1.0)
        finally:
            del os.environ["RANK"]
        a = self.events("anomaly")[0]
        self.assertEqual(a["where"]["rank"], 1)
        self.assertEqual(a["dump"], "diagnostics/step-00000002-nan-rank1.json")
        self.assertEqual(self.events("scalars"), [])

    def test_eval_forwards_are_not_checked_and_the_step_counts_training_forwards(self):
        m = model()
        fsdp_studio.watch(m)
        m[1][0].on = True
        m.eval()
        with torch.no_grad():
            m(torch.ones(1, 4))
        self.assertEqual(self.events("anomaly"), [])
        m.train()
        m(torch.ones(1, 4))
        m(torch.ones(1, 4))
        self.assertEqual(self.events("anomaly")[0]["step"], 1)

    def test_token_ids_of_the_batch_go_into_the_dump(self):
        class Lm(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(10, 4)
                self.plant = Plant()

            def forward(self, ids):
                return self.plant(self.emb(ids))

        lm = Lm()
        fsdp_studio.watch(lm)
        lm.plant.on = True
        fsdp_studio.set_step(1)
        lm(torch.tensor([[1, 2, 3], [4, 5, 6]]))
        with open(os.path.join(self.dir.name, self.events("anomaly")[0]["dump"])) as f:
            self.assertEqual(json.load(f)["tokens"], [[1, 2, 3], [4, 5, 6]])


class TestIntegrations(RunFolder):
    def test_hugging_face_logs_as_its_tensorboard_callback_names_them(self):
        class State:
            is_world_process_zero = True
            global_step = 40

        hf_integration.on_log(
            State(),
            {
                "loss": 1.5,
                "learning_rate": 2e-5,
                "eval_loss": 1.7,
                "epoch": 0.5,
                "total_flos": 3,
                "note": "x",
                "flag": True,
            },
        )
        e = self.events("scalars")[0]
        self.assertEqual(e["step"], 40)
        self.assertEqual(
            e["values"],
            {
                "train/loss": 1.5,
                "train/learning_rate": 2e-5,
                "eval/loss": 1.7,
                "train/epoch": 0.5,
                "train/total_flos": 3,
            },
        )
        State.is_world_process_zero = False
        hf_integration.on_log(State(), {"loss": 1.0})
        self.assertEqual(len(self.events("scalars")), 1)

    def test_lightning_and_accelerate_log_numbers_at_their_step(self):
        pl_integration.log_metrics({"train_loss": torch.tensor(0.5), "epoch": 1}, 12)
        acc_integration.log_values({"train/loss": 0.25, "name": "x", "ok": True}, 13)
        es = self.events("scalars")
        self.assertEqual(
            [(e["step"], e["values"]) for e in es],
            [(12, {"train_loss": 0.5, "epoch": 1.0}), (13, {"train/loss": 0.25})],
        )

    def test_the_classes_need_their_framework_and_say_so(self):
        for module, name, framework in (
            (hf_integration, "FsdpStudioCallback", "transformers"),
            (pl_integration, "FsdpStudioLogger", "lightning"),
            (acc_integration, "FsdpStudioTracker", "accelerate"),
        ):
            try:
                __import__(framework)
                have = True
            except ImportError:
                have = False
            if have:
                self.assertTrue(callable(getattr(module, name)))
            else:
                with self.assertRaisesRegex(ImportError, f"needs {framework}"):
                    getattr(module, name)


if __name__ == "__main__":
    unittest.main()

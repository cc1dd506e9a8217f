"""The integrations inside the real frameworks: a Hugging Face Trainer, a Lightning Trainer and an
accelerate Accelerator each train (or log) for a few steps on the CPU with the companion's class
plugged in the documented way, and the run folder must hold what the framework logged, at its
steps. Each test fails when the framework's callback API changes under the integration (a hook
renamed, no longer called, or called with other arguments).

The frameworks are optional for the companion itself. Where one is not installed its test is
skipped, unless FSDP_STUDIO_FRAMEWORKS=required (set by test/runs/python-companion.test.ts, which runs
these with the project's .venv): then a missing framework is a failure.

Run: python -m unittest discover -s python/tests
"""

import importlib
import json
import os
import sys
import tempfile
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import fsdp_studio
from fsdp_studio import _state


def framework(name):
    """Imports a framework, or skips the test (fails it when frameworks are required)."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        if os.environ.get("FSDP_STUDIO_FRAMEWORKS") == "required":
            raise AssertionError(
                f"{name} is required here (FSDP_STUDIO_FRAMEWORKS=required) but does not import: {e}"
            ) from e
        raise unittest.SkipTest(f"{name} is not installed") from e


class RunFolder(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        _state._explicit_step = None
        _state._last_logged = None
        _state._forwards = 0
        for k in ("RANK", "FSDP_STUDIO_RUN_DIR", "WORLD_SIZE", "LOCAL_RANK"):
            os.environ.pop(k, None)
        fsdp_studio.init(self.dir.name)

    def tearDown(self):
        self.dir.cleanup()

    def scalars(self):
        path = os.path.join(self.dir.name, "metrics.jsonl")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [e for e in map(json.loads, f) if e["type"] == "scalars"]


class TestHuggingFaceTrainer(RunFolder):
    def test_a_trainer_with_the_callback_logs_its_loss_at_its_steps(self):
        transformers = framework("transformers")
        torch = framework("torch")
        from fsdp_studio.integrations.huggingface import FsdpStudioCallback

        torch.manual_seed(0)
        config = transformers.GPT2Config(
            vocab_size=32, n_positions=16, n_embd=16, n_layer=1, n_head=2, bos_token_id=None, eos_token_id=None
        )
        model = transformers.GPT2LMHeadModel(config)
        ids = torch.randint(0, 32, (8, 16), generator=torch.Generator().manual_seed(1))
        data = [{"input_ids": row, "labels": row} for row in ids]
        args = transformers.TrainingArguments(
            output_dir=os.path.join(self.dir.name, "out"),
            max_steps=4,
            per_device_train_batch_size=2,
            logging_steps=1,
            learning_rate=1e-3,
            report_to=[],
            save_strategy="no",
            use_cpu=True,
            disable_tqdm=True,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer = transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=[FsdpStudioCallback()])
            trainer.train()
        events = [e for e in self.scalars() if "train/loss" in e["values"]]
        self.assertEqual([e["step"] for e in events], [1, 2, 3, 4], self.scalars())
        history = [h for h in trainer.state.log_history if "loss" in h]
        for e, h in zip(events, history):
            self.assertAlmostEqual(e["values"]["train/loss"], float(h["loss"]), places=5)
            self.assertIn("train/learning_rate", e["values"])


class TestLightningTrainer(RunFolder):
    def test_a_trainer_with_the_logger_logs_what_the_module_logs_at_its_steps(self):
        framework("lightning")
        torch = framework("torch")
        import lightning.pytorch as pl

        from fsdp_studio.integrations.lightning import FsdpStudioLogger

        class Regression(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 1)

            def training_step(self, batch, _index):
                x, y = batch
                loss = torch.nn.functional.mse_loss(self.lin(x), y)
                self.log("train_loss", loss)
                return loss

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)

        torch.manual_seed(0)
        x = torch.randn(16, 4)
        data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=4)
        logger = FsdpStudioLogger()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer = pl.Trainer(
                max_steps=4,
                logger=[logger],
                log_every_n_steps=1,
                accelerator="cpu",
                devices=1,
                enable_checkpointing=False,
                enable_progress_bar=False,
                enable_model_summary=False,
                default_root_dir=self.dir.name,
            )
            trainer.fit(Regression(), data)
        events = [e for e in self.scalars() if "train_loss" in e["values"]]
        # Lightning hands its loggers the global step of the batch, from 0.
        self.assertEqual([e["step"] for e in events], [0, 1, 2, 3], self.scalars())
        self.assertTrue(all(isinstance(e["values"]["train_loss"], float) for e in events))
        self.assertIn("epoch", events[0]["values"])


class TestAccelerateTracker(RunFolder):
    def test_an_accelerator_logging_with_the_tracker_logs_numbers_at_the_step_given(self):
        accelerate = framework("accelerate")
        from fsdp_studio.integrations.accelerate import FsdpStudioTracker

        accelerator = accelerate.Accelerator(cpu=True, log_with=[FsdpStudioTracker()])
        accelerator.init_trackers("fsdp-studio-test", config={"lr": 0.1})
        accelerator.log({"train/loss": 0.5, "note": "text is not a scalar"}, step=3)
        accelerator.log({"train/loss": 0.25}, step=4)
        accelerator.end_training()
        self.assertEqual(
            [(e["step"], e["values"]) for e in self.scalars()], [(3, {"train/loss": 0.5}), (4, {"train/loss": 0.25})]
        )
        self.assertEqual(accelerator.get_tracker("fsdp_studio").name, "fsdp_studio")


if __name__ == "__main__":
    unittest.main()

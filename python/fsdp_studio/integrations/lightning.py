"""Lightning's metrics in FSDP Studio: Trainer(..., logger=[FsdpStudioLogger(), ...]).

A Lightning logger: every self.log(...) value Lightning hands its loggers, at Lightning's step.
Lightning calls loggers on rank 0 only.
"""

from typing import Any

from .. import log
from . import require


def log_metrics(metrics, step):
    """What the logger does with Lightning's log_metrics call ("epoch" is a value, not a step)."""
    values = {k: v for k, v in (metrics or {}).items() if not isinstance(v, bool)}
    if values:
        log(int(step or 0), values)


def __getattr__(name):
    # The class is made on first use, so the function above works (and is tested) without Lightning.
    if name != "FsdpStudioLogger":
        raise AttributeError(name)
    try:
        loggers = require("lightning.pytorch.loggers", "lightning")
    except ImportError as first:
        try:
            loggers = require("pytorch_lightning.loggers", "lightning")
        except ImportError:
            raise first from None

    # Any: the base comes from a module imported at run time, which mypy cannot follow.
    base: Any = loggers.Logger

    class FsdpStudioLogger(base):
        @property
        def name(self):
            return "fsdp_studio"

        @property
        def version(self):
            return 0

        def log_hyperparams(self, params, *args, **kwargs):
            pass

        def log_metrics(self, metrics, step=None):
            log_metrics(metrics, step)

    globals()[name] = FsdpStudioLogger
    return FsdpStudioLogger

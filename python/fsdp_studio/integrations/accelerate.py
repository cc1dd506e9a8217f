"""accelerate's tracking API into FSDP Studio: Accelerator(log_with=[FsdpStudioTracker()]), then
accelerator.log({"train/loss": loss}, step=step) as usual. Logs from the main process only.
"""

from typing import Any

from .. import log
from . import require


def log_values(values, step):
    """What the tracker does with accelerator.log(values, step=...): numbers only."""
    numbers_only = {
        k: v
        for k, v in (values or {}).items()
        if (isinstance(v, (int, float)) and not isinstance(v, bool)) or hasattr(v, "item")
    }
    if numbers_only:
        log(int(step or 0), numbers_only)


def __getattr__(name):
    # The class is made on first use, so the function above works (and is tested) without accelerate.
    if name != "FsdpStudioTracker":
        raise AttributeError(name)
    # Any: the base comes from a module imported at run time, which mypy cannot follow.
    base: Any = require("accelerate.tracking", "accelerate").GeneralTracker

    class FsdpStudioTracker(base):
        name = "fsdp_studio"
        requires_logging_directory = False
        main_process_only = True

        def __init__(self, run_name="fsdp_studio"):
            super().__init__()
            self.run_name = run_name

        @property
        def tracker(self):
            return self

        def store_init_configuration(self, values):
            pass

        def log(self, values, step=None, **kwargs):
            log_values(values, step)

    globals()[name] = FsdpStudioTracker
    return FsdpStudioTracker

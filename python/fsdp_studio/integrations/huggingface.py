"""The Hugging Face Trainer's logs in FSDP Studio: Trainer(..., callbacks=[FsdpStudioCallback()]).

Tags as the Trainer's own TensorBoard callback names them (loss → train/loss, eval_loss →
eval/loss), at the Trainer's global step; only the main process logs.
"""

import numbers
from typing import Any

from .. import log
from . import require


def scalars_of_logs(logs):
    """The Trainer's `logs` dict as tags: eval_*/test_* under eval/ and test/, the rest under train/."""
    out = {}
    for key, value in (logs or {}).items():
        if isinstance(value, bool) or (not isinstance(value, numbers.Number) and not hasattr(value, "item")):
            continue
        for prefix in ("eval", "test"):
            if key.startswith(prefix + "_"):
                out[f"{prefix}/{key[len(prefix) + 1 :]}"] = value
                break
        else:
            out[key if "/" in key else f"train/{key}"] = value
    return out


def on_log(state, logs):
    """What the callback does on the Trainer's on_log event."""
    if getattr(state, "is_world_process_zero", True):
        values = scalars_of_logs(logs)
        if values:
            log(int(getattr(state, "global_step", 0)), values)


def __getattr__(name):
    # The class is made on first use, so the functions above work (and are tested) without transformers.
    if name != "FsdpStudioCallback":
        raise AttributeError(name)
    # Any: the base comes from a module imported at run time, which mypy cannot follow.
    base: Any = require("transformers", "huggingface").TrainerCallback

    class FsdpStudioCallback(base):
        def on_log(self, args, state, control, logs=None, **kwargs):
            on_log(state, logs)

    globals()[name] = FsdpStudioCallback
    return FsdpStudioCallback

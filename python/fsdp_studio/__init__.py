"""FSDP Studio's companion for your own PyTorch training script.

    import fsdp_studio
    fsdp_studio.watch(model)                  # the first module and phase where a NaN/Inf appears
    fsdp_studio.log(step, loss=loss, lr=lr)   # live curves in the editor's dashboard

Scripts launched from FSDP Studio log to their run folder by themselves; elsewhere call
fsdp_studio.init(run_dir=...). Rank 0 logs scalars; every rank reports anomalies. No dependency
beyond PyTorch; the Hugging Face Trainer, Lightning and accelerate integrations are in
fsdp_studio.integrations and import their framework only when used.
"""

from . import _state
from ._events import finite_or_none, rank
from ._state import current_step, init, set_step

__all__ = ["current_step", "init", "log", "set_step", "watch"]
__version__ = "0.1.0"


def log(step, scalars=None, **named):
    """Logs scalars of one optimizer step: log(step, loss=..., lr=...) or log(step, {"train/loss": ...}).

    Values may be Python numbers, NumPy scalars or one-element tensors; non-finite ones are logged
    as not finite. Only rank 0 writes; on other ranks this does nothing.
    """
    step = int(step)
    _state.logged(step)
    if rank() != 0:
        return
    values = {}
    for source in (scalars or {}, named):
        for tag, value in source.items():
            if hasattr(value, "item"):
                value = value.item()
            values[str(tag)] = finite_or_none(value)
    target = _state.event_log()
    if target is not None and values:
        target.write({"type": "scalars", "step": step, "values": values})


def watch(model, on_nan="report", every=1, dump=True):
    """Finds the first module (forward) or gradient (backward) where a value became NaN or Inf.

    Writes the anomaly event and a diagnostic dump the NaN diagnostics view reads. on_nan="raise"
    raises FloatingPointError at the first one; every=N checks every Nth training step. Returns
    the watch; .remove() takes the hooks off.
    """
    from .nan_watch import NanWatch

    return NanWatch(model, on_nan=on_nan, every=every, dump=dump)

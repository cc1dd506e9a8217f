"""Locates the first NaN or Inf of a training step in a person's own model, by hooks.

Forward: a hook on every module checks its output; modules finish their forward innermost first,
so the first module whose output is not finite is where the value appeared (its inputs were
finite, or the dump shows they were not). Backward: hooks on module outputs' gradients and on
parameters' gradients fire in the order backward computes them; the first one that is not finite
is reported. Before each training forward the parameters are checked: a value that appeared in
the optimizer's update (on this rank, or gradients averaged in from another rank) is found there.

A NaN spreads to everything after it, so one anomaly is reported per episode: the next report comes
only after a checked step that was finite throughout. The event and the dump are the native
runtime's formats (native/FORMATS.md, "NaN diagnostic dumps"), so the editor's NaN diagnostics
view names the module. Every rank reports its own anomalies; dumps of ranks other than 0 carry the
rank in their name.
"""

import json
import os

import torch

from . import _state
from ._events import finite_or_none, rank

TOKENS_KEPT = (8, 512)


class NanWatch:
    def __init__(self, model, on_nan="report", every=1, dump=True):
        if on_nan not in ("report", "raise"):
            raise ValueError(f"watch(on_nan={on_nan!r}): expected 'report' or 'raise'")
        self.model = model
        self.on_nan = on_nan
        self.every = max(1, int(every))
        self.dump = dump
        self.step = None
        self.checking = False
        self.clean = True
        self.episode_open = False
        self.outputs = []
        self.grads = []
        self.tokens = []
        self.handles = [model.register_forward_pre_hook(self._forward_begins)]
        for name, module in model.named_modules():
            self.handles.append(
                module.register_forward_hook(self._forward_hook(name or "model", type(module).__name__))
            )
        self.handles.append(model.register_forward_hook(self._forward_ends))
        self.owner = {}
        for mname, module in model.named_modules():
            for p in module.parameters(recurse=False):
                self.owner[id(p)] = mname or "model"
        for name, p in model.named_parameters():
            if p.requires_grad:
                self.handles.append(p.register_hook(self._param_grad_hook(name, self.owner.get(id(p), "model"))))

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    # ---- hooks ----

    def _forward_begins(self, module, inputs):
        if not module.training:
            self.checking = False
            return
        _state.counted_forward()
        step = _state.current_step()
        if step != self.step:
            # The step before ended: finite throughout closes the episode.
            if self.checking and self.clean:
                self.episode_open = False
            self.step = step
            self.clean = True
            self.grads = []
        self.checking = step % self.every == 0
        self.outputs = []
        if not self.checking:
            return
        self.tokens = _token_rows(inputs)
        for name, p in self.model.named_parameters():
            if not bool(torch.isfinite(p.detach()).all()):
                self._found(
                    "optimizer",
                    self.owner.get(id(p), "model"),
                    "parameter",
                    [("optimizer", "param", self.owner.get(id(p), "model"), "parameter", name, p.detach())],
                    param=name,
                )
                break

    def _forward_hook(self, name, op):
        def hook(module, inputs, output):
            if not self.checking:
                return
            tensors = _float_tensors(output)
            if self.dump:
                self.outputs.append(("forward", "activation", name, op, f"{name}.out", [t.detach() for t in tensors]))
            for t in tensors:
                if t.requires_grad:
                    t.register_hook(self._output_grad_hook(name, op))
            if all(_finite(t) for t in tensors):
                return
            rows = [(p, k, layer, o, n, _cat(ts)) for p, k, layer, o, n, ts in self.outputs]
            if not self.dump:
                rows = [("forward", "activation", name, op, f"{name}.out", _cat(tensors))]
            inputs_bad = [t for t in _float_tensors(inputs) if not _finite(t)]
            if inputs_bad:
                rows.append(("forward", "input", name, op, f"{name}.in", _cat(inputs_bad)))
            self._found("forward", name, op, rows)

        return hook

    def _forward_ends(self, module, inputs, output):
        self.outputs = []  # the references were for a dump of this forward only

    def _output_grad_hook(self, name, op):
        def hook(grad):
            if self.checking:
                self._check_grad(grad, name, op, f"{name}.out.grad")

        return hook

    def _param_grad_hook(self, pname, owner):
        def hook(grad):
            if self.checking:
                self._check_grad(grad, owner, "grad", pname, param=pname)

        return hook

    def _check_grad(self, grad, layer, op, name, param=None):
        kind = "param_grad" if param else "grad"
        row = ("backward", kind, layer, op, name, grad.detach())
        # Parameter gradients are kept anyway (.grad); activation gradients are not held past their use.
        if self.dump and param:
            self.grads.append(row)
        if not _finite(grad):
            rows = (self.grads if param else [*self.grads, row]) if self.dump else [row]
            self._found("backward", layer, op, rows, param=param)

    # ---- reporting ----

    def _found(self, phase, layer, op, rows, param=None):
        self.clean = False
        if self.episode_open:
            return
        self.episode_open = True
        step = self.step if self.step is not None else _state.current_step()
        r = rank()
        where = {"phase": phase, "layer": layer, "op": op}
        if param:
            where["param"] = param
        if "RANK" in os.environ or r:
            where["rank"] = r
        kind = "nan" if any(_has_nan(t) for *_, t in rows) else "inf"
        action = "stop" if self.on_nan == "raise" else "report"
        target = _state.event_log()
        if target is not None:
            dump = self._write_dump(target.run_dir, step, r, where, rows) if self.dump else None
            target.write(
                {"type": "anomaly", "step": step, "kind": kind, "where": where, "action": action, "dump": dump}
            )
        message = (
            f"{'NaN' if kind == 'nan' else 'Inf'} in {phase} of {layer} ({op}{', ' + param if param else ''})"
            f" at step {step}, rank {r}"
        )
        if target is None:
            import sys

            print(f"fsdp_studio: {message}", file=sys.stderr)
        if self.on_nan == "raise":
            raise FloatingPointError(message)

    def _write_dump(self, run_dir, step, r, where, rows):
        rel = f"diagnostics/step-{step:08d}-nan{f'-rank{r}' if r else ''}.json"
        stats = [_stat(phase, kind, layer, op, name, t) for phase, kind, layer, op, name, t in rows]
        doc = {
            "format": "fsdp-studio-nan-dump",
            "version": 1,
            "step": step,
            "where": where,
            "tokens": self.tokens,
            "stats": stats,
        }
        path = os.path.join(run_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(doc, f, allow_nan=False)
        os.replace(tmp, path)
        return rel


def _float_tensors(value):
    """The floating-point tensors in a module's output (a tensor, or tuples, lists, dicts of them)."""
    out = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, torch.Tensor):
            if v.is_floating_point() and v.numel() > 0:
                out.append(v)
        elif isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
    return out


def _finite(t):
    return bool(torch.isfinite(t.detach()).all())


def _has_nan(t):
    return bool(torch.isnan(t).any())


def _cat(tensors):
    flat = [t.detach().reshape(-1).float() for t in tensors]
    return torch.cat(flat) if len(flat) > 1 else (flat[0] if flat else torch.zeros(0))


def _stat(phase, kind, layer, op, name, t):
    t = t.detach().float().reshape(-1)
    ok = torch.isfinite(t)
    finite = t[ok]
    n = int(finite.numel())
    return {
        "phase": phase,
        "kind": kind,
        "layer": layer,
        "op": op,
        "name": name,
        "mean": finite_or_none(finite.mean()) if n else None,
        "std": finite_or_none(finite.std(unbiased=False)) if n else None,
        "max_abs": finite_or_none(finite.abs().max()) if n else None,
        "nonfinite": int(t.numel() - n),
    }


def _token_rows(inputs):
    """The token ids of the batch, when the model's first input is integer ids: the dump's batch."""
    first = inputs[0] if isinstance(inputs, (tuple, list)) and inputs else inputs
    if not isinstance(first, torch.Tensor) or first.is_floating_point() or first.dim() == 0:
        return []
    rows = first.detach().reshape(first.shape[0], -1) if first.dim() > 1 else first.detach().reshape(1, -1)
    return rows[: TOKENS_KEPT[0], : TOKENS_KEPT[1]].cpu().tolist()

"""The torchtitan 0.3 configurations a Python file or module defines, as JSON for the memory estimate.

    python -m fsdp_studio.torchtitan_configs FILE_OR_MODULE [FUNCTION]

torchtitan 0.3 configures a run with functions returning ``Trainer.Config`` (``--module`` names the
module, ``--config`` the function: torchtitan/config/manager.py). This imports the file as the person's
module (a file inside a package by its dotted name, so its relative imports work), calls each such
function (or only FUNCTION) and prints one JSON object on stdout: per function the fields the N-D
estimator reads (the model's name, flavour and shape, the parallelism degrees, batch, sequence,
dtypes, activation checkpointing, float8 and compile), or the exception and where it was raised.

It runs torchtitan's code and the person's, so the editor runs it only in a trusted workspace. It
reads only the stored fields of the returned dataclass, never builds a model. Self-contained (run
by path too): the editor runs it as a file with the workspace's own Python.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import sys
import traceback
import types
from pathlib import Path
from typing import Any, Callable

# torchtitan's modules of Triton kernels, imported by its model code at import time
# (torchtitan/models/common/token_dispatcher.py → minimal_async_ep.kernels). The CPU build of PyTorch
# has no Triton, so without it they stand in as modules whose every name raises when called: reading
# a config never launches a kernel. Triton itself is not faked (PyTorch probes for it).
_TRITON_KERNEL_MODULES = frozenset(
    {
        "torchtitan.distributed.minimal_async_ep.kernels",
        "torchtitan.overrides.fused_mla",
        "torchtitan.overrides.fused_swiglu",
    }
)
# torchtitan's short --module names are packages under these (ConfigManager._load_config).
_SHORT_MODULE_PREFIXES = ("torchtitan.models", "torchtitan.experiments", "torchtitan.experiments.rl.examples")
# A walk of the model's config stops here: enough for the converters' marks, bounded on odd graphs.
_MAX_WALK = 20000


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2 or argv[0] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    # What the imported code prints (torchtitan warns on stdout) goes to stderr: stdout is the JSON.
    with contextlib.redirect_stdout(sys.stderr):
        found = probe(argv[0], argv[1] if len(argv) > 1 else None)
    print(json.dumps(found))
    return 0


def probe(target: str, only: str | None = None) -> dict[str, Any]:
    """What ``target`` (a .py file or a module name) defines, as the JSON printed."""
    out: dict[str, Any] = {"target": target, "python": sys.executable}
    no_triton = importlib.util.find_spec("triton") is None
    if no_triton:
        sys.meta_path.insert(0, _KernelStandIns())
    try:
        trainer = importlib.import_module("torchtitan.trainer")
        out["torchtitan"] = _version()
        if no_triton:
            out["notes"] = ["triton is not installed: torchtitan's Triton kernel modules were stood in for (none runs)"]
    except Exception as e:  # ImportError, or torchtitan failing in its own import
        out["error"] = f"torchtitan cannot be imported in {sys.executable}: {type(e).__name__}: {e}"
        return out
    config_class = trainer.Trainer.Config
    try:
        module = _import_target(target)
    except Exception as e:
        out["error"] = f"{target}: cannot be imported: {_where(e)}"
        return out
    out["module"] = module.__name__
    configs = []
    for name, fn in _config_functions(module, config_class, only):
        configs.append(_call(name, fn, config_class))
    if only is not None and not configs:
        out["error"] = f"{target}: no function {only}"
    out["configs"] = configs
    return out


class _KernelStandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(fullname, self) if fullname in _TRITON_KERNEL_MODULES else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _NeedsTriton(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _NeedsTriton(types.ModuleType):
    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)

        def needs_triton(*args: object, **kwargs: object) -> Any:
            raise RuntimeError(f"{self.__name__}.{name} needs triton, which is not installed")

        return needs_triton


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torchtitan")
    except PackageNotFoundError:
        return "unknown"


def _import_target(target: str) -> types.ModuleType:
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        return _import_file(path.resolve())
    # A module name, as --module takes it: a short name under torchtitan's packages, else a dotted
    # path tried with .config_registry first.
    candidates = [f"{p}.{target}.config_registry" for p in _SHORT_MODULE_PREFIXES] if "." not in target else []
    candidates += [f"{target}.config_registry", target]
    last: Exception | None = None
    for name in candidates:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            # Only a missing candidate moves on; a module that exists but fails to import is the answer.
            if e.name is None or not name.startswith(e.name):
                raise
            last = e
    raise ModuleNotFoundError(f"no module {target} (tried {', '.join(candidates)})") from last


def _import_file(path: Path) -> types.ModuleType:
    # A file in a package is imported by its dotted name from the package's root, so that its
    # relative imports (torchtitan's config_registry.py: `from . import model_registry`) resolve.
    parts = [path.stem]
    root = path.parent
    while (root / "__init__.py").is_file():
        parts.insert(0, root.name)
        root = root.parent
    sys.path.insert(0, str(root))
    name = ".".join(parts)
    if len(parts) > 1:
        return importlib.import_module(name)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _config_functions(module: types.ModuleType, config_class: type, only: str | None) -> list[tuple[str, Any]]:
    """The module's own functions annotated to return Trainer.Config (or FUNCTION, whatever it says)."""
    found = []
    for name, fn in vars(module).items():
        if not inspect.isfunction(fn) or (only is not None and name != only):
            continue
        if only is None and (fn.__module__ != module.__name__ or not _returns_config(fn, config_class)):
            continue
        found.append((name, fn))
    return sorted(found, key=lambda nf: nf[1].__code__.co_firstlineno)


def _returns_config(fn: Any, config_class: type) -> bool:
    returns = inspect.signature(fn).return_annotation
    if returns is config_class or (isinstance(returns, type) and issubclass(returns, config_class)):
        return True
    # Annotations left as strings (`from __future__ import annotations`).
    return isinstance(returns, str) and returns.replace(" ", "").endswith("Trainer.Config")


def _call(name: str, fn: Any, config_class: type) -> dict[str, Any]:
    entry: dict[str, Any] = {"function": name, "line": fn.__code__.co_firstlineno}
    try:
        config = fn()
    except Exception as e:
        entry["error"] = _where(e)
        return entry
    if not isinstance(config, config_class):
        entry["error"] = f"{name}() returned {type(config).__qualname__}, not Trainer.Config"
        return entry
    try:
        entry["config"] = _fields(config)
    except Exception as e:
        entry["error"] = f"reading what {name}() returned: {_where(e)}"
    return entry


def _where(e: BaseException) -> str:
    """The exception and the innermost frame of the person's or torchtitan's code that raised it."""
    frames = traceback.extract_tb(e.__traceback__)
    said = f"{type(e).__name__}: {e}"
    return f"{said} (at {frames[-1].filename}:{frames[-1].lineno})" if frames else said


def _fields(c: Any) -> dict[str, Any]:
    p, t = c.parallelism, c.training
    spec = c.model_spec
    model = getattr(spec, "model", None)
    kinds = _class_names(model)
    return {
        "model": {
            "name": getattr(spec, "name", None),
            "flavor": getattr(spec, "flavor", None),
            "shape": _shape(model),
        },
        "parallelism": {
            "dp_replicate": p.data_parallel_replicate_degree,
            "dp_shard": p.data_parallel_shard_degree,
            "tp": p.tensor_parallel_degree,
            "cp": p.context_parallel_degree,
            "pp": p.pipeline_parallel_degree,
            "ep": p.expert_parallel_degree,
            "sequence_parallel": getattr(p, "enable_sequence_parallel", True),
            "pp_schedule": p.pipeline_parallel_schedule,
            "pp_microbatch_size": p.pipeline_parallel_microbatch_size,
            "pp_layers_per_stage": p.pipeline_parallel_layers_per_stage,
            "fsdp_reshard_after_forward": p.fsdp_reshard_after_forward,
        },
        "training": {
            "local_batch_size": t.local_batch_size,
            "global_batch_size": t.global_batch_size,
            "seq_len": t.seq_len,
            "dtype": t.dtype,
            "mixed_precision_param": t.mixed_precision_param,
            "mixed_precision_reduce": t.mixed_precision_reduce,
            "enable_cpu_offload": t.enable_cpu_offload,
        },
        "activation_checkpoint": _checkpointing(c.activation_checkpoint),
        "compile": {"enable": c.compile.enable, "components": list(c.compile.components)},
        # The converters rewrite the model's Linear configs (Float8LinearConverter and kin).
        "float8": any(k.startswith(("Float8", "MXFP8")) for k in kinds),
        "nvfp4": any(k.startswith("NVFP4") for k in kinds),
    }


def _checkpointing(ac: Any) -> str:
    if ac is None:
        return "none"
    owner = type(ac).__qualname__.split(".")[0]  # SelectiveAC.Config → SelectiveAC
    return {"SelectiveAC": "selective", "FullAC": "full", "MemoryBudgetAC": "memory_budget"}.get(owner, owner)


def _shape(model: Any) -> dict[str, Any] | None:
    """A decoder's widths as the estimator's N-D model takes them, read from its config; None if not one."""
    layers = getattr(model, "layers", None)
    dim, vocab = getattr(model, "dim", None), getattr(model, "vocab_size", None)
    if not isinstance(layers, list) or not layers or not isinstance(dim, int) or not isinstance(vocab, int):
        return None
    first = layers[0]
    attention = getattr(first, "attention", None)
    qkv = getattr(attention, "qkv_linear", None)
    heads = getattr(qkv, "n_heads", None) or getattr(attention, "n_heads", None)
    kv_heads = getattr(qkv, "n_kv_heads", None) or getattr(attention, "n_kv_heads", None) or heads
    head_dim = getattr(qkv, "head_dim", None) or getattr(attention, "head_dim", None)
    w1 = getattr(getattr(first, "feed_forward", None), "w1", None)
    moe = any(getattr(layer, "moe", None) is not None for layer in layers)
    lm_head, embeddings = getattr(model, "lm_head", None), getattr(model, "tok_embeddings", None)
    return {
        "dim": dim,
        "vocab_size": vocab,
        "n_layers": len(layers),
        "n_heads": heads,
        "n_kv_heads": kv_heads,
        "head_dim": head_dim,
        "ffn_hidden": getattr(w1, "out_features", None),
        "qk_norm": getattr(attention, "qk_norm", None) is not None,
        "moe": moe,
        # Decoder.Config.enable_weight_tying (Qwen3's small flavours); a model without lm_head ties too.
        "tied": bool(getattr(model, "enable_weight_tying", False)) or (lm_head is None and embeddings is not None),
    }


def _class_names(root: Any) -> set[str]:
    """The class names of every dataclass reachable from root (fields, lists, dicts)."""
    seen: set[int] = set()
    names: set[str] = set()
    todo = [root]
    while todo and len(seen) < _MAX_WALK:
        o = todo.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            names.add(type(o).__qualname__)
            todo.extend(getattr(o, f.name, None) for f in dataclasses.fields(o))
        elif isinstance(o, (list, tuple)):
            todo.extend(o)
        elif isinstance(o, dict):
            todo.extend(o.values())
    return names


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

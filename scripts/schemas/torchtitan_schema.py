"""JSON Schema of torchtitan's TOML job config, generated from torchtitan's own dataclasses.

torchtitan reads a TOML file into `JobConfig` (torchtitan/config/job_config.py) with
`ConfigManager._dict_to_dataclass`, which refuses unknown keys at every level. The last release
that reads TOML is 0.2.2 (0.3.0 replaced the TOML files with Python config registries), so the
schema is generated from that release's `job_config.py`.

The source is read with Python's `ast`, not imported: importing it needs torch, and the field
docstrings (what hover shows) exist only in the source. The file comes from the torchtitan installed
in this interpreter's environment if its version is the pinned one, else from the release's wheel
(`pip download torchtitan==0.2.2 --no-deps`).

    python scripts/schemas/torchtitan_schema.py            # write core/schemas/torchtitan-config.schema.json
    python scripts/schemas/torchtitan_schema.py --check    # exit 1 if the committed schema differs
    python scripts/schemas/torchtitan_schema.py --source PATH/job_config.py --version 0.2.2
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile

from committed_file import write_or_check  # beside this script

RELEASE = "0.2.2"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "core", "schemas", "torchtitan-config.schema.json")

# What torchtitan enforces outside the dataclasses, with where: ranges the schema states too.
CONSTRAINTS: dict[tuple[str, ...], dict[str, int]] = {
    ("parallelism", "data_parallel_replicate_degree"): {"minimum": 1},
    ("parallelism", "tensor_parallel_degree"): {"minimum": 1},
    ("parallelism", "pipeline_parallel_degree"): {"minimum": 1},
    ("parallelism", "context_parallel_degree"): {"minimum": 1},
    ("parallelism", "expert_parallel_degree"): {"minimum": 1},
    ("parallelism", "expert_tensor_parallel_degree"): {"minimum": 1},
    ("parallelism", "data_parallel_shard_degree"): {"minimum": -1},
    ("parallelism", "pipeline_parallel_microbatch_size"): {"minimum": 1},
    ("training", "local_batch_size"): {"minimum": 1},
    ("training", "seq_len"): {"minimum": 1},
    ("training", "steps"): {"minimum": 1},
    ("activation_checkpoint", "memory_budget"): {"minimum": 0, "maximum": 1},
}
CONSTRAINT_SOURCE = (
    "torchtitan/distributed/parallel_dims.py: ParallelDims._validate (degrees >= 1, dp_shard -1 or >= 1); "
    "torchtitan/distributed/pipeline_parallel.py (microbatch size); torchtitan/train.py (batch sizes)"
)


def find_source(version: str) -> tuple[str, str]:
    """job_config.py's text and where it came from."""
    try:
        installed = importlib.metadata.version("torchtitan")
    except importlib.metadata.PackageNotFoundError:
        installed = None
    if installed == version:
        # find_spec of the top-level package locates it without running its __init__ (which imports torch).
        spec = importlib.util.find_spec("torchtitan")
        if spec is None or spec.origin is None:
            raise SystemExit(
                f"torchtitan {version} is installed but its package is not found (importlib.util.find_spec)"
            )
        package = os.path.dirname(spec.origin)
        with open(os.path.join(package, "config", "job_config.py"), encoding="utf-8") as f:
            return f.read(), f"torchtitan {version} installed at {package}"
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run(
            [sys.executable, "-m", "pip", "download", f"torchtitan=={version}", "--no-deps", "--quiet", "-d", tmp],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            sys.exit(f"torchtitan {version} is not installed here and pip could not download it:\n{r.stderr}")
        wheel = next(os.path.join(tmp, n) for n in os.listdir(tmp) if n.endswith(".whl"))
        with zipfile.ZipFile(wheel) as z:
            return z.read("torchtitan/config/job_config.py").decode("utf-8"), f"torchtitan {version} wheel from PyPI"


def docstring_after(body: list[ast.stmt], i: int) -> str | None:
    if i + 1 < len(body):
        nxt = body[i + 1]
        if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
            return clean_doc(nxt.value.value)
    return None


def clean_doc(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines()]
    # Paragraphs kept, lines within one joined.
    paragraphs, current = [], []
    for line in lines:
        if line:
            current.append(line)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n\n".join(paragraphs)


def literal_value(node: ast.expr) -> object:
    """One value of a Literal[...] annotation: a constant, or a refusal naming what torchtitan wrote instead."""
    if not isinstance(node, ast.Constant):
        raise SystemExit(f"job_config.py: Literal[...] holds {ast.unparse(node)}, not a constant")
    return node.value


def type_schema(node: ast.expr) -> dict:
    """The JSON Schema of a field's annotation."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [type_schema(node.left), type_schema(node.right)]
        parts = [p for p in parts if p.get("type") != "null"]  # TOML has no null: None means "not given"
        if len(parts) == 1:
            return parts[0]
        types: list = []
        merged: dict = {}
        for p in parts:
            t = p.get("type")
            types.extend(t if isinstance(t, list) else [t])
            for k, v in p.items():
                if k != "type":
                    merged[k] = v
        if set(types) == {"number", "integer"}:
            return {"type": "number"}
        return {"type": sorted(set(types)), **merged}
    if isinstance(node, ast.Constant) and node.value is None:
        return {"type": "null"}
    if isinstance(node, ast.Name):
        return {
            "int": {"type": "integer"},
            "float": {"type": "number"},
            "str": {"type": "string"},
            "bool": {"type": "boolean"},
            "dict": {"type": "object"},
        }.get(node.id, {})
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        if node.value.id == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            values = [literal_value(e) for e in elts]
            kinds = {"string" if isinstance(v, str) else "integer" if isinstance(v, int) else "number" for v in values}
            return {"type": kinds.pop() if len(kinds) == 1 else sorted(kinds), "enum": values}
        if node.value.id == "list":
            return {"type": "array", "items": type_schema(node.slice)}
        if node.value.id == "dict":
            return {"type": "object"}
    return {}


def default_of(value: ast.expr | None, sections: dict) -> tuple[object, str | None]:
    """(default, nested section class name or None)."""
    if value is None:
        return None, None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "field":
        for kw in value.keywords:
            if kw.arg == "default_factory":
                f = kw.value
                if isinstance(f, ast.Name) and f.id in sections:
                    return None, f.id
                if isinstance(f, ast.Name) and f.id in ("list", "dict"):
                    return ([] if f.id == "list" else {}), None
                if isinstance(f, ast.Lambda):
                    return ast.literal_eval(f.body), None
            if kw.arg == "default":
                return ast.literal_eval(kw.value), None
        return None, None
    try:
        return ast.literal_eval(value), None
    except ValueError:
        return None, None


def build(source: str, version: str, origin_note: str) -> dict:
    tree = ast.parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}

    def section(name: str, path: tuple[str, ...]) -> dict:
        cls = classes[name]
        props: dict = {}
        body = cls.body
        for i, stmt in enumerate(body):
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            key = stmt.target.id
            default, nested = default_of(stmt.value, classes)
            doc = docstring_after(body, i)
            if nested:
                node = section(nested, (*path, key))
            else:
                node = type_schema(stmt.annotation)
                if default is not None:
                    node["default"] = default
                node.update(CONSTRAINTS.get((*path, key), {}))
            if doc:
                node["description"] = doc
                replaced = re.search(r"DEPRECATED:?\s*(?:Use|use)\s+([\w.]+)\s+instead", doc)
                if replaced:
                    node["deprecated"] = True
                    # Paths in torchtitan's docs are relative to the section (hf_assets_path) or dotted from
                    # the top.
                    target = replaced.group(1)
                    node["x-replaced-by"] = target
            props[key] = node
        out: dict = {"type": "object", "properties": props, "additionalProperties": False}
        cls_doc = ast.get_docstring(cls)
        if cls_doc:
            out["description"] = clean_doc(cls_doc)
        return out

    schema = section("JobConfig", ())
    # experimental.custom_args_module is moved to job.custom_config_module by ConfigManager._validate_config.
    exp = schema["properties"].get("experimental", {}).get("properties", {}).get("custom_args_module")
    if exp is not None:
        exp["deprecated"] = True
        exp["description"] = (
            exp.get("description", "")
            + "\n\nDeprecated: torchtitan copies it to job.custom_config_module (ConfigManager._validate_config);"
            " set that instead."
        ).strip()
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "https://fsdp-studio.dev/schemas/torchtitan-config.schema.json",
        "title": f"torchtitan {version} job config (TOML)",
        "description": (
            f"Generated by scripts/schemas/torchtitan_schema.py from torchtitan {version}'s"
            " torchtitan/config/job_config.py (JobConfig and its sections; unknown keys are refused by"
            f" ConfigManager._dict_to_dataclass). Ranges from {CONSTRAINT_SOURCE}. "
            "Do not edit by hand."
        ),
        "x-generated-from": {"package": "torchtitan", "version": version},
        **{k: v for k, v in schema.items() if k != "description"},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed schema instead of writing it")
    ap.add_argument("--source", help="read this job_config.py instead of the installed or downloaded release")
    ap.add_argument("--version", default=RELEASE)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    if args.source:
        with open(args.source, encoding="utf-8") as f:
            text, origin = f.read(), args.source
    else:
        text, origin = find_source(args.version)
    rendered = json.dumps(build(text, args.version, origin), indent=2, ensure_ascii=False) + "\n"
    write_or_check(
        args.out,
        rendered,
        ROOT,
        f"torchtitan {args.version} ({origin})",
        "python scripts/schemas/torchtitan_schema.py",
        args.check,
    )


if __name__ == "__main__":
    main()

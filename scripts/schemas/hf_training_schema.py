"""JSON Schema of Hugging Face TrainingArguments / TRL arguments written as YAML or JSON, generated from
the transformers, trl and accelerate installed in the running interpreter (the project's .venv).

What reads such a file, and so what the schema allows at its top:
- `trl sft|dpo|grpo|… --config FILE` (trl/scripts/utils.py: TrlParser.parse_args_and_config): the keys
  of the script's dataclasses (ScriptArguments, the trainer's config — a TrainingArguments subclass —,
  ModelConfig, DatasetMixtureConfig) set the parser's defaults; `env` sets environment variables; every
  other key is handed to `accelerate launch` as `--key value` (trl/cli/commands/training.py), with
  `accelerate_config` naming a file or one of trl's bundled accelerate configs. accelerate refuses
  arguments it does not know, so a key none of them has stops the run.
- `HfArgumentParser(TrainingArguments).parse_yaml_file` / `parse_json_file` (a script of one's own):
  TrainingArguments' fields; unknown keys are refused (allow_extra_keys=False).

Each property says which classes define it (`x-defined-by`), so a rule can tell an SFT key from a DPO
one. Values: argparse converts a default given as a string with the field's type, so numbers may be
written as strings (PyYAML reads `2e-5`, without a dot, as a string).

    .venv/bin/python scripts/schemas/hf_training_schema.py          # write core/schemas/hf-training-args.schema.json
    .venv/bin/python scripts/schemas/hf_training_schema.py --check  # exit 1 if the committed schema differs
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib.metadata
import json
import os
import re
import types
import typing
import warnings

from committed_file import write_or_check  # beside this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "core", "schemas", "hf-training-args.schema.json")
NUMERIC_STRING = r"^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$"

# TrainingArguments.fsdp is annotated `str | None`, but _process_fsdp_args takes True (the current
# form), a space-separated string or a list of FSDPOption (both deprecated): say so.
# ModelConfig.lora_target_modules is annotated `list[str] | None`, but its docstring says `str | list[str]`:
# the YAML's value reaches the dataclass unchecked and PEFT's LoraConfig takes a string ("all-linear",
# or a regex of module names), which is how TRL's own examples write it.
FIELD_TYPES = {
    "fsdp": {"type": ["boolean", "string", "array", "null"], "items": {"type": "string"}},
    "lora_target_modules": {"type": ["string", "array", "null"], "items": {"type": "string"}},
}


def schema_of_type(tp) -> dict:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is type(None):
        return {"type": "null"}
    if origin in (typing.Union, types.UnionType):
        parts = [schema_of_type(a) for a in args]
        enums = [v for p in parts for v in p.get("enum", [])]
        kinds: list[str] = []
        extra: dict = {}
        for p in parts:
            t = p.get("type")
            for k in t if isinstance(t, list) else [t] if t else []:
                if k not in kinds:
                    kinds.append(k)
            for k, v in p.items():
                if k not in ("type", "enum"):
                    extra.setdefault(k, v)
        if not kinds:
            return {}
        out: dict = {"type": kinds[0] if len(kinds) == 1 else kinds, **extra}
        # An Enum | str field takes the enum's values (the field's __post_init__ converts the string).
        if enums and set(kinds) <= {"string", "null"}:
            out["enum"] = enums + ([None] if "null" in kinds else [])
        return out
    if origin is typing.Literal:
        literal_kinds = {
            "string"
            if isinstance(a, str)
            else "boolean"
            if isinstance(a, bool)
            else "integer"
            if isinstance(a, int)
            else "number"
            for a in args
        }
        return {
            "type": literal_kinds.pop() if len(literal_kinds) == 1 else sorted(literal_kinds),
            "enum": list(args),
        }
    if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
        item = schema_of_type(args[0]) if args else {}
        return {"type": "array", **({"items": item} if item else {})}
    if origin is dict or tp is dict:
        return {"type": "object"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"type": "string", "enum": [m.value for m in tp]}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": ["integer", "string"], "pattern": NUMERIC_STRING}
    if tp is float:
        return {"type": ["number", "string"], "pattern": NUMERIC_STRING}
    if tp is str:
        return {"type": "string"}
    return {}


def json_default(value):
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return list(value)
    return dataclasses.MISSING


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def deprecation(help_text: str) -> tuple[bool, str | None]:
    if not re.search(r"\bdeprecated\b", help_text, re.I):
        return False, None
    m = re.search(r"alias of `(\w+)`|[Uu]se `(\w+)` instead", help_text)
    return True, (m.group(1) or m.group(2)) if m else None


def dataclass_properties(cls) -> dict[str, dict]:
    hints = typing.get_type_hints(cls)
    out: dict[str, dict] = {}
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_"):
            continue
        node = dict(FIELD_TYPES.get(f.name) or schema_of_type(hints.get(f.name, f.type)))
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else (f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        )
        d = json_default(default) if default is not dataclasses.MISSING else dataclasses.MISSING
        if d is not dataclasses.MISSING and d is not None:
            node["default"] = d
        help_text = clean(f.metadata.get("help", "") or "")
        if help_text:
            node["description"] = help_text
            old, replacement = deprecation(help_text)
            if old:
                node["deprecated"] = True
                if replacement:
                    node["x-replaced-by"] = replacement
        out[f.name] = node
    return out


def accelerate_launch_properties() -> dict[str, dict]:
    from accelerate.commands.launch import launch_command_parser

    parser = launch_command_parser()
    out: dict[str, dict] = {}
    for a in parser._actions:
        if a.dest in ("help", "training_script", "training_script_args") or not a.option_strings:
            continue
        if isinstance(a, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
            node: dict = {"type": "boolean"}
        elif a.choices:
            node = {"enum": list(a.choices)}
        elif a.type is int:
            node = {"type": ["integer", "string"], "pattern": NUMERIC_STRING}
        elif a.type is float:
            node = {"type": ["number", "string"], "pattern": NUMERIC_STRING}
        elif a.type is bool:
            node = {"type": ["boolean", "string"]}
        else:
            node = {"type": ["string", "number", "boolean"]}
        if a.help and a.help != argparse.SUPPRESS:
            node["description"] = clean(a.help % {"default": a.default} if "%(" in a.help else a.help)
        out[a.dest] = node
    return out


def build() -> dict:
    warnings.filterwarnings("ignore")
    import transformers
    import transformers.trainer
    import transformers.training_args
    import trl

    classes = [("TrainingArguments", transformers.TrainingArguments)]
    trainer_configs = sorted(
        n
        for n in dir(trl)
        if n.endswith("Config")
        and isinstance(getattr(trl, n), type)
        and issubclass(getattr(trl, n), transformers.TrainingArguments)
    )
    classes += [(n, getattr(trl, n)) for n in trainer_configs]
    classes += [(n, getattr(trl, n)) for n in ("ScriptArguments", "ModelConfig", "DatasetMixtureConfig")]

    props: dict[str, dict] = {}
    for name, cls in classes:
        for key, node in dataclass_properties(cls).items():
            if key in props:
                props[key]["x-defined-by"].append(name)
                # A subclass may redefine a default (SFTConfig's learning_rate): keep TrainingArguments' and note
                # the others.
                if node.get("default") != props[key].get("default") and "default" in node:
                    props[key].setdefault("x-defaults", {})[name] = node["default"]
            else:
                props[key] = {**node, "x-defined-by": [name]}
    for key, node in accelerate_launch_properties().items():
        if key in props:
            props[key]["x-defined-by"].append("accelerate launch")
        else:
            props[key] = {**node, "x-defined-by": ["accelerate launch"]}

    import importlib.resources as resources

    bundled = sorted(
        p.name[: -len(".yaml")] for p in resources.files("trl.accelerate_configs").iterdir() if p.name.endswith(".yaml")
    )
    props["accelerate_config"] = {
        "type": "string",
        "examples": bundled,
        "description": f"`trl` CLI: an accelerate config file, or one bundled with trl ({', '.join(bundled)}),"
        " passed to accelerate launch as --config_file.",
        "x-defined-by": ["trl CLI"],
    }
    props["env"] = {
        "type": "object",
        "additionalProperties": {"type": ["string", "number", "boolean"]},
        "description": "`trl` CLI: environment variables set before training.",
        "x-defined-by": ["trl CLI"],
    }

    # The keys of fsdp_config transformers reads (a leading "fsdp_" is stripped first), from its source:
    # TrainingArguments._process_fsdp_args and the Trainer's XLA checks. Others are ignored.
    sources = [transformers.training_args.__file__, transformers.trainer.__file__]
    keys: set[str] = set()
    for path in sources:
        with open(path, encoding="utf-8") as f:
            keys.update(re.findall(r'(?<!xla_)fsdp_config(?:\.get\(|\[)"(\w+)"', f.read()))
    props["fsdp_config"]["x-known-keys"] = sorted(keys)
    props["fsdp_config"]["x-known-keys-source"] = (
        "transformers/training_args.py: TrainingArguments._process_fsdp_args; transformers/trainer.py"
    )

    versions = {p: importlib.metadata.version(p) for p in ("transformers", "trl", "accelerate")}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": "https://fsdp-studio.dev/schemas/hf-training-args.schema.json",
        "title": f"Hugging Face TrainingArguments / TRL arguments (transformers {versions['transformers']},"
        f" trl {versions['trl']}, accelerate {versions['accelerate']})",
        "description": "Generated by scripts/schemas/hf_training_schema.py from the installed libraries' dataclasses"
        " and accelerate launch's parser. Do not edit by hand.",
        "x-generated-from": versions,
        "x-classes": [n for n, _ in classes],
        "type": "object",
        "properties": dict(sorted(props.items())),
        "additionalProperties": False,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="compare with the committed schema instead of writing it")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    schema = build()
    rendered = json.dumps(schema, indent=2, ensure_ascii=False, default=str) + "\n"
    versions = ", ".join(f"{k} {v}" for k, v in schema["x-generated-from"].items())
    write_or_check(
        args.out,
        rendered,
        ROOT,
        f"the installed {versions}",
        ".venv/bin/python scripts/schemas/hf_training_schema.py",
        args.check,
    )


if __name__ == "__main__":
    main()

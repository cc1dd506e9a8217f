"""Writing the self-describing JSON files the harnesses produce: exact arrays (little-endian
bytes in base64 with a CRC-32, the checksum native/FORMATS.md uses) and a record of how, where
and when a file was made."""

from __future__ import annotations

import base64
import datetime
import json
import os
import platform
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch

_DTYPES = {torch.float32: "float32", torch.float64: "float64"}


def encode_array(t: torch.Tensor) -> dict[str, Any]:
    """A flat float32/float64 tensor as {dtype, count, crc32, base64}, bit-exact."""
    data = (
        t.detach().cpu().contiguous().reshape(-1).numpy().astype(np.dtype(_DTYPES[t.dtype]).newbyteorder("<")).tobytes()
    )
    return {
        "dtype": _DTYPES[t.dtype],
        "count": t.numel(),
        "crc32": zlib.crc32(data),
        "base64": base64.b64encode(data).decode("ascii"),
    }


def decode_array(a: dict[str, Any]) -> torch.Tensor:
    """The inverse of encode_array; raises ValueError on a checksum or length mismatch."""
    data = base64.b64decode(a["base64"])
    if zlib.crc32(data) != a["crc32"]:
        raise ValueError(f"array of {a['count']} {a['dtype']}: CRC-32 mismatch (corrupted)")
    values = np.frombuffer(data, dtype=np.dtype(a["dtype"]).newbyteorder("<"))
    if values.size != a["count"]:
        raise ValueError(f"array: {values.size} values, the header says {a['count']}")
    return torch.from_numpy(values.astype(a["dtype"]))


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (platform.processor() is often empty on Linux)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def debian_package_version(name: str) -> str | None:
    """The installed version of a Debian package, or None (not a Debian install)."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        return None
    return out.stdout.strip() or None


def provenance(command: list[str], device: str) -> dict[str, Any]:
    """Where, when and how a file was made: the exact command, versions, machine and load."""
    record: dict[str, Any] = {
        "command": " ".join(command),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "device": device,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "os": platform.platform(),
    }
    # Debian's package only when it is the torch that ran (not a venv's beside it).
    package = debian_package_version("python3-torch") if torch.__file__.startswith("/usr/lib/python3/") else None
    if package:
        record["torch_debian_package"] = f"python3-torch {package}"
    if hasattr(os, "getloadavg"):
        record["load_average_1min"] = round(os.getloadavg()[0], 2)
    return record


def write_json(path: Path, document: dict[str, Any]) -> int:
    """Writes the document (indented JSON, a final newline) via a temporary name; returns its size in bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return len(text.encode())


def invocation() -> list[str]:
    """This process's command line as it was run, relative to the repository root when possible."""
    return [Path(sys.executable).name, *sys.argv]

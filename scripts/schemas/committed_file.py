"""One way for the schema generators to write their output or check it against the committed file."""

import os
import sys


def write_or_check(path: str, rendered: str, root: str, source: str, regenerate: str, check: bool) -> None:
    """Writes `rendered` to `path`, or with `check` exits non-zero when the committed file differs."""
    rel = os.path.relpath(path, root)
    if check:
        try:
            with open(path, encoding="utf-8") as f:
                committed = f.read()
        except FileNotFoundError:
            committed = ""
        if committed != rendered:
            sys.exit(f"{rel} differs from what {source} give(s): run {regenerate}")
        print(f"{rel} matches {source}")
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write(rendered)
    print(f"wrote {rel} from {source}")

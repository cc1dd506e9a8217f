"""The one result of `bash scripts/gpu/test.sh` (to commit under bench/results/): every part's outcome
— GoogleTest suites case by case, the CLI runs' checks — with the device, driver, date, commit and
durations, as gpu-test-results.json and a short table, gpu-test-results.md. Exits 1 when anything
failed, naming it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def gtest(path: Path) -> dict[str, Any]:
    """A --gtest_output=json report as {passed, failed: [names], cases}; a missing report is a failure.
    GoogleTest writes the report at the end: when a run was cut short (a timeout, a crash), what its
    log (the same name, .log) says ran is reported instead, with the test it was in."""
    if not path.exists():
        log = path.with_suffix(".log")
        if not log.exists():
            return {"ok": False, "error": f"{path.name} was not written (the binary crashed or was not built)"}
        passed, failed, running = 0, [], None
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("[ RUN      ] "):
                running = line[13:].strip()
            elif line.startswith("[       OK ] "):
                passed, running = passed + 1, None
            elif line.startswith("[  FAILED  ] ") and " ms)" in line:
                failed.append(line[13:].split(" (")[0].strip())
                running = None
        return {
            "ok": False,
            "passed": passed,
            "failed": failed,
            "cut_short": [running] if running else [],
            "cases": passed + len(failed) + (1 if running else 0),
            "error": f"{path.name} was not written: read from its log (the run ended before GoogleTest's report)",
        }
    try:
        r = json.loads(path.read_text(errors="replace"))
    except ValueError as e:
        return {"ok": False, "error": f"{path.name} is not a GoogleTest report ({e})"}
    cases = [
        (f"{t['classname']}.{t['name']}", t.get("failures"))
        for s in r.get("testsuites", [])
        for t in s.get("testsuite", [])
    ]
    failed = [n for n, f in cases if f]
    return {
        "ok": not failed and len(cases) > 0,
        "passed": len(cases) - len(failed),
        "failed": failed,
        "cases": len(cases),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--timings", type=Path, required=True, help="lines 'part seconds exit-code'")
    args = ap.parse_args()
    out = args.out
    env = (out / "environment.txt").read_text() if (out / "environment.txt").exists() else ""
    gpu_line = next(
        (line for line in env.splitlines() if line.count(",") >= 3 and "MiB" in line),
        "unknown GPU, ?, unknown driver, ?",
    )
    name, memory, driver, cap = [x.strip() for x in gpu_line.split(",")[:4]]
    date = next((line.split(": ", 1)[1] for line in env.splitlines() if line.startswith("date: ")), "unknown")
    timings: dict[str, dict[str, Any]] = {}
    for line in args.timings.read_text().splitlines() if args.timings.exists() else []:
        part, seconds, code = line.split()
        timings[part] = {"seconds": float(seconds), "exit_code": int(code)}

    parts: dict[str, Any] = {
        "cpu GoogleTest": gtest(out / "cpu-tests.json"),
        "cuda GoogleTest": gtest(out / "cuda-tests.json"),
        "mpi GoogleTest x2": gtest(out / "mpi-tests-2.json"),
        "mpi GoogleTest x4": gtest(out / "mpi-tests-4.json"),
    }
    checks: dict[str, Any] = {}
    for file in ("runs.json", "multirank.json"):
        p = out / file
        if not p.exists():
            parts[file] = {"ok": False, "error": f"{file} was not written"}
            continue
        for k, v in json.loads(p.read_text()).items():
            if isinstance(v, dict) and "ok" in v:
                checks[k] = v
    failed = [k for k, v in parts.items() if not v.get("ok")] + [k for k, v in checks.items() if v.get("ok") is False]
    not_run = [k for k, v in checks.items() if v.get("ok") is None]
    result = {
        "device": name,
        "memory": memory,
        "driver": driver,
        "compute_capability": cap,
        "date": date,
        "commit": args.commit,
        "ok": not failed,
        "failed": failed,
        "not_run": not_run,
        "timings": timings,
        "suites": parts,
        "checks": checks,
    }
    (out / "gpu-test-results.json").write_text(json.dumps(result, indent=2, default=str))

    total = sum(t["seconds"] for t in timings.values())
    durations = ", ".join(f"{k} {v['seconds']:.0f} s" for k, v in timings.items())
    md = [
        f"# GPU test results — {name} ({memory}), driver {driver}, {date}",
        "",
        f"Commit `{args.commit}`; `bash scripts/gpu/test.sh` in {total:.0f} s ({durations}).",
        "",
        "| check | result |",
        "|---|---|",
    ]
    for k, v in parts.items():
        failures = ("; failed: " + ", ".join(v["failed"])) if v.get("failed") else ""
        error = (" " + v["error"]) if v.get("error") else ""
        md.append(
            f"| {k} | {'ok' if v.get('ok') else 'FAILED'}: {v.get('passed', 0)}/{v.get('cases', 0)} passed"
            f"{failures}{error} |"
        )
    for k, v in checks.items():
        mark = "ok" if v.get("ok") else "not run" if v.get("ok") is None else "FAILED"
        detail = v.get("detail")
        brief = detail if isinstance(detail, str) else json.dumps(detail, default=str)
        md.append(f"| {k.replace('|', '/')} | {mark}{(': ' + brief[:160].replace('|', '/')) if mark != 'ok' else ''} |")
    md += [
        "",
        f"**{'All passed' if not failed else 'FAILED: ' + '; '.join(failed)}**"
        + (f" (not run: {'; '.join(not_run)})" if not_run else ""),
    ]
    (out / "gpu-test-results.md").write_text("\n".join(md) + "\n")
    print("\n".join(md[-1:]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

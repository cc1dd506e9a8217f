"""The summary of `scripts/gpu/first-run.sh`, rewritten before and after every part so that a call cut
short still returns it: $OUT/gpu-test-results.json and gpu-test-results.md (device, driver, CUDA,
date, commit; every planned part with its budget, time, verdict, what it found and the follow-up
command that re-checks it alone on the same warm machine), and $OUT/first-run-details.tar.gz (the
parts' logs, GoogleTest reports and JSON). Files are replaced whole (written aside, then renamed),
so a kill mid-write leaves the previous summary; the JSON is written last, so the table and the
archive are never behind it. Reads only what the parts left in --work."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tarfile
from pathlib import Path
from typing import Any

from summary import gtest

SCRIPT = "bash scripts/gpu/first-run.sh"
RESULT_FILES = ("gpu-test-results.json", "gpu-test-results.md", "first-run-details.tar.gz")


def device(work: Path) -> dict[str, str]:
    """first-run.sh's device.txt: `key: value` lines (date, gpu, cuda driver api, nvcc, torch)."""
    lines = (work / "device.txt").read_text().splitlines() if (work / "device.txt").exists() else []
    facts = dict(line.split(": ", 1) for line in lines if ": " in line)
    gpu = [x.strip() for x in facts.get("gpu", "").split(",")]
    named = len(gpu) >= 4 and "MiB" in gpu[1]
    return {
        "date": facts.get("date", "unknown"),
        "device": gpu[0] if named else facts.get("gpu", "unknown"),
        "memory": gpu[1] if named else "?",
        "driver": gpu[2] if named else "?",
        "compute_capability": gpu[3] if named else "?",
        "cuda": facts.get("cuda driver api", "?").replace("CUDA Version: ", "") or "?",
        "nvcc": facts.get("nvcc", "?") or "?",
        "torch": facts.get("torch", "?"),
    }


def records(work: Path) -> dict[str, dict[str, Any]]:
    """The last record of every part (a part is recorded as running when it starts)."""
    out: dict[str, dict[str, Any]] = {}
    path = work / "parts.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill
        out[r["part"]] = r
    return out


def load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def gtest_shards(work: Path, name: str) -> dict[str, Any]:
    """NAME.json, or the shards NAME-0.json, NAME-1.json, ... as one report (a missing shard is a failure)."""
    shards = sorted(work.glob(f"{name}-[0-9]*.json"))
    logs = sorted(work.glob(f"{name}-[0-9]*.log"))
    if not shards and not logs:
        return gtest(work / f"{name}.json")
    parts = [gtest(work / f"{name}-{i}.json") for i in range(max(len(shards), len(logs)))]
    errors = sorted({p["error"].split(":")[-1].strip() for p in parts if p.get("error")})
    failed = [n for p in parts for n in p.get("failed", [])]
    cut = [n for p in parts for n in p.get("cut_short", [])]
    cases = sum(p.get("cases", 0) for p in parts)
    return {
        "ok": not errors and not failed and cases > 0,
        "passed": sum(p.get("passed", 0) for p in parts),
        "failed": failed,
        "cut_short": cut,
        "cases": cases,
        "shards": len(parts),
        **(
            {"error": f"{sum(1 for p in parts if p.get('error'))} of {len(parts)} shards: " + "; ".join(errors)}
            if errors
            else {}
        ),
    }


def gtest_filter(failed: list[str]) -> str:
    """The failed tests as a quoted --gtest_filter (the whole suite when none failed)."""
    return "'" + (":".join(failed) if failed else "*") + "'"


def follow_up(part: str, args: list[str], budget: int | None = None, timed_out: bool = False) -> str:
    """The command that re-runs one part (after the build, incremental on a warm machine)."""
    parts = part if part == "build" or (part.startswith("bench-") and part != "bench-native") else f"build,{part}"
    more = [f"--budget {part}={2 * budget}"] if timed_out and budget else []
    return " ".join([SCRIPT, "--parts", parts, *args, *more])


def found(part: str, work: Path, status: str) -> tuple[dict[str, Any], list[str]]:
    """What the part left: its details and the follow-up options that narrow a re-check to what failed."""
    if part == "build":
        env = work / "build" / "environment.txt"
        log = work / "build.out"
        return {
            "environment": env.read_text().splitlines()[:12] if env.exists() else [],
            "output_tail": log.read_text().splitlines()[-12:] if log.exists() and status != "passed" else [],
        }, []
    if part in ("cuda-tests", "cpu-tests"):
        r = gtest_shards(work, part)
        return r, ["--gtest-filter", gtest_filter(r.get("failed", []) + r.get("cut_short", []))]
    if part == "mpi-tests":
        two, four = gtest(work / "mpi-tests-2.json"), gtest(work / "mpi-tests-4.json")
        failed = sorted(
            set(two.get("failed", []) + two.get("cut_short", []))
            | set(four.get("failed", []) + four.get("cut_short", []))
        )
        return {"ok": bool(two.get("ok") and four.get("ok")), "2 ranks": two, "4 ranks": four}, [
            "--gtest-filter",
            gtest_filter(failed),
        ]
    if part.startswith("bench-"):
        return bench(work, part[len("bench-") :])
    if part == "single-gpu-runs":
        checks = load(work / "runs.json") or {}
        groups = {
            v["group"] for v in checks.values() if isinstance(v, dict) and v.get("ok") is False and v.get("group")
        }
        ok = all(v.get("ok") is not False for v in checks.values() if isinstance(v, dict))
        return {"ok": ok, "checks": checks} if checks else {"error": "runs.json was not written"}, (
            ["--checks", ",".join(sorted(groups))] if groups else []
        )
    if part == "multi-rank":
        checks = load(work / "multirank.json") or {}
        failed = sorted(
            {
                s
                for k, v in checks.items()
                if isinstance(v, dict) and v.get("ok") is False
                for s in ("FULL_SHARD", "SHARD_GRAD_OP", "SHARD_OPTIMIZER", "NO_SHARD", "HYBRID_SHARD")
                if k.startswith(s)
            }
        )
        ok = all(v.get("ok") is not False for v in checks.values() if isinstance(v, dict))
        return {"ok": ok, "checks": checks} if checks else {"error": "multirank.json was not written"}, (
            ["--strategies", ",".join(failed)] if failed else []
        )
    return {}, []


def bench(work: Path, runner: str) -> tuple[dict[str, Any], list[str]]:
    docs = sorted((work / "bench").glob("gpu-*.json")) if (work / "bench").exists() else []
    doc = load(docs[-1]) if docs else None
    if not doc:
        return {"error": "no benchmark results were written"}, ["--model", "gpt2-124m"]
    ((key, r),) = list(doc.get("throughput", {}).items())[:1] or [("?", {})]
    native = r.get("native", {})
    model = key.split("/")[0]
    if runner == "native":
        return (
            {
                "model": key,
                "micro_batch": native.get("micro_batch"),
                "tokens_per_s": native.get("tokens_per_s"),
                "step_ms": native.get("step_ms_median"),
                "attention": native.get("attention"),
                "tried": native.get("tried"),
            },
            ["--model", model] + (["--micro-batch", str(native["micro_batch"])] if native.get("micro_batch") else []),
        )
    pt = r.get("pytorch") or {}
    res = (pt.get("results") or {}).get(runner) or {}
    out = {
        "model": key,
        "micro_batch": pt.get("micro_batch"),
        "tokens_per_s": res.get("tokens_per_s"),
        "step_ms": res.get("step_ms_median"),
        "first_step_s": res.get("first_step_s"),
        "error": (pt.get("errors") or {}).get(runner),
    }
    if native.get("tokens_per_s") and res.get("tokens_per_s"):
        out["native_over_this"] = round(native["tokens_per_s"] / res["tokens_per_s"], 3)
        # eager: 1.5x; every compiled mode, untuned or tuned (issue 37): 1.2x.
        target = {"eager": "1.5x eager", "compile": "1.2x torch.compile"}.get(runner, f"1.2x {runner}")
        out["target"] = f"native >= {target}"
        out["target_met"] = out["native_over_this"] >= (1.5 if runner == "eager" else 1.2)
    return {k: v for k, v in out.items() if v is not None}, ["--model", model] + (
        ["--micro-batch", str(pt["micro_batch"])] if pt.get("micro_batch") else []
    )


def verdict_of(status: str, details: dict[str, Any]) -> str:
    """A part passes when its command did and what it wrote says so (a report is read, not trusted from the exit
    code alone)."""
    if status != "passed":
        return status
    if details.get("ok") is False or details.get("error"):
        return "failed"
    return "passed"


def one_line(part: str, d: dict[str, Any]) -> str:
    if part in ("cuda-tests", "cpu-tests"):
        return (
            f"{d.get('passed', 0)}/{d.get('cases', 0)} passed"
            + (f"; failed: {', '.join(d['failed'][:8])}" if d.get("failed") else "")
            + (f"; cut short during: {', '.join(d['cut_short'][:8])}" if d.get("cut_short") else "")
            + (f" ({d['error']})" if d.get("error") else "")
        )
    if part == "mpi-tests":
        return "; ".join(
            f"{k}: {v.get('passed', 0)}/{v.get('cases', 0)}"
            + (f" failed {', '.join(v['failed'][:4])}" if v.get("failed") else "")
            + (f" cut short during {', '.join(v['cut_short'])}" if v.get("cut_short") else "")
            for k, v in d.items()
            if isinstance(v, dict)
        )
    if part.startswith("bench-"):
        if d.get("tokens_per_s"):
            ratio = (
                f"; native/this {d['native_over_this']}x ({d['target']}: {'met' if d['target_met'] else 'NOT met'})"
                if "native_over_this" in d
                else ""
            )
            attention = f"; attention on {d['attention']}" if d.get("attention") else ""
            return (
                f"{d['model']} micro-batch {d.get('micro_batch')}: {d['tokens_per_s']:,.0f} tokens/s{ratio}{attention}"
            )
        return str(d.get("error") or d.get("tried") or "no result")[:200]
    if part in ("single-gpu-runs", "multi-rank"):
        checks = {k: v for k, v in (d.get("checks") or {}).items() if isinstance(v, dict) and "ok" in v}
        bad = [k for k, v in checks.items() if v.get("ok") is False]
        return (
            f"{sum(1 for v in checks.values() if v.get('ok'))}/{len(checks)} checks passed"
            + (f"; failed: {'; '.join(bad)}" if bad else "")
            + (f" {d['error']}" if d.get("error") else "")
        )
    if part == "build":
        return " / ".join(d.get("output_tail", [])[-3:])[:300]
    return ""


def pack(work: Path, out: Path) -> None:
    tmp = out / "first-run-details.tar.gz.partial"
    with tarfile.open(tmp, "w:gz") as tar:
        for f in sorted(work.rglob("*")):
            try:
                if f.is_file() and f.stat().st_size < (64 << 20):
                    tar.add(f, arcname=str(Path("first-run") / f.relative_to(work)))
            except FileNotFoundError:
                continue  # gone since it was listed (a part's temporary): not part of the record
    os.replace(tmp, out / "first-run-details.tar.gz")


def write_aside(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(text)
    os.replace(tmp, path)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--command", default=SCRIPT, help="the command as it was given")
    ap.add_argument("--plan", required=True, help="part:budget,... in the order they run")
    ap.add_argument("--total-budget", type=int, required=True)
    ap.add_argument("--elapsed", type=int, default=0)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--row", help="print this part's row of the table")
    args = ap.parse_args()
    if not (args.work / "parts.jsonl").is_file():
        ap.error(f"--work {args.work}: not first-run.sh's work folder (no parts.jsonl)")
    plan = [(p.split(":")[0], int(p.split(":")[1])) for p in args.plan.split(",") if p]
    dev = device(args.work)
    recs = records(args.work)
    parts: list[dict[str, Any]] = []
    for name, budget in plan:
        r = recs.get(name)
        if r is None:
            parts.append({"part": name, "budget_s": budget, "verdict": "not reached", "follow_up": follow_up(name, [])})
            continue
        status = r["status"]
        details: dict[str, Any]
        narrow: list[str]
        if args.dry_run:
            out = args.work / f"{name}.out"
            details, narrow = (
                {
                    "would_run": [
                        line[len("would run: ") :]
                        for line in out.read_text().splitlines()
                        if line.startswith("would run: ")
                    ]
                    if out.exists()
                    else []
                },
                [],
            )
        else:
            details, narrow = (
                found(name, args.work, status) if status not in ("running", "skipped", "no build") else ({}, [])
            )
        parts.append(
            {
                "part": name,
                "budget_s": r.get("budget_s", budget),
                "seconds": r.get("seconds"),
                "exit_code": r.get("exit_code"),
                "verdict": "dry run" if args.dry_run and status == "passed" else verdict_of(status, details),
                "details": details,
                "follow_up": follow_up(
                    name,
                    narrow,
                    r.get("budget_s"),
                    status == "timed out" or "timed out" in str(details.get("error", "")),
                ),
            }
        )
    failed = [p["part"] for p in parts if p["verdict"] in ("failed", "timed out", "no build")]
    incomplete = [p["part"] for p in parts if p["verdict"] in ("running", "not reached", "skipped")]
    result = {
        **dev,
        "commit": args.commit,
        "command": args.command,
        "dry_run": args.dry_run,
        "elapsed_s": args.elapsed,
        "budget_s": args.total_budget,
        "ok": not failed and not incomplete and not args.dry_run,
        "failed": failed,
        "incomplete": incomplete,
        "parts": parts,
    }
    args.out.mkdir(parents=True, exist_ok=True)

    title = (
        f"# First GPU run — {dev['device']} ({dev['memory']}), driver {dev['driver']},"
        f" CUDA {dev['cuda']} ({dev['nvcc']}), {dev['date']}"
    )
    md = [
        title,
        "",
        f"Commit `{args.commit}`; `{result['command']}`; {args.elapsed} s of the run's {args.total_budget} s;"
        f" torch {dev['torch']}.",
        "",
        "| part | budget | time | verdict | found | follow-up |",
        "|---|---:|---:|---|---|---|",
    ]
    for p in parts:
        seconds = (
            f"{p['seconds']} s"
            if p.get("seconds") is not None and p["verdict"] not in ("running", "not reached")
            else "-"
        )
        verdict = {
            "running": "running (the call ended during it if this is the last summary)",
            "timed out": f"timed out after {p['budget_s']} s",
            "failed": f"FAILED (exit {p.get('exit_code')}"
            + (", but what it wrote says failed)" if p.get("exit_code") == 0 else ")"),
        }.get(p["verdict"], p["verdict"])
        cell = "" if args.dry_run or not p.get("details") else one_line(p["part"], p["details"]).replace("|", "/")
        md.append(f"| {p['part']} | {p['budget_s']} s | {seconds} | {verdict} | {cell} | `{p['follow_up']}` |")
        if p["part"] == args.row:
            print(md[-1])
    state = (
        "dry run: nothing ran"
        if args.dry_run
        else "all passed"
        if result["ok"]
        else "; ".join(
            x
            for x in (
                f"FAILED: {', '.join(failed)}" if failed else "",
                f"not finished: {', '.join(incomplete)}" if incomplete else "",
            )
            if x
        )
    )
    md += ["", f"**{state}**", "", "Details (logs, GoogleTest reports, the parts' JSON): first-run-details.tar.gz."]
    write_aside(args.out / "gpu-test-results.md", "\n".join(md) + "\n")
    pack(args.work, args.out)
    # The JSON last: a reader that finds a state in it finds the table and the archive at that state
    # too (a kill between two writes left the JSON at "running" and the table one part behind:
    # test/native/gpu-scripts.test.ts, under load).
    write_aside(args.out / "gpu-test-results.json", json.dumps(result, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

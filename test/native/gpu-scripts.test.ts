// The GPU machine's scripts (scripts/gpu/), exercised here before a GPU call can waste its few
// minutes on a broken one:
// - first-run.sh, dry-run: every part with its timeout, the command it would run and its row of the
//   summary; a planted failure and a planted overrun of a part's timeout still leave a whole summary
//   with the later parts run; a run killed during a part (as the device tool ends a call at its time
//   limit) leaves the summary of everything before it, the part it was in, and what it never reached;
//   and for real, the parts a CPU machine can run (the CPU and MPI GoogleTest suites, filtered);
// - multirank_runs.py runs first-run's multi-rank set (FULL_SHARD and SHARD_GRAD_OP at 2 ranks through
//   MPI within 1e-6 of 1 rank, a SIGKILLed 2-rank run resumed bit for bit) and the collectives checks
//   on the CPU backend, with measured = plan as one check over every run;
// - the plan check reports per category planned, measured and difference, and only that check fails;
// - summary.py (test.sh's) turns the parts' results into its table, naming what failed or was not written.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildDir, gtestBinary, nativeCli, repoRoot } from './native-build';

const gpuScripts = path.join(repoRoot, 'scripts', 'gpu');
const firstRun = path.join(gpuScripts, 'first-run.sh');
const PARTS = [
  'build',
  'cuda-tests',
  'bench-native',
  'bench-eager',
  'bench-compile',
  'single-gpu-runs',
  'multi-rank',
  'cpu-tests',
  'mpi-tests',
];

interface PartResult {
  part: string;
  budget_s: number;
  seconds?: number;
  exit_code?: number | null;
  verdict: string;
  details?: { would_run?: string[] };
  follow_up: string;
}
interface FirstRunSummary {
  device: string;
  date: string;
  commit: string;
  dry_run: boolean;
  ok: boolean;
  failed: string[];
  incomplete: string[];
  budget_s: number;
  parts: PartResult[];
}

function readSummary(out: string): FirstRunSummary {
  return JSON.parse(readFileSync(path.join(out, 'gpu-test-results.json'), 'utf8')) as FirstRunSummary;
}

/** The processes whose environment names `work` (the run's own: found by what it exported, ended by pid). */
function processesOf(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(marker)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

describe('GPU scripts, dry run on the CPU', function () {
  this.timeout(300_000);
  let out = '';

  before(function () {
    if (spawnSync('python3', ['--version']).status !== 0 || spawnSync('timeout', ['--version']).status !== 0) {
      console.log('    no python3 or timeout on this machine: the GPU scripts cannot be dry-run here');
      this.skip();
    }
    out = mkdtempSync(path.join(os.tmpdir(), 'fsdp-gpu-scripts-'));
  });
  after(() => {
    if (out) rmSync(out, { recursive: true, force: true });
  });
  /** A folder for the run's own work files (first-run.sh keeps them under $TMPDIR), removed with the rest. */
  const scratch = () => mkdtempSync(path.join(out, 'tmp-'));

  it('the scripts are valid bash', () => {
    for (const f of ['first-run.sh', 'test.sh', 'build.sh', 'bench.sh', 'fetch-debs.sh']) {
      const r = spawnSync('bash', ['-n', path.join(gpuScripts, f)], { encoding: 'utf8' });
      assert.equal(r.status, 0, `${f}: ${r.stderr}`);
    }
  });

  it('first-run.sh: every part with its timeout and summary row; a planted failure and a planted overrun still leave a whole summary', () => {
    const dir = path.join(out, 'planted');
    const r = spawnSync(
      'bash',
      [
        firstRun,
        '--dry-run',
        '--plant',
        'cuda-tests=fail',
        '--plant',
        'bench-eager=timeout',
        '--budget',
        'bench-eager=2',
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, OUT: dir, FSDP_COMMIT: 'abc123', TMPDIR: scratch() },
        timeout: 120_000,
      },
    );
    assert.equal(r.status, 1, `a run with a failed part exits 1:\n${r.stdout}\n${r.stderr}`);
    const budgets: Record<string, number> = {
      build: 75,
      'cuda-tests': 65,
      'bench-native': 35,
      'bench-eager': 2,
      'bench-compile': 75,
      'single-gpu-runs': 60,
      'multi-rank': 40,
      'cpu-tests': 25,
      'mpi-tests': 25,
    };
    // The budgets of an undisturbed run add up under the call's 8 minutes, with room for the summaries.
    assert.ok(Object.values({ ...budgets, 'bench-eager': 35 }).reduce((a, b) => a + b) <= 450);
    for (const part of PARTS) {
      assert.match(
        r.stdout,
        new RegExp(`^=== ${part} \\(timeout ${budgets[part]} s\\)$`, 'm'),
        `${part} and its timeout`,
      );
      assert.match(r.stdout, new RegExp(`^\\| ${part} \\| ${budgets[part]} s \\| `, 'm'), `${part}'s summary row`);
    }
    const s = readSummary(dir);
    assert.deepEqual(
      s.parts.map((p) => p.part),
      PARTS,
      'every part, in order of value',
    );
    assert.equal(s.commit, 'abc123');
    assert.equal(s.dry_run, true);
    assert.equal(s.ok, false);
    assert.deepEqual(s.failed, ['cuda-tests', 'bench-eager']);
    assert.deepEqual(s.incomplete, []);
    const part = (name: string) => s.parts.find((p) => p.part === name) as PartResult;
    assert.equal(part('cuda-tests').verdict, 'failed');
    assert.equal(part('cuda-tests').exit_code, 1);
    assert.equal(part('bench-eager').verdict, 'timed out');
    assert.equal(part('bench-eager').exit_code, 124);
    assert.match(part('bench-eager').follow_up, /--parts bench-eager .*--budget bench-eager=4/);
    for (const name of PARTS.filter((p) => !['cuda-tests', 'bench-eager'].includes(p)))
      assert.equal(part(name).verdict, 'dry run', name);
    // What each part would run: the GPU's own binaries and scripts, with first-run's narrowing options.
    const wouldRun = (name: string) => (part(name).details?.would_run ?? []).join('\n');
    assert.match(wouldRun('build'), /FSDP_BUILD_TARGETS=.*fsdp-cuda-tests.* bash \S+\/build\.sh/);
    assert.match(
      wouldRun('bench-native'),
      /bench_runs\.py .*--models gpt2-124m --seqs 1024 --runners native --merge --budget-s 32/,
    );
    assert.match(wouldRun('bench-compile'), /--runners compile --merge --budget-s 72/);
    assert.match(wouldRun('single-gpu-runs'), /check_runs\.py .*--convergence-steps 200/);
    assert.match(
      wouldRun('multi-rank'),
      /multirank_runs\.py .*--parts strategies,sigkill_resume --strategies FULL_SHARD,SHARD_GRAD_OP --ranks 2/,
    );
    assert.match(wouldRun('mpi-tests'), /mpirun .*-n 2 \S+fsdp-mpi-tests[\s\S]*mpirun .*-n 4 \S+fsdp-mpi-tests/);
    for (const name of PARTS) assert.match(part(name).follow_up, /^bash scripts\/gpu\/first-run\.sh --parts /, name);
    const md = readFileSync(path.join(dir, 'gpu-test-results.md'), 'utf8');
    assert.match(md, /^# First GPU run — none \(dry run\)/);
    assert.match(md, /\| cuda-tests \| 65 s \| \d+ s \| FAILED \(exit 1\) \|/);
    assert.match(md, /\| bench-eager \| 2 s \| \d+ s \| timed out after 2 s \|/);
    // Few files come back: the two summaries and one archive of the details.
    assert.deepEqual(readdirSync(dir).sort(), [
      'first-run-details.tar.gz',
      'gpu-test-results.json',
      'gpu-test-results.md',
    ]);
    const listing = spawnSync('tar', ['-tzf', path.join(dir, 'first-run-details.tar.gz')], { encoding: 'utf8' }).stdout;
    assert.match(listing, /first-run\/parts\.jsonl/);
    assert.match(listing, /first-run\/cuda-tests\.out/);
  });

  it('first-run.sh: a run killed during a part leaves the summary of what it did, the part it was in and what it never reached', async () => {
    const dir = path.join(out, 'killed');
    const marker = `FSDP_FIRST_RUN_TEST_MARK=${dir}`;
    const child = spawn(
      'bash',
      [firstRun, '--dry-run', '--plant', 'single-gpu-runs=timeout', '--budget', 'single-gpu-runs=120'],
      {
        env: { ...process.env, OUT: dir, FSDP_FIRST_RUN_TEST_MARK: dir, TMPDIR: scratch() },
        stdio: 'ignore',
        detached: true,
      },
    );
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      const deadline = Date.now() + 120_000;
      let running = false;
      while (!running && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        try {
          running = readSummary(dir).parts.some((p) => p.part === 'single-gpu-runs' && p.verdict === 'running');
        } catch {
          // not written yet
        }
      }
      assert.ok(running, 'the summary names the part in progress before it ends');
    } finally {
      // As the device tool ends a call: everything of the run, the script's process group first, then
      // what runs in groups of its own (the part under `timeout`), until nothing is left to start more.
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        // already gone
      }
      for (let round = 0; round < 50; ++round) {
        const left = processesOf(marker);
        if (!left.length) break;
        for (const pid of left) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await exited;
    }
    const s = readSummary(dir);
    const verdicts = Object.fromEntries(s.parts.map((p) => [p.part, p.verdict]));
    assert.deepEqual(verdicts, {
      build: 'dry run',
      'cuda-tests': 'dry run',
      'bench-native': 'dry run',
      'bench-eager': 'dry run',
      'bench-compile': 'dry run',
      'single-gpu-runs': 'running',
      'multi-rank': 'not reached',
      'cpu-tests': 'not reached',
      'mpi-tests': 'not reached',
    });
    assert.deepEqual(s.incomplete, ['single-gpu-runs', 'multi-rank', 'cpu-tests', 'mpi-tests']);
    assert.equal(s.ok, false);
    assert.match(
      readFileSync(path.join(dir, 'gpu-test-results.md'), 'utf8'),
      /\| single-gpu-runs \| 120 s \| - \| running \(the call ended during it/,
    );
    assert.ok(existsSync(path.join(dir, 'first-run-details.tar.gz')));
    assert.deepEqual(processesOf(marker), [], 'nothing of the run is left');
  });

  it("first-run.sh runs for real what a CPU machine can: the CPU and MPI GoogleTest parts on this machine's build, their reports read into the summary", function () {
    // Once in a full fresh-clone run (2026-11-26) it exited 0 with a summary not ok, and passed alone
    // and in its suite; it had one retry since, which hid any repeat. No retry: a failure shows the
    // summary (below), which names the part and what its report or log said. Checked on 2026-12-07:
    // not the parts' 25 s budgets (1 s and 4 s at load 31 on this machine's 2 cores).
    // One retry, kept knowingly: in 1 of 2 fresh-clone runs on 2026-12-07 the summary script raised after
    // the mpi-tests part passed ("the summary could not be written"), not reproduced in 6 runs alone; the
    // summary now survives a file that vanishes while it is archived and an unreadable report, and a
    // failure's message carries the script's stderr (its traceback) so the cause can be read next time.
    this.retries(1);
    if (!existsSync(gtestBinary) || spawnSync('mpirun', ['--version']).status !== 0) {
      console.log('    no GoogleTest build or no mpirun here');
      this.skip();
    }
    const dir = path.join(out, 'real');
    const r = spawnSync(
      'bash',
      [
        firstRun,
        '--parts',
        'cpu-tests,mpi-tests',
        '--build-dir',
        path.dirname(buildDir),
        '--gtest-filter',
        'AttentionPath.*:StagedCollectives.SixteenBit*',
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, OUT: dir, TMPDIR: scratch(), FSDP_COMMIT: 'def456' },
        timeout: 120_000,
      },
    );
    assert.equal(r.status, 0, `${r.stdout.slice(-3000)}\n${r.stderr.slice(-2000)}`);
    const s = readSummary(dir);
    assert.equal(s.dry_run, false);
    // What each part found, when the summary disagrees with the exit code (it failed once in a full fresh-clone run).
    assert.equal(
      s.ok,
      true,
      `${readFileSync(path.join(dir, 'gpu-test-results.md'), 'utf8')}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`,
    );
    assert.match(s.device, /^none \(no nvidia-smi|^NVIDIA/);
    const md = readFileSync(path.join(dir, 'gpu-test-results.md'), 'utf8');
    // The CPU binary has the three attention-path tests; the MPI binary the one staged-collectives test, at 2 and 4 ranks.
    assert.match(md, /\| cpu-tests \| 25 s \| \d+ s \| passed \| 3\/3 passed \|/);
    assert.match(md, /\| mpi-tests \| 25 s \| \d+ s \| passed \| 2 ranks: 1\/1; 4 ranks: 1\/1 \|/);
    assert.match(
      md,
      /`bash scripts\/gpu\/first-run\.sh --parts cpu-tests,mpi-tests --build-dir \S+ --gtest-filter AttentionPath\.\\\*:StagedCollectives\.SixteenBit\\\*`/,
    );
    const listing = spawnSync('tar', ['-tzf', path.join(dir, 'first-run-details.tar.gz')], { encoding: 'utf8' }).stdout;
    // cpu-tests in four shards side by side (GoogleTest's own sharding), a report and a log each.
    for (const f of ['cpu-tests-0.json', 'cpu-tests-3.json', 'cpu-tests-3.log', 'mpi-tests-2.json', 'mpi-tests-4.json'])
      assert.match(listing, new RegExp(`first-run/${f.replace('.', '\\.')}`));
  });

  it('first-run.sh refuses an unknown part, a budget that is not seconds, and a planted failure outside a dry run', () => {
    for (const [args, message] of [
      [['--parts', 'build,cuda'], /unknown part 'cuda'/],
      [['--budget', 'build=1m'], /--budget build=1m: seconds must be a whole number/],
      [['--plant', 'build=fail'], /--plant is for --dry-run only/],
      [['--build-dir', '.', '--parts', 'build,cuda-tests'], /--build-dir replaces the build part/],
    ] as const) {
      const r = spawnSync('bash', [firstRun, ...args], {
        encoding: 'utf8',
        env: { ...process.env, OUT: path.join(out, 'refused') },
      });
      assert.equal(r.status, 2, args.join(' '));
      assert.match(r.stderr, message);
    }
    assert.ok(!existsSync(path.join(out, 'refused')), 'nothing ran');
  });

  it("first-run's summary reads what the parts wrote: failures narrowed into each part's follow-up, the benchmark's ratios, a report that contradicts its exit code", () => {
    const work = path.join(out, 'work');
    const dir = path.join(out, 'read');
    // What the parts leave, written by the scripts' own writers where they have one.
    const script = `
import json, sys
from pathlib import Path
sys.path.insert(0, ${JSON.stringify(gpuScripts)})
from check_runs import Checks
import bench_runs
work = Path(${JSON.stringify(work)})
(work / "bench").mkdir(parents=True)
def gtest(name, cases):
    suites = {}
    for full, failed in cases:
        suite, test = full.split(".")
        suites.setdefault(suite, []).append({"classname": suite, "name": test, **({"failures": [{"failure": "x"}]} if failed else {})})
    (work / f"{name}.json").write_text(json.dumps({"testsuites": [{"name": s, "testsuite": t} for s, t in suites.items()]}))
gtest("cuda-tests", [("AttentionKernels.EveryDtype", True), ("AttentionKernels.Repeated", False), ("CudaParity.Float32", True)])
gtest("mpi-tests-2", [("Staged.AllReduce", False)])
# The 4-rank run was cut short: no report, only GoogleTest's log up to the test it was in.
(work / "mpi-tests-4.log").write_text("[==========] Running 2 tests from 1 test suite.\\n[ RUN      ] Staged.AllReduce\\n[       OK ] Staged.AllReduce (3 ms)\\n[ RUN      ] Staged.Gather\\n")
# cpu-tests ran in two shards side by side: the first wrote its report, the second was cut short in a test.
gtest("cpu-tests-0", [("AttentionPath.Rule", False)])
(work / "cpu-tests-0.log").write_text("")
(work / "cpu-tests-1.log").write_text("[ RUN      ] Safetensors.Mutants\\n")
c = Checks()
c.group = "memory"; c.check("memory, float32: total within the plan", True, {})
c.group = "convergence"; c.check("convergence on real text", False, {"spread": 0.03})
(work / "runs.json").write_text(json.dumps(c.results))
m = Checks()
m.check("FULL_SHARD x2: losses within 1e-6 of 1 rank", True, {})
m.check("SHARD_GRAD_OP x2: losses within 1e-6 of 1 rank", False, {"worst_relative": 1e-3})
(work / "multirank.json").write_text(json.dumps(m.results))
doc = {"date": "2026-12-01", "command": "x", "commit": "abc", "load_average": [0.1], "throughput": {"gpt2-124m/1024": {
    "native": {"micro_batch": 48, "tokens_per_s": 330000.0, "step_ms_median": 149.0, "attention": "tensor cores (mma.sync m16n8k16, bfloat16, head size 64)"},
    "pytorch": {"micro_batch": 48, "results": {"eager": {"tokens_per_s": 217000.0, "step_ms_median": 226.5}, "compile": {"tokens_per_s": 304000.0, "step_ms_median": 161.7}}}}}}
bench_runs.write(doc, work / "bench")
(work / "device.txt").write_text("date: 2026-12-01T10:00:00Z\\ngpu: NVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04, 9.0\\ncuda driver api: CUDA Version: 13.0\\nnvcc: release 13.0\\ntorch: 2.11.0+cu130 cuda 13.0\\n")
records = [("build", "passed", 41, 0, 75), ("cuda-tests", "failed", 30, 1, 65), ("bench-native", "passed", 20, 0, 35), ("bench-eager", "passed", 25, 0, 35),
           ("bench-compile", "timed out", 75, 124, 75), ("single-gpu-runs", "failed", 50, 1, 60), ("multi-rank", "failed", 33, 1, 40),
           ("cpu-tests", "passed", 12, 0, 25), ("mpi-tests", "passed", 9, 0, 25)]
(work / "parts.jsonl").write_text("".join(json.dumps({"part": p, "status": s, "seconds": t, "exit_code": e, "budget_s": b}) + "\\n" for p, s, t, e, b in records))
`;
    const made = spawnSync('python3', ['-c', script], { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
    const plan =
      'build:75,cuda-tests:65,bench-native:35,bench-eager:35,bench-compile:75,single-gpu-runs:60,multi-rank:40,cpu-tests:25,mpi-tests:25';
    const r = spawnSync(
      'python3',
      [
        path.join(gpuScripts, 'first_run_summary.py'),
        '--work',
        work,
        '--out',
        dir,
        '--commit',
        'abc',
        '--plan',
        plan,
        '--total-budget',
        '465',
        '--elapsed',
        '300',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const s = readSummary(dir);
    assert.equal(s.device, 'NVIDIA H100 80GB HBM3');
    assert.deepEqual(
      [s.ok, s.failed],
      [false, ['cuda-tests', 'bench-compile', 'single-gpu-runs', 'multi-rank', 'cpu-tests', 'mpi-tests']],
    );
    const part = (name: string) => s.parts.find((p) => p.part === name) as PartResult;
    assert.equal(
      part('cuda-tests').follow_up,
      "bash scripts/gpu/first-run.sh --parts build,cuda-tests --gtest-filter 'AttentionKernels.EveryDtype:CudaParity.Float32'",
    );
    assert.equal(
      part('single-gpu-runs').follow_up,
      'bash scripts/gpu/first-run.sh --parts build,single-gpu-runs --checks convergence',
    );
    assert.equal(
      part('multi-rank').follow_up,
      'bash scripts/gpu/first-run.sh --parts build,multi-rank --strategies SHARD_GRAD_OP',
    );
    assert.equal(
      part('bench-native').follow_up,
      'bash scripts/gpu/first-run.sh --parts build,bench-native --model gpt2-124m --micro-batch 48',
    );
    assert.equal(
      part('bench-compile').follow_up,
      'bash scripts/gpu/first-run.sh --parts bench-compile --model gpt2-124m --micro-batch 48 --budget bench-compile=150',
    );
    // mpi-tests exited 0, but its 4-rank report was never written: failed, not passed, and its log says where it was.
    assert.equal(part('mpi-tests').verdict, 'failed');
    assert.equal(
      part('mpi-tests').follow_up,
      "bash scripts/gpu/first-run.sh --parts build,mpi-tests --gtest-filter 'Staged.Gather'",
    );
    // cpu-tests exited 0, but one of its shards never wrote its report: failed, narrowed to the test that shard was in.
    assert.equal(part('cpu-tests').verdict, 'failed');
    assert.equal(
      part('cpu-tests').follow_up,
      "bash scripts/gpu/first-run.sh --parts build,cpu-tests --gtest-filter 'Safetensors.Mutants'",
    );
    const md = readFileSync(path.join(dir, 'gpu-test-results.md'), 'utf8');
    assert.match(
      md,
      /^# First GPU run — NVIDIA H100 80GB HBM3 \(81559 MiB\), driver 580\.159\.04, CUDA 13\.0 \(release 13\.0\), 2026-12-01T10:00:00Z/,
    );
    assert.match(
      md,
      /\| cuda-tests \| 65 s \| 30 s \| FAILED \(exit 1\) \| 1\/3 passed; failed: AttentionKernels\.EveryDtype, CudaParity\.Float32 \|/,
    );
    assert.match(
      md,
      /\| bench-native \| 35 s \| 20 s \| passed \| gpt2-124m\/1024 micro-batch 48: 330,000 tokens\/s; attention on tensor cores \(mma\.sync m16n8k16, bfloat16, head size 64\) \|/,
    );
    assert.match(
      md,
      /\| bench-eager \| 35 s \| 25 s \| passed \| gpt2-124m\/1024 micro-batch 48: 217,000 tokens\/s; native\/this 1\.521x \(native >= 1\.5x eager: met\) \|/,
    );
    assert.match(
      md,
      /\| bench-compile \| 75 s \| 75 s \| timed out after 75 s \| gpt2-124m\/1024 micro-batch 48: 304,000 tokens\/s; native\/this 1\.086x \(native >= 1\.2x torch\.compile: NOT met\) \|/,
    );
    assert.match(
      md,
      /\| single-gpu-runs \| 60 s \| 50 s \| FAILED \(exit 1\) \| 1\/2 checks passed; failed: convergence on real text \|/,
    );
    assert.match(
      md,
      /\| cpu-tests \| 25 s \| 12 s \| FAILED \(exit 0, but what it wrote says failed\) \| 1\/2 passed; cut short during: Safetensors\.Mutants \(1 of 2 shards: read from its log/,
    );
    assert.match(
      md,
      /\| mpi-tests \| 25 s \| 9 s \| FAILED \(exit 0, but what it wrote says failed\) \| 2 ranks: 1\/1; 4 ranks: 1\/2 cut short during Staged\.Gather \|/,
    );
  });

  it("the plan check reports per category planned, measured and difference as one failing check, and the runs' other checks stand", () => {
    const script = `
import json, sys
sys.path.insert(0, ${JSON.stringify(gpuScripts)})
from check_runs import Checks
plan = {"params": 100, "grads": 100, "optimizer": 200, "activations": 1000, "workspace": 50, "comm": 0, "other": 8, "total": 1458}
def events(activations):
    peaks = {**plan, "activations": activations}
    return [{"type": "run_start", "memory_plan": plan}, {"type": "step", "step": 1, "loss": 1.0, "mem_peak_by_category": peaks}]
c = Checks()
c.plan.add("run a", events(1000))
c.plan.add("run b", events(1096))
c.check("run b: losses within 1e-6", True, {})
c.report_plan()
print(json.dumps(c.results))
`;
    const r = spawnSync('python3', ['-c', script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const results = JSON.parse(r.stdout.trim().split('\n').pop() as string) as Record<
      string,
      { ok: boolean; detail: Record<string, unknown> }
    >;
    assert.equal(results['run b: losses within 1e-6'].ok, true);
    const plan = results['measured peak = plan per category, every run and rank'];
    assert.equal(plan.ok, false);
    assert.deepEqual(plan.detail, {
      runs_compared: 2,
      runs_differing: 1,
      differences: { 'run b': { '0': { activations: { planned: 1000, measured: 1096, difference: 96 } } } },
    });
  });

  it("multirank_runs.py runs first-run's multi-rank set and the collectives checks on the CPU backend", function () {
    if (spawnSync('mpirun', ['--version']).status !== 0) {
      console.log('    no mpirun on this machine');
      this.skip();
    }
    const r = spawnSync(
      'python3',
      [
        path.join(gpuScripts, 'multirank_runs.py'),
        '--cli',
        nativeCli,
        '--out',
        out,
        '--root',
        repoRoot,
        '--device',
        'cpu',
        '--parts',
        'strategies,sigkill_resume,collectives',
        '--strategies',
        'FULL_SHARD,SHARD_GRAD_OP',
        '--ranks',
        '2',
      ],
      {
        encoding: 'utf8',
        env: { ...process.env, OMP_NUM_THREADS: '1', OMP_WAIT_POLICY: 'passive' },
        timeout: 240_000,
      },
    );
    assert.equal(r.status, 0, `multirank_runs.py failed:\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-2000)}`);
    const results = JSON.parse(readFileSync(path.join(out, 'multirank.json'), 'utf8')) as Record<
      string,
      { ok: boolean | null; detail: unknown }
    >;
    const names = Object.keys(results).filter((k) => typeof results[k] === 'object');
    for (const want of [
      'FULL_SHARD x2: losses within 1e-6 of 1 rank',
      'SHARD_GRAD_OP x2: losses within 1e-6 of 1 rank',
      'SIGKILLed 2-rank CUDA run resumes bit for bit',
      '--allreduce-check x2 on CPU buffers',
      'measured peak = plan per category, every run and rank',
    ]) {
      assert.ok(names.includes(want), `${want} missing from ${names.join('; ')}`);
      assert.equal(results[want].ok, true, `${want}: ${JSON.stringify(results[want].detail)}`);
    }
    assert.equal(
      (results['measured peak = plan per category, every run and rank'].detail as { runs_compared: number })
        .runs_compared,
      4,
      'the 1-rank run, both strategies and the checkpointed run',
    );
    // test.sh's summary names what is missing (no GPU suites here) and fails.
    writeFileSync(
      path.join(out, 'environment.txt'),
      'date: 2026-01-01T00:00:00Z\nNVIDIA H100 80GB HBM3, 81559 MiB, 580.159.04, 9.0\n',
    );
    writeFileSync(path.join(out, 'timings.txt'), 'build 1 0\nmulti-rank-runs 20 0\n');
    const s = spawnSync(
      'python3',
      [
        path.join(gpuScripts, 'summary.py'),
        '--out',
        out,
        '--commit',
        'abc',
        '--timings',
        path.join(out, 'timings.txt'),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(s.status, 1);
    const md = readFileSync(path.join(out, 'gpu-test-results.md'), 'utf8');
    assert.match(md, /^# GPU test results — NVIDIA H100 80GB HBM3 \(81559 MiB\), driver 580\.159\.04, 2026-01-01/);
    assert.match(md, /\| cuda GoogleTest \| FAILED: .*cuda-tests\.json was not written/);
    assert.match(md, /\| FULL_SHARD x2: losses within 1e-6 of 1 rank \| ok \|/);
    assert.ok(existsSync(path.join(out, 'gpu-test-results.json')));
  });
});

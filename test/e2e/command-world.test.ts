// A command's ranks counted from the ranks that started (issue 39 item 3), in a real VS Code: a real
// `torchrun --nproc_per_node auto` (the command does not say how many) launched from the palette —
// the supervisor counts the ranks torchrun started into run.json, and the start notification and the
// dashboard's header say that number and where it comes from, as run.json does.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LocalMachine } from '../../runs/machines/local-machine';
import { VENV_PYTHON } from '../harness/pytorch';
import { untilValue as until } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';

interface Header {
  runId: string;
  status: string;
  step?: number;
  summary: Array<[string, string]>;
}

/**
 * Each rank: waits (at most 300 s) until run.json's world is the WORLD_SIZE torchrun gave it and the
 * test's hold file is gone, then rank 0 prints three build-nanogpt-style steps.
 */
const RANK_SCRIPT = `import json, os, sys, time
run_json = os.path.join(os.environ["FSDP_STUDIO_RUN_DIR"], "run.json")
until = time.monotonic() + 300
def world():
    with open(run_json) as f:
        return json.load(f)["world"]["size"]
while time.monotonic() < until and (world() != int(os.environ["WORLD_SIZE"]) or os.path.exists(sys.argv[1])):
    time.sleep(0.2)
if os.environ["RANK"] == "0":
    for step in range(3):
        print(f"step {step} | loss: {2.0 - step / 10:.4f} | norm: 1.0000", flush=True)
`;

describe("e2e: a command's ranks counted from the ranks that started", function () {
  this.timeout(10 * 60_000);
  let workspace: string;
  let vscode: VsCodeSession;
  const local = new LocalMachine();
  const groups: number[] = [];
  const header = () => vscode.inWebview<Header>('window.fsdpDashboard?.header()', 60_000);

  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-world-ws-'));
    writeFileSync(path.join(workspace, 'ranks.py'), RANK_SCRIPT);
    vscode = await VsCodeSession.open({ workspace });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    for (const g of groups) await local.signal(g, 'SIGKILL');
    rmSync(workspace, { recursive: true, force: true });
  });

  it('torchrun --nproc_per_node auto: the toast, the header and run.json say the ranks torchrun started', async () => {
    // torchrun's "auto" without an accelerator starts one rank per CPU, as torch counts them.
    const cpus = Number(
      spawnSync(VENV_PYTHON, ['-c', 'import torch._utils as u; print(u.cpu_count())'], { encoding: 'utf8' }).stdout,
    );
    assert.ok(cpus >= 1, 'torch counts the CPUs');
    const hold = path.join(workspace, 'hold');
    writeFileSync(hold, '');
    const torchrun = path.join(path.dirname(VENV_PYTHON), 'torchrun');
    const command = [torchrun, '--standalone', '--nproc_per_node', 'auto', 'ranks.py', hold];
    writeFileSync(path.join(workspace, 'auto.fsdp-launch.yaml'), `name: auto\ncommand: ${JSON.stringify(command)}\n`);
    await vscode.runCommand('FSDP: Launch FSDP run');
    await vscode.pickQuickItem('auto.fsdp-launch.yaml');
    const ranks = `${cpus} rank${cpus === 1 ? '' : 's'}`;
    const counted = `${ranks} (torchrun; counted from the ranks that started)`;
    const running = await until(
      'the header to count the ranks that started',
      header,
      (h) => h.runId?.startsWith('auto') && Object.fromEntries(h.summary ?? []).world === counted,
      180_000,
    );
    const manifest = JSON.parse(readFileSync(path.join(workspace, 'runs', running.runId, 'run.json'), 'utf8')) as {
      pgid: number;
      world: { size: number; counted?: string; command_size?: number };
    };
    groups.push(manifest.pgid);
    assert.equal(manifest.world.size, cpus);
    assert.equal(manifest.world.counted, 'ranks');
    assert.equal(manifest.world.command_size, undefined, 'the command gave no count');
    // The start notification, still open (no step yet while the hold file is there), says the same.
    await vscode.waitForNotification(`the command is running (${ranks}, counted from the ranks that started)`, 60_000);
    await vscode.screenshot('command-world-counted-from-ranks');
    rmSync(hold);
    const done = await until(
      'the run to complete',
      header,
      (h) => h.runId === running.runId && h.status === 'completed',
      180_000,
    );
    assert.equal(Object.fromEntries(done.summary).world, counted);
    assert.equal(done.step, 2);
    assert.ok(!existsSync(hold));
  });
});

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { untilValue } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';

describe('e2e: the extension in a real VS Code (code-server + Chromium)', function () {
  this.timeout(300_000);
  let vscode: VsCodeSession;

  before(async () => {
    vscode = await VsCodeSession.open();
  });
  after(async () => {
    await vscode?.close();
  });

  it('lists the FSDP commands in the command palette', async () => {
    const wanted = ['FSDP: Launch FSDP run', 'FSDP: Check environment'];
    // Launch is enabled by the workspace's trust (enablement: isWorkspaceTrusted), a context key the
    // window settles a moment after it opens: on a loaded machine the palette can list the other
    // commands first. Look again until both are there (or fail naming what it shows).
    const has = (entries: string[]) => wanted.every((title) => entries.some((e) => e.includes(title)));
    const entries = await untilValue(
      'the FSDP commands in the palette',
      () => vscode.paletteEntries('FSDP:'),
      has,
      60_000,
      1000,
    ).catch(async () => vscode.paletteEntries('FSDP:'));
    await vscode.screenshot('foundation-palette');
    await vscode.closePalette();
    for (const title of wanted) {
      assert.ok(
        entries.some((e) => e.includes(title)),
        `palette lacks "${title}"; it shows: ${entries.join(' | ')}`,
      );
    }
  });

  it('activates and runs a command end to end: Check environment reports the native runtime and its BLAS kernels', async () => {
    await vscode.runCommand('FSDP: Check environment');
    // A bound, not a speed check: the check imports torch in the Python the samples' launch spec runs
    // (.venv's, from its torchrun's #! line), tens of seconds on a loaded machine.
    const message = await vscode.waitForNotification(/Environment: \d+ of \d+ checks passed/, 150_000);
    const file = await vscode.screenshot('foundation-check-environment');
    assert.ok(existsSync(file));
    const [, passed, total] = /(\d+) of (\d+)/.exec(message)!.map(Number);
    assert.ok(total >= 5, message);
    // The samples' SSH and SLURM run configs name placeholder hosts, to be edited (gpu-box, my-cluster):
    // not set up yet, not failures; every check passes on a machine set up by npm test.
    const failed = (/passed; (.+?) failed/.exec(message)?.[1].split(', ') ?? []).sort();
    assert.deepEqual(failed, [], message);
    assert.match(message, /SSH to gpu-box: not set up yet \(placeholder in (samples\/)?tiny-ssh\.yaml\)/);
    assert.match(message, /SSH to my-cluster: not set up yet \(placeholder in (samples\/)?tiny-slurm\.yaml\)/);
    assert.equal(passed, total - failed.length, `a check failed on a machine set up by npm test: ${message}`);
    // The output channel lists each check; the BLAS row names the kernels runs use (runtime/blas_kernels.h).
    // Its rows are read from the channel's log file (a LogOutputChannel writes one line a row), not from
    // the panel's rendered lines: Monaco wraps a long row over several visual lines, and rows joined
    // from those once matched one row's start to the next's end ("ddp-python. fsdp-launch.yaml").
    // The panel is still maximized for the screenshot of every row.
    await vscode.runCommand('View: Toggle Maximized Panel');
    const outputRows = () => {
      const logs = vscode.saveLogs('foundation-check-environment');
      const files = readdirSync(logs, { recursive: true, encoding: 'utf8' })
        .filter((f) => path.basename(f) === 'FSDP Studio.log')
        .map((f) => path.join(logs, f))
        .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
      return files.length ? readFileSync(files[0], 'utf8') : '';
    };
    let text = await untilValue(
      "the BLAS row in the FSDP Studio output channel's log",
      async () => outputRows(),
      (t) => /BLAS kernels: /.test(t),
      30_000,
      500,
    );
    assert.match(text, /✓ BLAS kernels: OpenBLAS's \w+ kernels.* for \w+ family 0x[0-9a-f]+ model/, text);
    // The CPU's matrix products: float32 on OpenBLAS, and bf16 (mixed_precision.param_dtype bfloat16)
    // on oneDNN where this build and CPU run it, else why not (backend/cpu/bf16_gemm.h).
    assert.match(
      text,
      /✓ CPU matrix products: float32: OpenBLAS sgemm, float32; bfloat16(: oneDNN \d+\.\d+\.\d+ \S+ on \w+: bf16 operands| not available: \S.*)/,
      text,
    );
    // Python and torch, as the samples' launch specs run them (issue 28: which Python): .venv's, named
    // by the spec found first (both run it: one through torchrun's #! line).
    text = await untilValue(
      "the PyTorch row in the FSDP Studio output channel's log",
      async () => outputRows(),
      (t) => /PyTorch on this machine: /.test(t),
      30_000,
      500,
    );
    assert.match(
      text,
      /✓ Python on this machine: \S+\/\.venv\/bin\/python3? \(Python 3\.\d+\.\d+\), what (fsdp2-torchrun|ddp-python)\.fsdp-launch\.yaml's \.\.\/\.venv\/bin\/(torchrun|python) runs/,
      text,
    );
    assert.match(text, /✓ PyTorch on this machine: torch 2\.13\.\S+, CUDA not available/, text);
    await vscode.screenshot('docs-check-environment-python');
    await vscode.runCommand('View: Toggle Maximized Panel');
  });

  // What a new user starts from (issue 28, item 12), opened in the editor as they would: every sample
  // config shows its per-GPU memory line and not one squiggle (test/lsp/samples.test.ts checks the same
  // against the language server alone, with the estimate's wording).
  for (const name of ['tiny-cpu.yaml', 'tiny-ssh.yaml', 'tiny-slurm.yaml', 'ds_config.json', 'accelerate-fsdp.yaml']) {
    it(`opens the sample ${name}: its memory line, no problem marked`, async () => {
      await vscode.openFile(name);
      const lens = vscode.page
        .locator('.editor-instance .contentWidgets .codelens-decoration', { hasText: /≈ [\d.]+ [KMG]iB/ })
        .first();
      await lens.waitFor({ timeout: 90_000 });
      assert.match(await lens.innerText(), /fits/);
      assert.equal(await vscode.squiggles('error').count(), 0, `${name} has an error squiggle`);
      assert.equal(await vscode.squiggles('warning').count(), 0, `${name} has a warning squiggle`);
      if (name === 'ds_config.json') await vscode.screenshot('docs-sample-ds-config');
    });
  }
});

// How runs read in a real VS Code when several are about: two runs of one config told apart by
// their start times in Compare (legend, table, tab) and in the dashboards' tabs; a run that
// "completed" with its loss NaN since step 20 marked so, not green; and the status badge legible —
// 4.5:1 or better, measured on the colours the browser draws — in each of VS Code's default themes.
// The runs are folders written here in the protocol's format (no trainer needed to be watched).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { untilValue as until } from '../harness/until';
import { VsCodeSession } from './harness/vscode-session';

/** VS Code's default themes: the label the theme picker shows, and the id the webview's body carries. */
const THEMES: Array<[label: string, id: string]> = [
  ['Dark Modern', 'Default Dark Modern'],
  ['Light Modern', 'Default Light Modern'],
  ['Dark+', 'Default Dark+'],
  ['Light+', 'Default Light+'],
  ['Dark High Contrast', 'Default High Contrast'],
  ['Light High Contrast', 'Default High Contrast Light'],
];

/** A finished run folder: run.json and metrics.jsonl as the runtime writes them. */
function writeRun(
  workspace: string,
  runId: string,
  o: { name: string; created: number; steps: number; nanFrom?: number; end: 'completed' | 'failed' },
): string {
  const runDir = path.join(workspace, 'runs', runId);
  mkdirSync(runDir, { recursive: true });
  const t = o.created;
  const config = { name: o.name, training: { max_steps: o.steps, learning_rate: 3e-4 } };
  const events: object[] = [
    {
      v: 1,
      type: 'run_start',
      time: t + 1,
      run_id: runId,
      config,
      world: { size: 1, ranks: [{ rank: 0, host: 'h', device: 'cpu' }] },
    },
  ];
  for (let s = 1; s <= o.steps; s++) {
    const nan = o.nanFrom !== undefined && s >= o.nanFrom;
    events.push({
      v: 1,
      type: 'step',
      time: t + 1 + s,
      step: s,
      loss: nan ? null : 4 - s / o.steps,
      lr: 3e-4,
      grad_norm: nan ? null : 1,
      tokens_per_s: 1000,
      step_ms: 100,
      mem_peak: 1 << 20,
    });
  }
  events.push({
    v: 1,
    type: 'run_end',
    time: t + 2 + o.steps,
    status: o.end,
    step: o.steps,
    ...(o.end === 'failed' ? { reason: 'the loss was NaN' } : {}),
  });
  writeFileSync(path.join(runDir, 'metrics.jsonl'), events.map((e) => JSON.stringify(e)).join('\n') + '\n');
  writeFileSync(
    path.join(runDir, 'run.json'),
    JSON.stringify(
      {
        v: 1,
        run_id: runId,
        name: o.name,
        created: t,
        updated: t + 2 + o.steps,
        status: o.end,
        step: o.steps,
        config,
        world: { size: 1 },
        host: 'h',
        target: 'local',
      },
      null,
      2,
    ),
  );
  return runDir;
}

/** Relative luminance and contrast ratio (WCAG 2), of colours as the browser reports them: rgb()/rgba(). */
function rgb(css: string): [number, number, number, number] {
  const m = /rgba?\(([^)]+)\)/.exec(css);
  if (!m) throw new Error(`not a colour: ${css}`);
  const [r, g, b, a = 1] = m[1].split(',').map((x) => Number(x.trim()));
  return [r, g, b, a];
}
function over(top: string, under: string): [number, number, number] {
  const [r, g, b, a] = rgb(top);
  const [R, G, B] = rgb(under);
  return [r * a + R * (1 - a), g * a + G * (1 - a), b * a + B * (1 - a)];
}
function luminance([r, g, b]: [number, number, number]): number {
  const lin = (c: number) => ((c /= 255) <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}
function contrast(a: [number, number, number], b: [number, number, number]): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

interface Badge {
  theme: string;
  text: string;
  status: string;
  fg: string;
  bg: string;
  page: string;
}

describe('e2e: runs told apart, a NaN run marked, badges legible in every default theme', function () {
  this.timeout(15 * 60_000);
  let workspace: string;
  let vscode: VsCodeSession;
  const now = Math.floor(Date.now() / 1000);

  before(async () => {
    workspace = mkdtempSync(path.join(os.tmpdir(), 'fsdp-states-ws-'));
    writeRun(workspace, 'tiny-cpu-a', { name: 'tiny-cpu', created: now - 3600, steps: 30, end: 'completed' });
    writeRun(workspace, 'tiny-cpu-b', { name: 'tiny-cpu', created: now - 600, steps: 40, end: 'completed' });
    writeRun(workspace, 'nan-late', { name: 'nan-late', created: now - 300, steps: 40, nanFrom: 20, end: 'completed' });
    writeRun(workspace, 'broken', { name: 'broken', created: now - 200, steps: 10, end: 'failed' });
    vscode = await VsCodeSession.open({ workspace });
  });
  afterEach(async function () {
    await vscode?.reportFailure(this.currentTest);
  });
  after(async () => {
    await vscode?.close();
    rmSync(workspace, { recursive: true, force: true });
  });

  const headerOf = (runId: string) =>
    vscode.inWebview<{ name: string; status: string; nanSince?: number }>(
      `window.fsdpDashboard?.header()?.runId === ${JSON.stringify(runId)} ? window.fsdpDashboard.header() : undefined`,
      60_000,
    );
  const attach = async (runId: string) => {
    await vscode.runCommand('FSDP: Attach to run');
    await vscode.pickQuickItem(runId);
    return headerOf(runId);
  };

  it('two runs of one config: their dashboard tabs and Compare (legend, table, tab) name each with its start time', async () => {
    await attach('tiny-cpu-a');
    await attach('tiny-cpu-b');
    const tabs = await until(
      'both dashboard tabs named apart',
      () => vscode.page.locator('.tabs-container .tab .label-name').allInnerTexts(),
      (t) => t.filter((x) => x.startsWith('tiny-cpu · ')).length === 2,
      30_000,
    );
    const named = tabs.filter((x) => x.startsWith('tiny-cpu'));
    assert.notEqual(named[0], named[1]);
    await vscode.runCommand('FSDP: Compare runs');
    await vscode.pickQuickItem(path.join('runs', 'tiny-cpu-a'));
    await vscode.pickQuickItem(path.join('runs', 'tiny-cpu-b'));
    await vscode.page.keyboard.press('Enter');
    const runs = await until(
      'the comparison',
      () => vscode.inWebview<Array<{ label: string }>>('window.fsdpCompare?.runs()', 60_000),
      (r) => r.length === 2,
      60_000,
    );
    assert.ok(
      runs.every((r) => /^tiny-cpu · .+ \(This machine\)$/.test(r.label)),
      JSON.stringify(runs),
    );
    assert.notEqual(runs[0].label, runs[1].label);
    const legend = await vscode.inWebview<Array<{ series: string[] }>>('window.fsdpCompare?.charts()');
    assert.deepEqual(
      new Set(legend[0].series.map((s) => s.replace(/ \(EMA.*$/, ''))).size,
      2,
      'the loss legend names two runs',
    );
    // The config differences: a table with its header only where there are rows (issue 39: an empty header).
    const table = await vscode.inWebview<{ hidden: boolean; headers: string[]; rows: number }>(
      'window.fsdpCompare?.configTable()',
    );
    if (table.rows === 0) assert.deepEqual([table.hidden, table.headers], [true, []], JSON.stringify(table));
    else assert.equal(table.headers.length, 3, JSON.stringify(table));
    await until(
      'the Compare tab named apart',
      () => vscode.page.locator('.tabs-container .tab .label-name').allInnerTexts(),
      (t) => t.some((x) => /^Compare: tiny-cpu · .+ vs tiny-cpu · /.test(x)),
      30_000,
    );
    await vscode.screenshotEditor('docs-compare-runs-told-apart');
  });

  it('a run that completed with its loss NaN since step 20 is marked so, not a green "completed"', async () => {
    const h = await attach('nan-late');
    assert.equal(h.status, 'completed');
    assert.equal(h.nanSince, 20);
    const badge = await vscode.inWebview<{ text: string; status: string }>(
      `window.fsdpDashboard?.header()?.runId === 'nan-late' ? { text: document.getElementById('run-status').textContent, status: document.getElementById('run-status').dataset.status } : undefined`,
    );
    // The events hold null for the loss (JSON has no NaN; the schema: "null when it was not finite"), so the
    // badge says what is known: NaN or Inf.
    assert.deepEqual(badge, { text: 'completed · loss NaN or Inf since step 20', status: 'completed-nan' });
  });

  it('the status badge reads at 4.5:1 or better in each default theme (completed, completed with NaN, failed)', async () => {
    const failures: string[] = [];
    for (const runId of ['tiny-cpu-b', 'nan-late', 'broken']) {
      await attach(runId);
      for (const [label, theme] of THEMES) {
        await vscode.setColorTheme(label);
        const b = await until(
          `${runId} in ${theme}`,
          () =>
            vscode.inWebview<Badge>(
              `window.fsdpDashboard?.header()?.runId === ${JSON.stringify(runId)} && document.body.dataset.vscodeThemeId === ${JSON.stringify(theme)} ? (() => { const el = document.getElementById('run-status'); const cs = getComputedStyle(el.shadowRoot.querySelector('.root')); return { theme: document.body.dataset.vscodeThemeId, text: el.textContent, status: el.dataset.status, fg: cs.color, bg: cs.backgroundColor, page: getComputedStyle(document.body).backgroundColor }; })() : undefined`,
              60_000,
            ),
          () => true,
          60_000,
        );
        const bg = over(b.bg, b.page);
        const ratio = contrast(over(b.fg, `rgb(${bg.join(',')})`), bg);
        if (ratio < 4.5) failures.push(`${theme}, ${b.status}: ${b.fg} on ${b.bg} is ${ratio.toFixed(2)}:1`);
        if (runId === 'tiny-cpu-b' && theme === 'Default Dark Modern')
          await vscode.screenshotEditor('docs-dashboard-dark-modern');
      }
    }
    await vscode.setColorTheme('Light Modern');
    assert.deepEqual(failures, []);
  });
});

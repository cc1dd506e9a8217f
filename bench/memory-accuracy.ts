// `npm run bench:memory-accuracy`: where the memory estimator stands against the GPU measurements
// in test/fixtures/measured/ — per point, the error of the allocator peak, of each phase's peak and
// of the reserved peak, then medians and worst cases. Writes bench/results/memory-accuracy-<date>.md
// and .json with the machine, load, command and commit; `--only TEXT` prints only matching points.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { accuracySummary, comparePoint, harnessHistory, type MeasuredFile, type PointError } from '../core/memory/measured-comparison';

const root = path.resolve(__dirname, '..');
const dir = path.join(root, 'test', 'fixtures', 'measured');
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : '';
const MiB = 1024 * 1024;

const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
const rows: Array<PointError & { file: string; device: string }> = [];
const started = performance.now();
for (const file of files) {
  const data = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as MeasuredFile;
  const history = harnessHistory(data);
  for (const p of data.points) if (p.id.includes(only)) rows.push({ ...comparePoint(p, history.get(p.id)), file, device: data.device });
}
const msPerPoint = (performance.now() - started) / Math.max(1, rows.length);

const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}`;
const mib = (b: number) => (b / MiB).toFixed(0);
const table = [
  '| point | allocated MiB (measured) | error % | forward % | backward % | optimizer % | reserved MiB (measured) | error % |',
  '|---|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) => `| ${r.id} | ${mib(r.allocated.measured)} | ${pct(r.allocated.error)} | ${pct(r.phases.forward.error)} | ${pct(r.phases.backward.error)} | ${pct(r.phases.optimizer.error)} | ${mib(r.reserved.measured)} | ${pct(r.reserved.error)} |`),
];
const summary = accuracySummary(rows);
const targets = { allocated: [0.015, 0.05], forward: [0.03, NaN], backward: [0.03, NaN], optimizer: [0.03, NaN], reserved: [0.05, 0.12] } as const;
const summaryTable = [
  '| peak | median abs. error | target | largest | target | worst point |',
  '|---|---:|---:|---:|---:|---|',
  ...(Object.keys(targets) as Array<keyof typeof targets>).map((k) => {
    const s = summary[k];
    const [med, max] = targets[k];
    return `| ${k} | ${(s.median * 100).toFixed(2)} % | ≤ ${med * 100} % | ${(s.max * 100).toFixed(2)} % | ${Number.isNaN(max) ? '—' : `≤ ${max * 100} %`} | ${s.worst} |`;
  }),
];
console.log(table.join('\n'));
console.log();
console.log(summaryTable.join('\n'));
console.log(`\n${rows.length} points, ${msPerPoint.toFixed(1)} ms per estimate`);

if (!only) {
  const commit = (() => {
    try {
      return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    } catch {
      return 'unknown';
    }
  })();
  const date = new Date().toISOString().slice(0, 10);
  const machine = { cpu: os.cpus()[0]?.model, cores: os.cpus().length, node: process.version, loadAverage1m: +os.loadavg()[0].toFixed(2) };
  const command = 'npm run bench:memory-accuracy';
  const base = path.join(root, 'bench', 'results', `memory-accuracy-${date}`);
  mkdirSync(path.dirname(base), { recursive: true });
  writeFileSync(`${base}.json`, `${JSON.stringify({ date, command, commit, machine, fixtures: [...new Set(rows.map((r) => `${r.file} (${r.device})`))], summary, points: rows }, null, 2)}\n`);
  const md = [
    `# Memory estimator vs measured GPU memory, ${date}`,
    '',
    `Command: \`${command}\` at commit ${commit}. Fixtures: ${[...new Set(rows.map((r) => `\`${r.file}\` (${r.device})`))].join(', ')}. Machine: ${machine.cpu}, ${machine.cores} cores, Node ${machine.node}; 1-minute load average ${machine.loadAverage1m}; ${msPerPoint.toFixed(1)} ms per estimate.`,
    '',
    'Errors are (estimate − measured) / measured. Allocated: torch.cuda.max_memory_allocated over steps 2–3; phases: each phase\'s peak in step 3; reserved: torch.cuda.max_memory_reserved.',
    '',
    ...summaryTable,
    '',
    ...table,
    '',
  ].join('\n');
  writeFileSync(`${base}.md`, md);
  console.log(`wrote ${path.relative(root, base)}.md and .json`);
}

// The NaN diagnostics view, webview side: the anomaly's place (phase, layer, op), what the policy
// did, the dump's tables with a bar chart of the telling column, and the usual fixes with buttons.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import type {
  AnomalyView,
  DiagnosticsFrameMessage,
  DiagnosticsFromWebview,
  DiagnosticsState,
  DiagnosticsToWebview,
  DumpTable,
} from '../../core/panels/diagnostics-messages';
import { roundForDisplay } from '../../core/runs/number-format';
import { codeParagraph } from '../shared/code-text';
import { connectToHost } from '../shared/vscode-api';
import './style.css';

const host = connectToHost<DiagnosticsFromWebview, DiagnosticsToWebview, DiagnosticsState>();
const app = document.getElementById('app')!;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, cls?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function render(m: DiagnosticsFrameMessage): void {
  host.setState({ target: m.run.target, runDir: m.run.runDir });
  app.replaceChildren();
  app.append(el('h1', `NaN diagnostics — ${m.run.name}`));
  if (m.anomalies.length === 0) {
    app.append(
      el('p', 'This run has reported no NaN or Inf. (Loss spikes are in their own view: FSDP: Show spikes.)', 'muted'),
    );
    return;
  }
  if (m.anomalies.length > 1) {
    const list = el('div', undefined, 'anomaly-list');
    m.anomalies.forEach((a, i) => {
      // Every rank reports what it saw: the rank tells the rows apart.
      const rank = a.event.where.rank !== undefined ? `rank ${a.event.where.rank}, ` : '';
      const b = el('button', `${rank}step ${a.event.step}: ${a.summary}`, i === m.selected ? 'selected' : '');
      b.addEventListener('click', () => host.send({ type: 'select', index: i }));
      list.append(b);
    });
    app.append(list);
  }
  renderAnomaly(m.anomalies[m.selected], m.selected);
}

function renderAnomaly(a: AnomalyView, index: number): void {
  const e = a.event;
  const where = el('section', undefined, 'where');
  where.append(
    el(
      'h2',
      a.scalar
        ? `${a.scalar.tag}: ${a.scalar.value} from step ${e.step}`
        : `${e.kind === 'nan' ? 'NaN' : 'Inf'} at step ${e.step}`,
    ),
  );
  const dl = el('dl', undefined, 'facts');
  const fact = (k: string, v: string | number | null | undefined, id?: string) => {
    if (v === undefined || v === null) return;
    const dd = el('dd', String(v));
    if (id) dd.id = id;
    dl.append(el('dt', k), dd);
  };
  if (a.scalar) {
    // A logged value: its tag and where it was read, no place in the network.
    fact('metric', a.scalar.tag, 'where-tag');
    fact('first step', e.step, 'where-step');
    fact('read from', a.scalar.source, 'where-source');
  } else {
    fact('phase', e.where.phase, 'where-phase');
    fact('layer', e.where.layer, 'where-layer');
    fact('operation', e.where.op, 'where-op');
    fact('parameter', e.where.param);
  }
  fact('rank', e.where.rank, 'where-rank');
  const policy = codeParagraph(a.policy);
  policy.classList.add('policy');
  if (a.scalar) where.append(dl, el('p', a.summary, 'summary'), policy);
  else where.append(dl, policy);
  app.append(where);

  const dump = el('section', undefined, 'dump');
  dump.append(el('h2', 'Dump'));
  if (a.dumpPath) {
    const open = el('vscode-button', a.dumpPath) as HTMLElement;
    open.setAttribute('secondary', '');
    open.addEventListener('click', () => host.send({ type: 'openDump', index }));
    dump.append(open);
  }
  if (a.dumpError) dump.append(el('p', a.dumpError, 'error'));
  else if (a.scalar) dump.append(el('p', 'A logged value has no dump.', 'muted'));
  else if (!a.dumpPath) dump.append(el('p', 'The runtime wrote no dump for this anomaly.', 'muted'));
  for (const t of a.tables) dump.append(renderTable(t));
  app.append(dump);

  const fixes = el('section', undefined, 'fixes');
  fixes.append(el('h2', 'Usual fixes'));
  for (const f of a.fixes) {
    const row = el('div', undefined, 'fix');
    const text = el('div');
    text.append(el('strong', f.title), codeParagraph(f.detail));
    row.append(text);
    if (f.action) {
      const b = el('vscode-button', f.action) as HTMLElement;
      b.addEventListener('click', () => host.send({ type: 'fix', id: f.id, index }));
      row.append(b);
    }
    fixes.append(row);
  }
  app.append(fixes);
}

function renderTable(t: DumpTable): HTMLElement {
  const wrap = el('div', undefined, 'table-wrap');
  wrap.append(el('h3', t.title));
  const table = el('table');
  const head = el('tr');
  for (const c of t.columns) head.append(el('th', c));
  if (t.chartColumn) head.append(el('th', `${t.chartColumn}, log scale`));
  table.append(head);
  const ci = t.chartColumn ? t.columns.indexOf(t.chartColumn) : -1;
  const magnitudes = ci >= 0 ? t.rows.map((r) => (typeof r[ci] === 'number' ? Math.abs(r[ci] as number) : 0)) : [];
  const finite = magnitudes.filter(Number.isFinite);
  const top = Math.max(1e-30, ...finite);
  t.rows.forEach((r, i) => {
    const tr = el('tr', undefined, i === t.highlightRow ? 'highlight' : '');
    for (const v of r) tr.append(el('td', v === null ? '–' : typeof v === 'number' ? formatNumber(v) : v));
    if (ci >= 0) {
      const td = el('td', undefined, 'bar-cell');
      const bar = el('div', undefined, Number.isFinite(magnitudes[i]) ? 'bar' : 'bar nonfinite');
      // Log scale: magnitudes that matter span many orders.
      const frac = Number.isFinite(magnitudes[i]) ? Math.max(0.02, Math.log1p(magnitudes[i]) / Math.log1p(top)) : 1;
      bar.style.width = `${(frac * 100).toFixed(1)}%`;
      td.append(bar);
      tr.append(td);
    }
    table.append(tr);
  });
  wrap.append(table);
  return wrap;
}

function formatNumber(v: number): string {
  return roundForDisplay(v, 5);
}

host.listen((m) => {
  if (m.type === 'diagnostics') render(m);
});

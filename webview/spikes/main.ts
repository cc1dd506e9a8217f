// The spike view, webview side: the run's spikes (loss first) as a list, and for the one chosen its
// facts with values rounded, what happened to the step, the loss and gradient norm around it, and
// the usual fixes with buttons.
import '@vscode-elements/elements/dist/vscode-button/index.js';
import type {
  SpikeEntry,
  SpikeFrameMessage,
  SpikeFromWebview,
  SpikeState,
  SpikeToWebview,
} from '../../core/panels/spike-messages';
import { ChartCard } from '../shared/chart-card';
import { codeParagraph } from '../shared/code-text';
import { connectToHost } from '../shared/vscode-api';
import '../run-dashboard/style.css';
import './style.css';

const host = connectToHost<SpikeFromWebview, SpikeToWebview, SpikeState>();
const app = document.getElementById('app')!;
const cards = new Map<string, ChartCard>();
let last: SpikeFrameMessage | undefined;
let openGroup = false;

app.innerHTML = `
  <h1 id="spikes-title">Spikes</h1>
  <p class="muted intro">Loss spikes first: a jump of the training loss far above its recent level. Gradient-norm excursions that clipping absorbed are listed after them, as markers, not warnings.</p>
  <div id="spike-list" class="spike-list"></div>
  <section id="spike-detail" class="spike-detail">
    <h2 id="spike-heading"></h2>
    <dl id="spike-facts" class="facts"></dl>
    <p id="spike-outcome" class="policy"></p>
    <div id="spike-charts" class="charts"></div>
    <section class="fixes"><h2>Usual fixes</h2><div id="spike-fixes"></div></section>
  </section>`;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, cls?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

const $ = (id: string) => document.getElementById(id)!;

function render(m: SpikeFrameMessage): void {
  last = m;
  const shown = m.spikes[m.selected];
  host.setState({ target: m.run.target, runDir: m.run.runDir, ...(shown ? { step: shown.step } : {}) });
  $('spikes-title').textContent = `Spikes — ${m.run.name}`;
  const list = $('spike-list');
  const button = (s: SpikeEntry, i: number) => {
    const b = el(
      'button',
      `step ${s.step}: ${s.summary}`,
      `spike ${s.metric} ${s.alert}${i === m.selected ? ' selected' : ''}`,
    );
    b.addEventListener('click', () => host.send({ type: 'select', index: i }));
    return b;
  };
  const loss = m.spikes.flatMap((s, i) => (s.metric === 'loss' ? [button(s, i)] : []));
  const grad = m.spikes.flatMap((s, i) => (s.metric === 'grad_norm' ? [button(s, i)] : []));
  list.replaceChildren(...loss);
  if (!loss.length && m.spikes.length) list.append(el('p', 'No loss spike.', 'muted'));
  if (grad.length) {
    // Excursions clipping absorbed are many in a long run and need nothing: folded unless looked at.
    const group = el('details', undefined, 'grad-group');
    group.open = !loss.length || shown?.metric === 'grad_norm' || openGroup;
    group.addEventListener('toggle', () => (openGroup = group.open));
    const clipped = m.spikes.filter((s) => s.metric === 'grad_norm' && s.alert === 'marker').length;
    const buttons = el('div', undefined, 'grad-buttons');
    buttons.append(...grad);
    group.append(
      el(
        'summary',
        `${grad.length} gradient-norm excursion${grad.length > 1 ? 's' : ''}${clipped ? `, ${clipped === grad.length ? 'all' : clipped} absorbed by clipping` : ''}`,
      ),
      buttons,
    );
    list.append(group);
  }
  $('spike-detail').hidden = !shown;
  if (!shown) {
    list.replaceChildren(el('p', 'This run has no loss spike and no grad-norm excursion.', 'muted'));
    return;
  }
  renderDetail(shown, m);
}

function renderDetail(s: SpikeEntry, m: SpikeFrameMessage): void {
  $('spike-heading').textContent =
    `${s.metric === 'loss' ? 'Loss spike' : s.alert === 'marker' ? 'Gradient-norm excursion, clipped' : 'Gradient-norm spike'} at step ${s.step}`;
  const facts = $('spike-facts');
  facts.replaceChildren(
    ...s.facts.flatMap(([k, v]) => [el('dt', k), Object.assign(el('dd', v), { id: `fact-${k.replace(/\W+/g, '-')}` })]),
  );
  $('spike-outcome').textContent = s.outcome;
  for (const c of m.charts) {
    let card = cards.get(c.id);
    if (!card) {
      card = new ChartCard({
        id: c.id,
        title: c.title,
        unit: c.unit,
        height: 180,
        y: { log: false, clip: false },
        onRange: () => undefined,
        onYOptions: () => undefined,
        onPng: () => undefined,
      });
      cards.set(c.id, card);
      $('spike-charts').append(card.element);
    }
    card.update(c, null, m.xAxis);
  }
  const fixes = $('spike-fixes');
  fixes.replaceChildren(
    ...m.fixes.map((f) => {
      const row = el('div', undefined, 'fix');
      const text = el('div');
      text.append(el('strong', f.title), codeParagraph(f.detail));
      row.append(text);
      if (f.action) {
        const b = el('vscode-button', f.action) as HTMLElement;
        b.addEventListener('click', () => host.send({ type: 'fix', id: f.id }));
        row.append(b);
      }
      return row;
    }),
  );
}

new ResizeObserver(() => {
  for (const c of cards.values()) c.chart.resize();
}).observe($('spike-charts'));

// For tests: what the view shows.
Object.assign(window, {
  fsdpSpikes: {
    title: () => (last ? document.title || $('spikes-title').textContent : undefined),
    heading: () => (last ? $('spikes-title').textContent : undefined),
    spikes: () => last?.spikes,
    selected: () => (last ? last.spikes[last.selected] : undefined),
    facts: () =>
      last
        ? Object.fromEntries(
            [...$('spike-facts').querySelectorAll('dt')].map((dt) => [
              dt.textContent,
              dt.nextElementSibling?.textContent,
            ]),
          )
        : undefined,
  },
});

host.listen((m) => {
  if (m.type === 'spikes') render(m);
});

// The runs view's tooltip is plain text (extension/views/run-tooltip.ts): a run's name as written,
// whatever Markdown it holds, never a link or a remote image.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runTooltip } from '../../extension/views/run-tooltip';

const root = path.resolve(__dirname, '..', '..');

describe("the runs view's tooltip", () => {
  it('shows a hostile name, host and reason exactly as written, one fact a line', () => {
    const title = '**big** [click](https://evil.example/x) ![](https://evil.example/pixel.png) <img src=x>';
    const tip = runTooltip({
      title,
      target: 'this machine',
      runId: 'r-20261207-000000-abcd',
      started: '7 Dec 00:00',
      runDir: '/w/runs/r-20261207-000000-abcd',
      reason: 'failed: see [here](https://evil.example)',
    });
    assert.equal(typeof tip, 'string', 'a string tooltip: VS Code shows it as text, not Markdown');
    assert.deepEqual(tip.split('\n'), [
      `${title} — this machine`,
      'id r-20261207-000000-abcd, started 7 Dec 00:00',
      '/w/runs/r-20261207-000000-abcd',
      '',
      'failed: see [here](https://evil.example)',
    ]);
    assert.equal(runTooltip({ title: 't', target: 'gpu-box', runId: 'i', runDir: '/d' }), 't — gpu-box\nid i\n/d');
  });

  it('no view of the extension builds a Markdown tooltip or label from run facts', () => {
    const dir = path.join(root, 'extension', 'views');
    const markdown = readdirSync(dir).filter((f) =>
      /MarkdownString|appendMarkdown/.test(readFileSync(path.join(dir, f), 'utf8')),
    );
    assert.deepEqual(markdown, []);
  });
});

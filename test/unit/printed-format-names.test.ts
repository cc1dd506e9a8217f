// The dashboard's header says what a command's metrics were read from as "<format> lines in
// stdout.log" (extension/webviews/run-dashboard-header.ts): each format's name reads in that
// sentence (issue 39, item 5: it said "key=value pairs with a step lines").
import assert from 'node:assert/strict';
import { FORMAT_NAMES, PrintedMetricsReader } from '../../runs/watch/decoders/printed/recognisers';

describe('printed formats as the header names them', () => {
  it('a line of key=value pairs with a step is read as "key=value lines"', () => {
    const step = new PrintedMetricsReader().read('step=12 loss=2.5 lr=3e-4');
    assert.equal(step?.format, 'pairs');
    assert.equal(`${FORMAT_NAMES[step.format]} lines in stdout.log`, 'key=value lines in stdout.log');
  });

  it('no format name already says "lines" (the header adds it)', () => {
    for (const name of Object.values(FORMAT_NAMES)) assert.doesNotMatch(name, /\blines?\b/, name);
  });
});

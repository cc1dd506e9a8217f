// "Check environment" and the samples' placeholder hosts (issue 39, item 5): a host the config's
// own comment calls a placeholder is not set up yet, not a failure.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { callsPlaceholder } from '../../core/config/placeholder-host';

const sample = (name: string) => readFileSync(path.join(__dirname, '..', '..', 'samples', name), 'utf8');

describe('placeholder hosts', () => {
  it("the samples' SSH and SLURM targets are placeholders, as their comments say", () => {
    assert.equal(callsPlaceholder(sample('tiny-ssh.yaml'), 'gpu-box'), true);
    assert.equal(callsPlaceholder(sample('tiny-slurm.yaml'), 'my-cluster'), true);
  });

  it('a host the comment does not call a placeholder, or another host, is a real one', () => {
    assert.equal(callsPlaceholder(sample('tiny-ssh.yaml'), 'my-cluster'), false);
    assert.equal(callsPlaceholder('launch:\n  target: gpu-box\n', 'gpu-box'), false);
    assert.equal(callsPlaceholder('# "gpu.box" is a\n# placeholder\n', 'gpu.box'), true, 'wrapped over comment lines');
    assert.equal(callsPlaceholder('# "gpuxbox" is a placeholder\n', 'gpu.box'), false, 'the dot is a dot');
  });
});

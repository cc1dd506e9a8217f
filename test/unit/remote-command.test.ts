import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { checkHostAlias, commandLine, quotePath, quoteWord } from '../../core/remote/remote-command';

// What a POSIX shell makes of a command line: the words it passes to printf.
function shellWords(line: string, home = '/home/u'): string[] {
  const r = spawnSync('/bin/sh', ['-c', `printf '%s\\0' ${line}`], {
    encoding: 'utf8',
    env: { HOME: home, PATH: process.env.PATH },
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\0').slice(0, -1);
}

describe('remote command lines', () => {
  const hostile = [
    'plain',
    'with space',
    "it's",
    '"double"',
    'a;b',
    '$(touch /tmp/pwned-fsdp)',
    '`id`',
    'x\ny',
    '',
    '-rf',
    '*',
    '~',
    'back\\slash',
    'ünïcode ✓',
    "'; rm -rf ~; '",
  ];

  it('every word reaches the remote shell as one literal word', () => {
    const line = commandLine(hostile);
    assert.deepEqual(shellWords(line), hostile);
  });

  it('expands a leading ~/ to the remote home and keeps the rest literal', () => {
    assert.deepEqual(shellWords(quotePath('~/runs/my run;$(x)')), ['/home/u/runs/my run;$(x)']);
    assert.deepEqual(shellWords(quotePath('~')), ['/home/u']);
    assert.deepEqual(shellWords(quotePath('/abs/~/x')), ['/abs/~/x']);
  });

  it('joins shell syntax written by the code base as it is', () => {
    assert.equal(commandLine(['echo', 'a b', { raw: '>' }, { path: '~/out' }]), `echo 'a b' > "$HOME"/out`);
  });

  it('refuses NUL bytes', () => {
    assert.throws(() => quoteWord('a\0b'), /NUL/);
  });

  it('rejects host aliases that ssh would misread or a shell could run', () => {
    for (const bad of ['-oProxyCommand=id', 'my host', 'a;b', '$(id)', 'h`id`', "o'brien", '"q"', '']) {
      assert.ok(checkHostAlias(bad), `accepted ${JSON.stringify(bad)}`);
    }
    for (const ok of ['gpu-box', 'user@10.0.0.1', 'node_1.cluster', '[::1]:2222'])
      assert.equal(checkHostAlias(ok), undefined, ok);
  });
});

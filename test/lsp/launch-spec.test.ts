// Launch specs (*.fsdp-launch.yaml) checked by the language server over stdio, as in the editor:
// unknown keys, the command's words, a remote spec without its folder; a good spec has no problem.
import assert from 'node:assert/strict';
import { LanguageServerClient } from './harness/language-server-client';

describe('language server over stdio: launch specs for your own command', function () {
  this.timeout(60_000);

  it('reports what is wrong with a launch spec where it is, and nothing for a good one', async () => {
    const server = await LanguageServerClient.start();
    try {
      const bad = await server.open(
        'file:///w/train.fsdp-launch.yaml',
        'command: torchrun --nproc_per_node 2 train.py > log.txt\nlogs: {tensorbord: runs}\n',
      );
      assert.deepEqual(
        bad.map((d) => [d.code, d.range.start.line]),
        [['schema.unknown-key', 1]],
        'the schema first: an unknown key',
      );
      const shell = await server.open(
        'file:///w/b.fsdp-launch.yaml',
        'command: torchrun --nproc_per_node 2 train.py > log.txt\n',
      );
      assert.deepEqual(
        shell.map((d) => [d.code, d.range.start.line]),
        [['launch.command', 0]],
      );
      assert.match(String(shell[0].message), /">" at character 38: a launch spec runs one command without a shell/);
      const host = await server.open(
        'file:///w/c.fsdp-launch.yaml',
        'command: python3 /code/train.py\ntarget: gpu-box\n',
      );
      assert.deepEqual(
        host.map((d) => d.code),
        ['launch.remote-cwd'],
      );
      const good = await server.open(
        'file:///w/d.fsdp-launch.yaml',
        'command: [torchrun, --nproc_per_node, "2", /code/train.py]\ntarget: gpu-box\ncwd: ~/code\nlogs: {tensorboard: runs}\n',
      );
      assert.deepEqual(good, []);
    } finally {
      await server.stop();
    }
  });
});

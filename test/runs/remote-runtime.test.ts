// The runtime on an SSH host, against a real sshd on 127.0.0.1: first use copies the native
// sources and builds them there with the host's CMake and compiler; the second finds the build by
// its content hash; data files travel once; a host without the build tools gets a message that
// names them and the packages to install.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RemoteRuntimeInstaller, sourceHash } from '../../extension/runs/remote-runtime';
import { repoRoot } from '../../scripts/code-server';
import { LoopbackSshd, SHARED_REMOTE_BASE } from '../harness/sshd';


describe('the runtime on an SSH host (real sshd on 127.0.0.1)', function () {
  this.timeout(15 * 60_000);
  let sshd: LoopbackSshd;
  let base: string;
  const log: string[] = [];

  before(async () => {
    sshd = await LoopbackSshd.start();
    base = SHARED_REMOTE_BASE;
    // First use: no runtime of these sources on the host yet (the launch tests reuse this build).
    rmSync(path.join(base, 'runtime'), { recursive: true, force: true });
    rmSync(path.join(base, 'data'), { recursive: true, force: true });
  });
  after(async () => {
    await sshd?.stop();
  });

  it('builds the runtime on first use with the host tools, then finds it by content hash', async () => {
    const installer = new RemoteRuntimeInstaller(sshd.alias, () => ({ configFile: sshd.clientConfig }), repoRoot);
    const first = await installer.ensure(base, (m) => log.push(m));
    assert.equal(first.built, true);
    assert.ok(first.binary.includes(`/runtime/${sourceHash(repoRoot).slice(0, 16)}/`), first.binary);
    assert.ok(log.some((m) => /building the runtime/.test(m)), log.join('\n'));
    const version = JSON.parse(sshd.exec(`'${first.binary}' --version`)) as { capabilities: string[] };
    assert.ok(version.capabilities.includes('probe'));
    const t0 = Date.now();
    const second = await installer.ensure(base, (m) => log.push(`second: ${m}`));
    assert.deepEqual(second, { binary: first.binary, built: false });
    assert.ok(Date.now() - t0 < 20_000, 'the cached runtime is found without building');
    assert.ok(!log.some((m) => m.startsWith('second:')), 'nothing copied or built the second time');
  });

  it('copies a data file once, by content, and keeps its bytes', async () => {
    const installer = new RemoteRuntimeInstaller(sshd.alias, () => ({ configFile: sshd.clientConfig }), repoRoot);
    const local = path.join(repoRoot, 'samples', 'data', 'fortunes-byte-val.tok');
    const copied: string[] = [];
    const remote = await installer.ensureFile(base, local, (m) => copied.push(m));
    assert.deepEqual(readFileSync(remote), readFileSync(local));
    assert.equal(copied.length, 1);
    assert.equal(await installer.ensureFile(base, local, (m) => copied.push(m)), remote);
    assert.equal(copied.length, 1, 'the second time nothing is copied');
  });

  it('says which tools a host lacks and how to install them', async () => {
    // A host whose PATH has a shell and tail but no compiler, CMake or make.
    const bin = mkdtempSync(path.join(os.tmpdir(), 'fsdp-poor-host-'));
    for (const tool of ['sh', 'tail', 'tar', 'setsid', 'mkdir', 'rm', 'test']) {
      const found = spawnSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
      if (found.startsWith('/')) symlinkSync(found, path.join(bin, tool));
    }
    const poor = await LoopbackSshd.start({ alias: 'poor-host', setEnv: { PATH: bin } });
    try {
      const sources = mkdtempSync(path.join(os.tmpdir(), 'fsdp-src-'));
      mkdirSync(path.join(sources, 'native'));
      mkdirSync(path.join(sources, 'core', 'schemas'), { recursive: true });
      writeFileSync(path.join(sources, 'native', 'CMakeLists.txt'), 'project(x)\n');
      const installer = new RemoteRuntimeInstaller(poor.alias, () => ({ configFile: poor.clientConfig }), sources);
      await assert.rejects(installer.ensure(base, () => undefined), /poor-host lacks cmake, c\+\+, make, pkg-config.*apt-get install cmake g\+\+ make pkg-config/);
      rmSync(sources, { recursive: true, force: true });
    } finally {
      await poor.stop();
      rmSync(bin, { recursive: true, force: true });
    }
  });
});

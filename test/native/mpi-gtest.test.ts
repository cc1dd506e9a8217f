// Runs fsdp-mpi-tests (native/test/mpi/) under real mpirun with 2 and 4 ranks: collectives through
// host staging (what a GPU without NCCL, or ranks sharing one GPU, use) against MPI's own in every
// element type, 16-bit sums rounded as a GPU rounds them, every strategy training bit for bit the
// same through the staging as over MPI directly, gradients reduced in reduce_dtype, sharded
// parameters gathered in param_dtype, control values kept off the device collectives.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { mpirunArgv } from '../../runs/launch/mpirun';
import { buildDir } from './native-build';

const binary = path.join(buildDir, 'fsdp-mpi-tests');

describe('native runtime: model states and staged collectives under mpirun (CPU buffers)', function () {
  this.timeout(300_000);

  before(function () {
    if (spawnSync('mpirun', ['--version'], { encoding: 'utf8' }).status !== 0) {
      console.log('    no mpirun on this machine: install openmpi-bin (scripts/setup/system-packages.mjs)');
      this.skip();
    }
    assert.ok(
      existsSync(binary),
      `${binary} is missing: is libopenmpi-dev installed? (the runtime builds it where MPI and GoogleTest are found)`,
    );
  });

  for (const ranks of [2, 4]) {
    it(`passes every case on ${ranks} ranks`, () => {
      const argv = mpirunArgv({ nprocPerNode: ranks, nnodes: 1 }, [binary, '--gtest_color=no'], {
        asRoot: process.getuid?.() === 0,
      });
      const r = spawnSync(argv[0], argv.slice(1), {
        encoding: 'utf8',
        env: { ...process.env, OMP_NUM_THREADS: '1', OMP_WAIT_POLICY: 'passive' },
        timeout: 240_000,
      });
      const out = `${r.stdout}\n${r.stderr}`;
      const failures = out
        .split('\n')
        .filter(
          (l) =>
            /^\[ {2}FAILED {2}\] \w/.test(l) || /Failure$/.test(l) || /^Expected|^ {2}Actual|Which is|error:/.test(l),
        );
      assert.equal(
        r.status,
        0,
        `fsdp-mpi-tests on ${ranks} ranks failed (exit ${r.status ?? r.signal}):\n${failures.join('\n') || out.slice(-6000)}`,
      );
      const passed = /\[ {2}PASSED {2}\] (\d+) tests?/.exec(out);
      assert.ok(passed && Number(passed[1]) >= 16, `expected the whole suite to run:\n${out.slice(-3000)}`);
    });
  }
});

import assert from 'node:assert/strict';
import { mpirunArgv } from '../../runs/launch/mpirun';

/** The value after an option in an argument vector. */
function after(argv: string[], option: string): string | undefined {
  const i = argv.indexOf(option);
  return i < 0 ? undefined : argv[i + 1];
}

describe('mpirun across named hosts', () => {
  const trainer = [
    '/opt/fsdp/runtime/abc/fsdp-train-native',
    '--config',
    '/runs/r/config.json',
    '--run-dir',
    '/runs/r',
  ];

  it('8 GPUs on each of 4 hosts: 32 ranks, 8 slots and 8 ranks per host, in the order given (rank 0 on the first)', () => {
    const argv = mpirunArgv({ nprocPerNode: 8, nnodes: 4 }, trainer, {
      asRoot: false,
      exported: ['OMP_WAIT_POLICY'],
      hosts: ['gpu-node-01', 'gpu-node-02', '10.0.0.13', 'gpu-node-04.cluster.example'],
    });
    assert.equal(argv[0], 'mpirun');
    assert.equal(after(argv, '-n'), '32');
    assert.equal(after(argv, '--host'), 'gpu-node-01:8,gpu-node-02:8,10.0.0.13:8,gpu-node-04.cluster.example:8');
    assert.equal(after(argv, '--map-by'), 'ppr:8:node');
    assert.ok(!argv.includes('--oversubscribe'), 'hosts are mapped by their slots, not oversubscribed');
    assert.ok(!argv.includes('--allow-run-as-root'));
    assert.equal(after(argv, '-x'), 'OMP_WAIT_POLICY');
    assert.deepEqual(argv.slice(-trainer.length), trainer, 'the trainer and its arguments last, as they are');
  });

  it('one rank on each of 2 hosts (HYBRID_SHARD: one shard group per host), as root', () => {
    const argv = mpirunArgv({ nprocPerNode: 1, nnodes: 2 }, trainer, { asRoot: true, hosts: ['a', 'b'] });
    assert.equal(after(argv, '-n'), '2');
    assert.equal(after(argv, '--host'), 'a:1,b:1');
    assert.ok(argv.includes('--allow-run-as-root'));
  });

  it('without named hosts several nodes come from the MPI host file; one node oversubscribes', () => {
    assert.equal(after(mpirunArgv({ nprocPerNode: 2, nnodes: 3 }, trainer, { asRoot: false }), '--host'), undefined);
    assert.ok(mpirunArgv({ nprocPerNode: 4, nnodes: 1 }, trainer, { asRoot: false }).includes('--oversubscribe'));
  });

  it('refuses a host count other than the node count, and names mpirun would misread', () => {
    assert.throws(
      () => mpirunArgv({ nprocPerNode: 1, nnodes: 3 }, trainer, { asRoot: false, hosts: ['a', 'b'] }),
      /2 hosts for a job of 3 nodes/,
    );
    for (const bad of ['-x', 'a,b', 'a:4', 'fe80::1', 'h o', '']) {
      assert.throws(
        () => mpirunArgv({ nprocPerNode: 1, nnodes: 2 }, trainer, { asRoot: false, hosts: [bad, 'b'] }),
        /not a host name/,
        bad,
      );
    }
  });
});

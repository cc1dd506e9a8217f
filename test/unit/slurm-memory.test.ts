import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadRunConfig } from '../../core/config/run-config';
import { jobMemoryCheck } from '../../runs/slurm/slurm-memory';
import { estimateMemory } from '../../core/memory/estimate';
import { findGpu } from '../../core/memory/gpu-presets';
import { isConfigInputError } from '../../core/memory/inputs/config-input';
import { readConfigForEstimate } from '../../core/memory/inputs/read-config';
import { repoRoot } from '../../scripts/code-server';

const GiB = 2 ** 30;

/** A 1.3B-parameter GPT as a SLURM job: `launch` replaces the sample's launch section. */
function job(launch: string): { text: string; file: string } {
  const text = readFileSync(path.join(repoRoot, 'samples', 'tiny-cpu.yaml'), 'utf8')
    .replace(/d_model: 128/, 'd_model: 2048')
    .replace(/n_layers: 4/, 'n_layers: 24')
    .replace(/n_heads: 4\n/, 'n_heads: 16\n')
    .replace(/vocab_size: 256/, 'vocab_size: 50304')
    .replace(/max_seq_len: 128/, 'max_seq_len: 2048')
    .replace(/seq_len: 128/, 'seq_len: 2048')
    .replace(/batch_size_per_gpu: 16/, 'batch_size_per_gpu: 4')
    .replace(/sharding_strategy: NO_SHARD/, 'sharding_strategy: FULL_SHARD')
    .replace(/launch:[\s\S]*$/, launch);
  return { text, file: path.join(repoRoot, 'samples', 'job.yaml') };
}

function check(launch: string, partition: Parameters<typeof jobMemoryCheck>[3]) {
  const { text, file } = job(launch);
  const { config, problems } = loadRunConfig(text, file);
  assert.ok(config, JSON.stringify(problems));
  return jobMemoryCheck(text, file, config, partition);
}

describe('memory check before a SLURM submission', () => {
  it("per rank at the job's world size, against the GPU type the partition's GRES names", () => {
    const eight = check('launch:\n  device: cuda\n  nproc_per_node: 8\n  slurm: {partition: gpu}\n', {
      name: 'gpu',
      gpuType: 'h100',
    });
    const thirtyTwo = check('launch:\n  device: cuda\n  nproc_per_node: 8\n  nnodes: 4\n  slurm: {partition: gpu}\n', {
      name: 'gpu',
      gpuType: 'h100',
    });
    assert.ok(
      eight.perRankBytes! > thirtyTwo.perRankBytes!,
      'FULL_SHARD over 32 ranks holds less per rank than over 8',
    );
    assert.equal(eight.capacityBytes, findGpu('H100-80GB')!.memoryBytes, 'an H100 80GB');
    assert.match(thirtyTwo.message, /per rank at 32 ranks .* H100 80GB .* on partition gpu/);
    // The same figure the estimator gives for that world and GPU.
    const { text, file } = job('launch:\n  device: cuda\n  nproc_per_node: 8\n  nnodes: 4\n  gpu: H100-80GB\n');
    const read = readConfigForEstimate(text, file, {}, 'run-config');
    assert.ok(!isConfigInputError(read));
    assert.equal(thirtyTwo.perRankBytes, estimateMemory(read.input).peak.total);
  });

  it('does not fit a small GPU, and says how much more it needs', () => {
    const r = check('launch:\n  device: cuda\n  nproc_per_node: 1\n  slurm: {}\n', { name: 'debug', gpuType: 'l4' });
    assert.equal(r.fits, false, r.message);
    assert.match(r.message, /does not fit: .* more than L4 24GB/);
  });

  it('launch.gpu names the GPU when the partition does not; an unknown GPU is said, not guessed', () => {
    assert.equal(
      check('launch:\n  device: cuda\n  nproc_per_node: 8\n  gpu: A100-80GB\n  slurm: {}\n', { name: 'p' })
        .capacityBytes,
      findGpu('A100-80GB')!.memoryBytes,
    );
    const unknown = check('launch:\n  device: cuda\n  nproc_per_node: 8\n  slurm: {}\n', {
      name: 'p',
      gpuType: 'mi300x',
    });
    assert.equal(unknown.fits, undefined);
    assert.match(unknown.message, /"mi300x" .* set launch.gpu/);
    assert.match(check('launch:\n  device: cuda\n  slurm: {}\n', { name: 'p' }).message, /does not name its GPU type/);
  });

  it("a CPU job: a node's memory shared by its tasks", () => {
    const fits = check('launch:\n  nproc_per_node: 2\n  slurm: {}\n', { name: 'cpu', memoryBytes: 512 * GiB });
    assert.equal(fits.fits, true, fits.message);
    assert.equal(fits.capacityBytes, 256 * GiB);
    assert.equal(
      check('launch:\n  nproc_per_node: 64\n  slurm: {}\n', { name: 'cpu', memoryBytes: 64 * GiB }).fits,
      false,
    );
    assert.equal(
      check('launch:\n  nproc_per_node: 2\n  slurm: {}\n', { name: 'cpu' }).fits,
      undefined,
      'memory not configured: nothing said',
    );
  });
});

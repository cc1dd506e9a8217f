// The Llama family trained end to end by `npx fsdp-train` on the CPU (issue 35 item 1): a tiny
// Llama (grouped-query attention, llama3 rope scaling) and a tiny Qwen3 (q/k norms, head_dim apart
// from d_model / n_heads, untied head). The loss falls; FULL_SHARD over 2 ranks (mpirun, the global
// batch split 4 + 4) gives the 1-rank losses; a resume from a checkpoint, or after a SIGKILL, gives
// bitwise the losses of the uninterrupted run; activation checkpointing (every_n, selective)
// changes no loss bit; every rank's peak memory is, category by category, what the memory plan
// says (native/MEMORY.md); a planted NaN is located at the family's own ops.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import type { MetricsEvent } from '../../core/protocol/metrics';
import {
  eventsOf,
  lossHistory,
  rankPidsOf,
  readEvents,
  smallConfig,
  startTrain,
  tempDir,
  train,
  writeConfig,
} from './train-runs';
import { maxRelativeDifference, stepsByRank } from './sharding-runs';

const STEPS = 8;
const CATEGORIES = ['params', 'grads', 'optimizer', 'activations', 'workspace', 'comm', 'other'] as const;

const LLAMA = {
  architecture: 'llama',
  d_model: 32,
  n_layers: 2,
  n_heads: 4,
  n_kv_heads: 2,
  intermediate_size: 64,
  vocab_size: 256,
  max_seq_len: 32,
  rope_scaling: {
    rope_type: 'llama3',
    factor: 8,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 16,
  },
};

const QWEN3 = {
  architecture: 'qwen3',
  d_model: 32,
  n_layers: 2,
  n_heads: 4,
  n_kv_heads: 2,
  head_dim: 12,
  intermediate_size: 48,
  vocab_size: 256,
  max_seq_len: 32,
  tie_embeddings: false,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
};

/** A config of `model` whose global batch is 8 sequences at any rank count; checkpoints every 3 steps. */
function familyConfig(
  model: Record<string, unknown>,
  ranks: number,
  extra: Record<string, Record<string, unknown>> = {},
) {
  const config = smallConfig({
    training: { max_steps: STEPS, batch_size_per_gpu: 8 / ranks, learning_rate: 0.01 },
    checkpointing: { save_every_n_steps: 3, keep_last_n: 3 },
    launch: { threads_per_rank: 1 },
    ...extra,
  });
  // smallConfig's model is GPT-2's: the family's keys replace it whole (mlp_ratio, dropout are gpt2-only).
  return { ...config, model };
}

async function run(dir: string, name: string, config: Record<string, unknown>, args: string[] = []) {
  const runDir = path.join(dir, name);
  const file = writeConfig(dir, config, `${name}.json`);
  const r = await train([file, '--run-dir', runDir, ...args]);
  assert.equal(r.code, 0, `${name}: exit ${r.code}\n${r.stderr}`);
  const { events, problems } = await readEvents(runDir);
  assert.deepEqual(problems, [], `${name}: lines the protocol reader rejected`);
  return { runDir, events };
}

/** The run's losses (whole-run step events, restarts applied). */
const lossesOf = (events: MetricsEvent[]) =>
  lossHistory(events.filter((e) => e.type !== 'step' || e.rank === undefined));

function assertFallsAndIsFinite(losses: Map<number, number | null>, name: string): void {
  assert.deepEqual(
    [...losses.keys()],
    Array.from({ length: STEPS }, (_, i) => i + 1),
    name,
  );
  const values = [...losses.values()];
  assert.ok(
    values.every((l) => typeof l === 'number' && Number.isFinite(l)),
    `${name}: a loss is not finite: ${values}`,
  );
  const first = values[0]!;
  const last = values.at(-1)!;
  assert.ok(last < first - 0.3, `${name}: the loss did not fall: ${values.join(', ')}`);
}

function assertPlanIsMeasured(events: MetricsEvent[], name: string): void {
  const planned = eventsOf(events, 'run_start')[0].memory_plan!;
  const wrong: string[] = [];
  for (const [rank, steps] of stepsByRank(events))
    for (const s of steps)
      for (const c of CATEGORIES)
        if (s.mem_peak_by_category![c] !== planned[c])
          wrong.push(
            `${name} rank ${rank} step ${s.step} ${c}: ${s.mem_peak_by_category![c]} measured, ${planned[c]} planned`,
          );
  assert.deepEqual(wrong, []);
}

describe('native runtime: the Llama family trained by fsdp-train on the CPU', function () {
  this.timeout(600_000);
  let dir: string;
  before(() => (dir = tempDir('llama-train')));
  after(() => rmSync(dir, { recursive: true, force: true }));

  let llama1: Map<number, number | null>;

  it('trains a tiny Llama (GQA, llama3 scaling) on one rank: the loss falls, memory as planned', async () => {
    const { events } = await run(dir, 'llama-1', familyConfig(LLAMA, 1));
    llama1 = lossesOf(events);
    assertFallsAndIsFinite(llama1, 'llama 1 rank');
    assertPlanIsMeasured(events, 'llama 1 rank');
    const { model } = eventsOf(events, 'run_start')[0].config as { model: { architecture: string } };
    assert.equal(model.architecture, 'llama');
  });

  it('gives the 1-rank losses under FULL_SHARD at 2 ranks, and bitwise the same after a resume', async () => {
    assert.ok(llama1, 'the 1-rank run (the first case) did not finish');
    const config = familyConfig(LLAMA, 2, { fsdp: { sharding_strategy: 'FULL_SHARD' } });
    const { runDir, events } = await run(dir, 'llama-fsdp2', config, ['--nproc', '2', '--oversubscribe']);
    const sharded = lossesOf(events);
    assertFallsAndIsFinite(sharded, 'llama FULL_SHARD x2');
    // One matrix product over 8 sequences against two over 4 added: the order of sums differs.
    assert.ok(maxRelativeDifference(llama1, sharded) < 1e-5, 'FULL_SHARD x2 strays from 1 rank');
    assertPlanIsMeasured(events, 'llama FULL_SHARD x2');

    // Again from its step-3 checkpoint: steps 4..8 replayed from the saved state, bit for bit.
    const file = writeConfig(dir, config, 'llama-fsdp2.json');
    const checkpoint = path.join(runDir, 'checkpoints', 'step-00000003');
    const r = await train([file, '--run-dir', runDir, '--nproc', '2', '--oversubscribe', '--resume', checkpoint]);
    assert.equal(r.code, 0, r.stderr);
    const resumed = await readEvents(runDir);
    const restart = eventsOf(resumed.events, 'run_start').at(-1)!;
    assert.equal(restart.start_step, 3);
    assert.deepEqual(lossesOf(resumed.events), sharded);
  });

  it('resumes a Llama run SIGKILLed after a checkpoint to bitwise the uninterrupted losses', async () => {
    assert.ok(llama1, 'the 1-rank run (the first case) did not finish');
    const runDir = path.join(dir, 'llama-killed');
    const file = writeConfig(dir, familyConfig(LLAMA, 1), 'llama-killed.json');
    let checkpointed = false;
    let killed = false;
    const { done } = startTrain([file, '--run-dir', runDir], (line) => {
      if (line.includes('"type":"checkpoint"')) checkpointed = true;
      const step = /"type":"step".*?"step":(\d+),/.exec(line) ?? /"step":(\d+),.*?"type":"step"/.exec(line);
      if (killed || !checkpointed || !step || Number(step[1]) < 4) return;
      killed = true;
      process.kill(rankPidsOf(runDir)[0], 'SIGKILL');
    });
    const first = await done;
    assert.ok(killed, `the run ended before it could be killed: ${first.stderr}`);
    assert.equal(first.code, 137, first.stderr);
    const r = await train([file, '--run-dir', runDir, '--resume', 'auto']);
    assert.equal(r.code, 0, r.stderr);
    const { events } = await readEvents(runDir);
    assert.ok(eventsOf(events, 'run_start').length >= 2, 'no restart');
    assert.deepEqual(lossesOf(events), llama1);
  });

  it('trains a tiny Qwen3 (q/k norm, head_dim 12, untied); every_n and selective checkpointing change no bit', async () => {
    const plain = await run(dir, 'qwen3', familyConfig(QWEN3, 1));
    const losses = lossesOf(plain.events);
    assertFallsAndIsFinite(losses, 'qwen3');
    assertPlanIsMeasured(plain.events, 'qwen3');
    for (const policy of ['every_n', 'selective']) {
      const { events } = await run(
        dir,
        `qwen3-${policy}`,
        familyConfig(QWEN3, 1, { activation_checkpointing: { enabled: true, policy, every_n_layers: 1 } }),
      );
      assert.deepEqual(lossesOf(events), losses, policy);
      assertPlanIsMeasured(events, `qwen3 ${policy}`);
      // The policy took effect: it keeps fewer activations than keeping everything.
      const peak = (e: MetricsEvent[]) => eventsOf(e, 'step')[0].mem_peak_by_category!.activations;
      assert.ok(peak(events) < peak(plain.events), `${policy}: ${peak(events)} bytes of activations, not fewer`);
    }
  });
  // The NaN locator names the family's own ops: RoPE in forward, SwiGLU's down product by default in
  // backward, Qwen3's q norm, an optimizer update of gate_up.
  const planted: Array<[Record<string, unknown>, Record<string, unknown>]> = [
    [
      { step: 2, layer: 1, phase: 'forward', op: 'attn.rope' },
      { phase: 'forward', layer: 1, op: 'attn.rope' },
    ],
    [
      { step: 2, layer: 0, phase: 'backward' },
      { phase: 'backward', layer: 0, op: 'mlp.down', param: 'blocks.0.mlp.down.weight' },
    ],
    [
      { step: 2, layer: 1, phase: 'backward', op: 'attn.q_norm' },
      { phase: 'backward', layer: 1, op: 'attn.q_norm', param: 'blocks.1.attn.q_norm.weight' },
    ],
    [
      { step: 2, layer: 1, phase: 'optimizer', op: 'mlp.gate_up' },
      { phase: 'optimizer', layer: 1, op: 'mlp.gate_up', param: 'blocks.1.mlp.gate_up.weight' },
    ],
  ];
  for (const [inject, where] of planted) {
    it(`locates a NaN planted in a Qwen3 ${String(inject.phase)} (${String(inject.op ?? 'default op')})`, async () => {
      const name = `nan-${String(inject.phase)}-${String(inject.op ?? 'default')}`;
      const runDir = path.join(dir, name);
      const file = writeConfig(dir, familyConfig(QWEN3, 1, { debug: { inject_nan: inject } }), `${name}.json`);
      const r = await train([file, '--run-dir', runDir]);
      assert.equal(r.code, 1, r.stderr);
      const { events } = await readEvents(runDir);
      const [anomaly] = eventsOf(events, 'anomaly');
      assert.ok(anomaly, 'no anomaly event');
      assert.equal(anomaly.kind, 'nan');
      assert.equal(anomaly.step, 2);
      assert.deepEqual(anomaly.where, where);
    });
  }
});

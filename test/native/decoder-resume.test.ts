// Bitwise resume after SIGKILL for the decoder family (issue 35 item 5): the tiny Llama (GQA, Llama 3
// rope scaling, untied) and Qwen3 (q/k norm, head_dim apart from d_model / n_heads, tied) of
// test/fixtures/reference/parallel/decoder-fp32.json, on shuffled batches (three epochs of the
// fixture's tokens, so the sampler's reshuffle is resumed too). A Llama run on one rank SIGKILLed at
// random steps, each after a checkpoint, and resumed with --resume auto twice, and a Qwen3 run
// FULL_SHARD on 2 ranks one of whose ranks is SIGKILLed and then resumed, each end with the loss
// sequence of the same run uninterrupted, bit for bit.
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { encodeTokenFile } from '../../core/data/token-file';
import { repoRoot } from './native-build';
import { eventsOf, lossHistory, rankPidsOf, readRun, startTrain, tempDir, train, writeConfig } from './train-runs';

const FIXTURE = path.join(repoRoot, 'test', 'fixtures', 'reference', 'parallel', 'decoder-fp32.json');
const STEPS = 14;

interface Fixture {
  tokens: { ids: number[] };
  families: Record<string, { config: Record<string, Record<string, unknown>> }>;
}
const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Fixture;

function familyConfig(dir: string, family: string, tokens: string, ranks: number): string {
  const config = structuredClone(fixture.families[family].config);
  config.data = { ...config.data, train: tokens, shuffle: true };
  config.training = { ...config.training, max_steps: STEPS, batch_size_per_gpu: 4 / ranks };
  config.checkpointing = { save_every_n_steps: 3, keep_last_n: 2 };
  config.fsdp = { sharding_strategy: 'FULL_SHARD' };
  config.launch = { ...config.launch, nproc_per_node: ranks };
  return writeConfig(dir, config, `${family}-${ranks}.json`);
}

async function lossesOf(runDir: string): Promise<Map<number, number | null>> {
  const { events, problems } = await readRun(runDir);
  assert.deepEqual(problems, []);
  return lossHistory(events);
}

/**
 * Runs until a step event at or past `killAt` that follows a checkpoint event (so that there is one
 * to resume from), then SIGKILLs rank `rank`'s runtime (the pid the run_start names).
 */
async function runAndKill(
  config: string,
  runDir: string,
  killAt: number,
  resume: boolean,
  rank: number,
): Promise<void> {
  let killed = false;
  let checkpointed = false;
  const args = [config, '--run-dir', runDir, ...(resume ? ['--resume', 'auto'] : [])];
  const { done } = startTrain(args, (line) => {
    if (line.includes('"type":"checkpoint"')) checkpointed = true;
    const step = /"type":"step".*?"step":(\d+),/.exec(line) ?? /"step":(\d+),.*?"type":"step"/.exec(line);
    if (killed || !checkpointed || !step || Number(step[1]) < killAt) return;
    killed = true;
    process.kill(rankPidsOf(runDir)[rank], 'SIGKILL');
  });
  const r = await done;
  assert.ok(killed, `the run ended before step ${killAt}: ${r.stderr}`);
  assert.notEqual(r.code, 0, r.stderr);
}

describe('the decoder family: SIGKILL and resume to the uninterrupted losses, bit for bit', function () {
  this.timeout(600_000);
  let dir: string;
  let tokens: string;
  before(() => {
    dir = tempDir('decoder-resume');
    tokens = path.join(dir, 'fortunes.tok');
    writeFileSync(tokens, encodeTokenFile(Uint16Array.from(fixture.tokens.ids), 256, 'byte'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a Llama run on one rank killed twice at random steps', async () => {
    const config = familyConfig(dir, 'llama-gqa-llama3-untied', tokens, 1);
    const reference = path.join(dir, 'llama-reference');
    const whole = await train([config, '--run-dir', reference]);
    assert.equal(whole.code, 0, whole.stderr);
    const expected = await lossesOf(reference);
    assert.equal(expected.size, STEPS);

    const runDir = path.join(dir, 'llama-killed');
    const first = 2 + Math.floor(Math.random() * 6);
    const second = first + 2 + Math.floor(Math.random() * 4);
    await runAndKill(config, runDir, first, false, 0);
    await runAndKill(config, runDir, second, true, 0);
    const r = await train([config, '--run-dir', runDir, '--resume', 'auto']);
    assert.equal(r.code, 0, `killed at steps ${first} and ${second}: ${r.stderr}`);
    const { events, manifest } = await readRun(runDir);
    assert.equal(manifest.status, 'completed');
    assert.ok(eventsOf(events, 'run_start').length >= 3);
    assert.deepEqual(lossHistory(events), expected, `killed at steps ${first} and ${second}`);
  });

  it('a Qwen3 run FULL_SHARD on 2 ranks, rank 1 killed', async () => {
    const config = familyConfig(dir, 'qwen3-qk-norm-head-dim-tied', tokens, 2);
    const reference = path.join(dir, 'qwen3-reference');
    const whole = await train([config, '--run-dir', reference]);
    assert.equal(whole.code, 0, whole.stderr);
    const expected = await lossesOf(reference);
    assert.equal(expected.size, STEPS);

    const runDir = path.join(dir, 'qwen3-killed');
    const at = 4 + Math.floor(Math.random() * 6);
    await runAndKill(config, runDir, at, false, 1);
    const r = await train([config, '--run-dir', runDir, '--resume', 'auto']);
    assert.equal(r.code, 0, `rank 1 killed at step ${at}: ${r.stderr}`);
    const { events, manifest } = await readRun(runDir);
    assert.equal(manifest.status, 'completed');
    assert.ok(eventsOf(events, 'run_start').at(-1)!.start_step! > 0);
    assert.deepEqual(lossHistory(events), expected, `rank 1 killed at step ${at}`);
  });
});

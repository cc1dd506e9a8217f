// Metrics read from what a training script prints: each recogniser against lines of the real
// program (the sources are named beside each sample), the decoder against lines that arrive in
// pieces and progress bars that redraw with a carriage return, and a person's own pattern.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { compileMetricsPattern } from '../../core/config/metrics-pattern';
import { printedMetricsDecoder } from '../../runs/watch/decoders/printed/printed-metrics-decoder';
import { parsePrintedNumber, rankOfLine } from '../../runs/watch/decoders/printed/printed-values';
import { PrintedMetricsReader, type PrintedStep } from '../../runs/watch/decoders/printed/recognisers';

/** tag → value of a step, and the metric each tag is drawn as. */
function flat(
  s: PrintedStep | undefined,
):
  { step: number; format: string; values: Record<string, number>; metrics: Record<string, string | null> } | undefined {
  if (!s) return undefined;
  return {
    step: s.step,
    format: s.format,
    values: Object.fromEntries(s.values.map((v) => [v.tag, v.value])),
    metrics: Object.fromEntries(s.values.map((v) => [v.tag, v.metric])),
  };
}

/** Every step a fixture's output gives, read through the decoder as the watch reads it. */
function decodeFixture(name: string): PrintedStep[] {
  const bytes = readFileSync(path.join(__dirname, '..', 'fixtures', 'printed', name));
  return printedMetricsDecoder()(0).push(bytes).entries;
}

describe('printed metrics', () => {
  it("reads nanoGPT's train.py lines (karpathy/nanoGPT train.py print statements)", () => {
    const r = new PrintedMetricsReader();
    // print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    assert.deepEqual(flat(r.read('step 0: train loss 4.2874, val loss 4.2823')), {
      step: 0,
      format: 'nanogpt',
      values: { 'printed/eval_train_loss': 4.2874, 'printed/val_loss': 4.2823 },
      metrics: { 'printed/eval_train_loss': null, 'printed/val_loss': 'val_loss' },
    });
    // print(f"iter {iter_num}: loss {lossf:.4f}, time {dt*1000:.2f}ms, mfu {running_mfu*100:.2f}%"): -100.00% until measured
    assert.deepEqual(flat(r.read('iter 0: loss 4.2649, time 30728.83ms, mfu -100.00%')), {
      step: 0,
      format: 'nanogpt',
      values: { 'printed/loss': 4.2649, 'printed/time_ms': 30728.83 },
      metrics: { 'printed/loss': 'loss', 'printed/time_ms': 'step_ms' },
    });
    const later = flat(r.read('iter 194: loss 2.5761, time 141.36ms, mfu 1.23%'))!;
    assert.equal(later.step, 194);
    assert.equal(later.values['printed/mfu'], 0.0123);
    assert.equal(later.metrics['printed/mfu'], 'mfu');
    assert.equal(r.read('saving checkpoint to out-shakespeare-char'), undefined);
    assert.equal(r.read('number of parameters: 10.65M'), undefined);
  });

  it("reads torchtitan's step and validation lines, colours and logger prefix included", () => {
    // The bytes torchtitan 0.3.0's own logger writes (init_logger, Color, the format strings of
    // torchtitan/components/metrics.py), made in the project's .venv with sample numbers.
    const r = new PrintedMetricsReader();
    const line =
      '[titan] 2026-11-26 00:52:13,861 - root - INFO - \x1b[31mstep: 10  \x1b[32mloss:  7.23456  \x1b[38;2;180;60;0mgrad_norm:  1.2345  \x1b[38;2;54;234;195mmemory:  1.23GiB(2.34%)  \x1b[34mtps: 12,346  \x1b[36mtflops: 12.34  \x1b[35mmfu: 3.45%\x1b[39m';
    const s = flat(r.read(line))!;
    assert.equal(s.step, 10);
    assert.equal(s.format, 'torchtitan');
    assert.deepEqual(s.values, {
      'printed/loss': 7.23456,
      'printed/grad_norm': 1.2345,
      'printed/memory_gib': 1.23,
      'printed/tps': 12346,
      'printed/tflops': 12.34,
      'printed/mfu': 0.0345,
    });
    assert.deepEqual(s.metrics, {
      'printed/loss': 'loss',
      'printed/grad_norm': 'grad_norm',
      'printed/memory_gib': null,
      'printed/tps': 'tokens_per_s',
      'printed/tflops': null,
      'printed/mfu': 'mfu',
    });
    const val = flat(
      r.read(
        '[titan] 2026-11-26 00:52:13,867 - root - INFO - \x1b[33mvalidate step: 10  \x1b[32mloss:  7.5000  \x1b[38;2;54;234;195mmemory:  1.23GiB(2.34%)  \x1b[34mtps: 12,346\x1b[39m',
      ),
    )!;
    assert.equal(val.values['printed/validate_loss'], 7.5);
    assert.equal(val.metrics['printed/validate_loss'], 'val_loss');
    assert.equal(val.metrics['printed/validate_tps'], null, "validation throughput is not the training's");
    // Without an MFU (no peak known for the device) it prints N/A.
    const noMfu = flat(
      r.read(
        '[titan] 2026-11-26 00:52:13,867 - root - INFO - \x1b[31mstep: 11  \x1b[32mloss:  7.1  \x1b[35mmfu: N/A\x1b[39m',
      ),
    )!;
    assert.deepEqual(Object.keys(noMfu.values), ['printed/loss']);
  });

  it("reads the Hugging Face Trainer's printed dicts, values as strings (transformers 5) or numbers (4), counting its logs", () => {
    // Printed by transformers 5.24.0's Trainer in the project's .venv: a 1-layer GPT-2, max_steps 6,
    // logging_steps 2, eval_steps 4 (so its logs are steps 2, 4, 6; it prints no step).
    const r = new PrintedMetricsReader();
    const a = r.read("{'loss': '3.896', 'grad_norm': '1.388', 'learning_rate': '4.167e-05', 'epoch': '0.125'}")!;
    const b = r.read("{'loss': '3.903', 'grad_norm': '1.283', 'learning_rate': '2.5e-05', 'epoch': '0.25'}")!;
    const e = r.read(
      "{'eval_loss': '3.901', 'eval_runtime': '1.441', 'eval_samples_per_second': '44.42', 'eval_steps_per_second': '5.553', 'epoch': '0.25'}",
    )!;
    // transformers 4 printed numbers.
    const c = r.read("{'loss': 3.892, 'grad_norm': 1.234, 'learning_rate': 8.333e-06, 'epoch': 0.375}")!;
    assert.deepEqual([a.step, b.step, e.step, c.step], [1, 2, 2, 3]);
    assert.ok(a.counted && b.counted && c.counted);
    assert.deepEqual(flat(a)!.values, {
      'printed/loss': 3.896,
      'printed/grad_norm': 1.388,
      'printed/learning_rate': 4.167e-5,
      'printed/epoch': 0.125,
    });
    assert.deepEqual(flat(a)!.metrics, {
      'printed/loss': 'loss',
      'printed/grad_norm': 'grad_norm',
      'printed/learning_rate': 'lr',
      'printed/epoch': null,
    });
    assert.equal(flat(c)!.values['printed/learning_rate'], 8.333e-6);
    assert.equal(flat(e)!.metrics['printed/eval_loss'], 'val_loss');
    assert.equal(flat(e)!.metrics['printed/eval_runtime'], null);
    // The totals at the end are not a step.
    assert.equal(
      r.read(
        "{'train_runtime': '9.706', 'train_samples_per_second': '2.473', 'train_steps_per_second': '0.618', 'train_loss': '3.897', 'epoch': '0.375'}",
      ),
      undefined,
    );
  });

  it("reads Lightning's progress bar: the step is epoch × batches per epoch + batch", () => {
    // Printed to stdout by Lightning 2.6.6's TQDMProgressBar in the project's .venv (10 batches an
    // epoch, self.log("train_loss", on_step=True, on_epoch=True, prog_bar=True), a val_loss): the
    // bar redraws after a carriage return, first with the count, then with the new loss.
    const r = new PrintedMetricsReader();
    assert.equal(r.read('Epoch 0:   0%|          | 0/10 [00:00<?, ?it/s]'), undefined);
    assert.equal(r.read('Epoch 0:  10%|█         | 1/10 [00:00<00:00, 61.13it/s]'), undefined);
    const first = flat(r.read('Epoch 0:  10%|█         | 1/10 [00:00<00:00, 36.50it/s, train_loss_step=0.273]'))!;
    assert.deepEqual(first, {
      step: 1,
      format: 'lightning',
      values: { 'printed/train_loss_step': 0.273 },
      metrics: { 'printed/train_loss_step': 'loss' },
    });
    const last = flat(
      r.read(
        'Epoch 1: 100%|██████████| 10/10 [00:00<00:00, 34.04it/s, train_loss_step=0.538, val_loss=0.955, train_loss_epoch=1.220]',
      ),
    )!;
    assert.equal(last.step, 20);
    assert.deepEqual(last.metrics, {
      'printed/train_loss_step': 'loss',
      'printed/val_loss': 'val_loss',
      'printed/train_loss_epoch': null,
    });
    assert.equal(r.read('Validation DataLoader 0:  50%|█████     | 5/10 [00:00<00:00, 250.00it/s]'), undefined);
  });

  it('reads key=value and key: value pairs on a line that names its step', () => {
    const r = new PrintedMetricsReader();
    assert.deepEqual(flat(r.read('step 100 | loss 2.31 | lr 3e-4 | grad_norm 0.8')), {
      step: 100,
      format: 'pairs',
      values: { 'printed/loss': 2.31, 'printed/lr': 3e-4, 'printed/grad_norm': 0.8 },
      metrics: { 'printed/loss': 'loss', 'printed/lr': 'lr', 'printed/grad_norm': 'grad_norm' },
    });
    assert.deepEqual(flat(r.read('it=20 loss=1.92 acc=0.5'))!.values, { 'printed/loss': 1.92, 'printed/acc': 0.5 });
    // llm.c's train_gpt2.c: printf("step %d/%d: train loss %f (%f ms, %0f tok/s)\n", …)
    const llmc = flat(r.read('step 1/74: train loss 4.367857 (234.67 ms, 4364 tok/s)'))!;
    assert.equal(llmc.step, 1);
    assert.equal(llmc.values['printed/train_loss'], 4.367857);
    assert.equal(llmc.metrics['printed/train_loss'], 'loss');
    assert.equal(llmc.values['printed/time_ms'], 234.67);
    assert.equal(llmc.values['printed/tok/s'], 4364);
    assert.equal(r.read('Loading checkpoint shards: 100%'), undefined);
    assert.equal(r.read('step 5'), undefined);
  });

  it("reads build-nanogpt's train_gpt2.py output: lr without a colon, tok/sec as throughput, validation lines as validation", () => {
    const steps = decodeFixture('build-nanogpt.stdout.log');
    const train = steps.filter((s) => s.values.some((v) => v.metric === 'loss'));
    assert.deepEqual(
      train.map((s) => s.step),
      [0, 1, 2, 3, 4, 5, 6],
    );
    const five = flat(train[5])!;
    assert.deepEqual(five.values, {
      'printed/loss': 10.170413,
      'printed/norm': 3.1016,
      'printed/dt_ms': 351.2,
      'printed/tok/sec': 1492846.47,
      'printed/lr': 5.035e-6,
    });
    assert.deepEqual(five.metrics, {
      'printed/loss': 'loss',
      'printed/norm': 'grad_norm',
      'printed/dt_ms': 'step_ms',
      'printed/tok/sec': 'tokens_per_s',
      'printed/lr': 'lr',
    });
    // Its evaluation runs at the top of step s, before step s's line: the first before step 0, the next before step 5.
    const validation = steps.filter((s) => s.values.some((v) => v.metric === 'val_loss'));
    assert.deepEqual(
      validation.map((s) => [s.step, flat(s)!.values['printed/validation_loss']]),
      [
        [0, 10.9834],
        [5, 10.1207],
      ],
    );
    assert.equal(steps.length, train.length + validation.length, 'HellaSwag, samples and start-up lines are no steps');
  });

  it("reads nanoGPT's train.py output: iter lines as training, step lines as validation", () => {
    const steps = decodeFixture('nanogpt.stdout.log').map((s) => flat(s)!);
    assert.deepEqual(
      steps.map((s) => [s.step, Object.entries(s.metrics).find(([, m]) => m === 'loss' || m === 'val_loss')?.[1]]),
      [
        [0, 'val_loss'],
        [0, 'loss'],
        [10, 'loss'],
        [20, 'loss'],
        [30, 'val_loss'],
        [30, 'loss'],
        [40, 'loss'],
      ],
    );
    assert.equal(steps[4].values['printed/val_loss'], 2.6043);
    assert.equal(steps[6].values['printed/time_ms'], 143.88);
  });

  it("reads a validation loss printed on a line of its own as the next step's", () => {
    const r = new PrintedMetricsReader();
    assert.deepEqual(flat(r.read('val loss 2.5')), {
      step: 0,
      format: 'pairs',
      values: { 'printed/val_loss': 2.5 },
      metrics: { 'printed/val_loss': 'val_loss' },
    });
    r.read('step 7 | loss 2.1');
    assert.equal(r.read('Validation loss: 2.25')!.step, 8);
    assert.equal(r.read('validation loss: soon'), undefined);
    assert.equal(r.read('the validation loss went down'), undefined);
  });

  it("reads only rank 0's lines where a launcher marks ranks", () => {
    const r = new PrintedMetricsReader();
    assert.equal(r.read('[rank 1] step 3 loss=2.0'), undefined);
    assert.equal(r.read('[rank 0] step 3 loss=2.0')!.step, 3);
    assert.equal(r.read('[default1]:step 3 loss=2.0'), undefined);
    assert.deepEqual(rankOfLine('[default0]:iter 1: loss 2'), { rank: 0, text: 'iter 1: loss 2' });
  });

  it("reads a person's own pattern first, in JavaScript or Python syntax", () => {
    const r = new PrintedMetricsReader(['^ep \\d+ it (?P<step>\\d+) L=(?P<loss>[\\d.]+) acc=(?<acc>[\\d.]+)%']);
    assert.deepEqual(flat(r.read('ep 2 it 300 L=1.5 acc=45.5%')), {
      step: 300,
      format: 'pattern',
      values: { 'printed/loss': 1.5, 'printed/acc': 45.5 },
      metrics: { 'printed/loss': 'loss', 'printed/acc': null },
    });
    assert.match(String(compileMetricsPattern('loss=(?<loss>\\d+)')), /named group step/);
    assert.match(String(compileMetricsPattern('(?<step>\\d+)')), /besides step/);
    assert.match(String(compileMetricsPattern('(?<step>\\d+')), /not a valid regular expression/);
  });

  it('reads numbers as scripts print them', () => {
    assert.equal(parsePrintedNumber('1,234,567'), 1234567);
    assert.equal(parsePrintedNumber("'2.5e-05'"), 2.5e-5);
    assert.ok(Number.isNaN(parsePrintedNumber('nan')!));
    assert.equal(parsePrintedNumber('-inf'), Number.NEGATIVE_INFINITY);
    assert.equal(parsePrintedNumber('12abc'), undefined);
  });

  it('decodes lines however the bytes arrive, progress bars redrawn after a carriage return included', () => {
    const text =
      'loading…\niter 0: loss 4.0, time 10.00ms\r\niter 1: loss 3.5, time 9.00ms\nEpoch 0:  10%|█         | 1/10 [00:01<00:09, 1.0it/s, v_num=0, loss=3.1]\rEpoch 0:  20%|██        | 2/10 [00:02<00:08, 1.0it/s, v_num=0, loss=2.9]\riter 2: loss 3.';
    const bytes = Buffer.from(text);
    for (const size of [1, 3, 17, bytes.length]) {
      const decoder = printedMetricsDecoder()(0);
      const steps: Array<[number, number]> = [];
      for (let i = 0; i < bytes.length; i += size)
        for (const e of decoder.push(bytes.subarray(i, i + size)).entries) steps.push([e.step, e.offset]);
      assert.deepEqual(
        steps.map(([s]) => s),
        [0, 1, 1, 2],
        `chunks of ${size}`,
      );
      assert.equal(steps[0][1], Buffer.byteLength('loading…\n'));
      // The unfinished last line waits: the next read starts at it.
      assert.equal(decoder.offset, bytes.length - Buffer.byteLength('iter 2: loss 3.'));
    }
  });

  it('drops a line longer than 64 KiB as it arrives, with one note a push counting the lines dropped (issue 40 item 4)', () => {
    const long = 'x'.repeat(200 * 1024);
    const text = `iter 1: loss 2.0\n${long}\n${long}\r${long}\niter 2: loss 1.5\n`;
    const bytes = Buffer.from(text);
    for (const size of [4096, 65536, bytes.length]) {
      const decoder = printedMetricsDecoder()(0);
      const steps: number[] = [];
      let dropped = 0;
      for (let i = 0; i < bytes.length; i += size) {
        const batch = decoder.push(bytes.subarray(i, i + size));
        steps.push(...batch.entries.map((e) => e.step));
        for (const p of batch.problems) {
          const m = /^(\d+) lines? longer than 64 KiB not read for step lines, from byte (\d+)$/.exec(p.message);
          assert.ok(m, p.message);
          assert.equal(Number(m[2]), p.offset);
          dropped += Number(m[1]);
        }
      }
      assert.deepEqual(steps, [1, 2], `chunks of ${size}`);
      assert.equal(dropped, 3, `chunks of ${size}`);
      assert.equal(decoder.offset, bytes.length);
    }
  });

  it('passes over binary lines (a control byte no text has) without reading them; tabs and colour escapes are text', () => {
    const text =
      'iter 1: loss 2.0\u0000\x01\n\titer 2: loss 1.5\t\n\x1b[32miter 3: loss 1.25\x1b[0m\n\x7fiter 4: loss 1.0\n';
    for (const size of [1, 5, text.length]) {
      const bytes = Buffer.from(text);
      const decoder = printedMetricsDecoder()(0);
      const steps: number[] = [];
      for (let i = 0; i < bytes.length; i += size)
        steps.push(...decoder.push(bytes.subarray(i, i + size)).entries.map((e) => e.step));
      assert.deepEqual(steps, [2, 3], `chunks of ${size}`);
      assert.equal(decoder.offset, bytes.length);
    }
  });
});

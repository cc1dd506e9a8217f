// Test data: TensorBoard event records made here, for what the public fixtures do not have
// (tensor-encoded scalars, images, a file growing at a chosen pace). Events are encoded with
// protobufjs from TensorFlow's message definitions (runs/watch/decoders/tensorboard/event-proto.ts) and
// framed as TFRecords; production code never writes event files from TypeScript (the native
// runtime has the one writer, native/src/metrics/tensorboard_writer.cc).
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { maskedCrc32c } from '../../runs/watch/decoders/tensorboard/crc32c';
import { EVENT_TYPES } from '../../runs/watch/decoders/tensorboard/event-proto';

/** One TFRecord around `data`. */
export function frameRecord(data: Uint8Array): Buffer {
  const head = Buffer.alloc(12);
  head.writeBigUInt64LE(BigInt(data.length), 0);
  head.writeUInt32LE(maskedCrc32c(head, 0, 8), 8);
  const foot = Buffer.alloc(4);
  foot.writeUInt32LE(maskedCrc32c(data), 0);
  return Buffer.concat([head, Buffer.from(data), foot]);
}

export function eventRecord(event: Record<string, unknown>): Buffer {
  const msg = EVENT_TYPES.Event.fromObject(event);
  return frameRecord(EVENT_TYPES.Event.encode(msg).finish());
}

export function fileVersionRecord(wallTime: number): Buffer {
  return eventRecord({ wall_time: wallTime, file_version: 'brain.Event:2' });
}

export function scalarRecord(tag: string, step: number, value: number, wallTime: number): Buffer {
  return eventRecord({ wall_time: wallTime, step, summary: { value: [{ tag, simple_value: value }] } });
}

/** A scalar as TF2's tf.summary.scalar writes it: a rank-0 float tensor, metadata on the first only. */
export function tensorScalarRecord(
  tag: string,
  step: number,
  value: number,
  wallTime: number,
  withMetadata: boolean,
): Buffer {
  return eventRecord({
    wall_time: wallTime,
    step,
    summary: {
      value: [
        {
          tag,
          tensor: { dtype: 1, tensor_shape: {}, float_val: [value] },
          ...(withMetadata ? { metadata: { plugin_data: { plugin_name: 'scalars' }, data_class: 1 } } : {}),
        },
      ],
    },
  });
}

/** A event file name as TensorBoard makes it: events.out.tfevents.<seconds>.<host>.<pid>.<n>. */
export function eventFileName(wallTime: number, n = 0): string {
  return `events.out.tfevents.${Math.floor(wallTime)}.${os.hostname()}.${process.pid}.${n}`;
}

/**
 * Writes a log folder's event file at a pace, as a training script with a SummaryWriter does:
 * `train/loss` and `train/learning_rate` per step. Run: node --import tsx test/harness/tensorboard-file.ts
 * --dir DIR --steps N [--rate HZ].
 */
export async function writeTensorBoardRun(
  dir: string,
  steps: number,
  rate: number,
  loss: (step: number) => number,
): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const t0 = Date.now() / 1000;
  const file = path.join(dir, eventFileName(t0));
  writeFileSync(file, fileVersionRecord(t0));
  const start = Date.now();
  for (let step = 1; step <= steps; step++) {
    if (rate > 0) {
      const wait = start + (step * 1000) / rate - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const now = Date.now() / 1000;
    appendFileSync(
      file,
      Buffer.concat([
        scalarRecord('train/loss', step, loss(step), now),
        scalarRecord('train/learning_rate', step, 1e-3, now),
      ]),
    );
  }
  return file;
}

if (process.argv[1] && /tensorboard-file\.ts$/.test(process.argv[1])) {
  const arg = (name: string) => process.argv[process.argv.indexOf(name) + 1];
  void import('./synthetic-run').then(({ syntheticLoss }) =>
    writeTensorBoardRun(
      arg('--dir'),
      Number(arg('--steps')),
      Number(process.argv.includes('--rate') ? arg('--rate') : 50),
      syntheticLoss,
    ),
  );
}

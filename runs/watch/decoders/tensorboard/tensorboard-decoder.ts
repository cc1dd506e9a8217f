// Reads TensorBoard event files (TFRecord framing around Event protocol buffers) from a byte offset,
// as they grow. Each record is: u64 length, u32 masked CRC-32C of the length, the data, u32 masked
// CRC-32C of the data (little-endian). What comes out are the scalars: Summary values with a
// simple_value, and tensors of one number that the scalars plugin wrote (TF2's tf.summary.scalar,
// PyTorch's add_scalar(new_style=True)). Histograms, images, text, graphs are skipped without a
// word. A record cut short by the end of what has arrived waits for the rest; a record whose data
// CRC is wrong is reported and skipped; a length whose CRC is wrong (the framing is lost) is
// reported once and the decoder looks for the next place where a valid header starts. Nothing throws.
import type { DecodedBatch, DecoderFactory, RecordDecoder, RecordProblem } from '../record-decoder';
import { maskedCrc32c } from './crc32c';
import {
  DATA_CLASS_SCALAR,
  DT,
  EVENT_TYPES,
  toNumber,
  type DecodedEvent,
  type DecodedTensor,
  type DecodedValue,
} from './event-proto';

export interface TensorBoardScalar {
  /** Byte offset of the record in the file. */
  offset: number;
  tag: string;
  step: number;
  /** NaN and ±Infinity as logged. */
  value: number;
  /** Seconds since the Unix epoch. */
  wallTime: number;
}

const HEADER = 12;
const FOOTER = 4;
/** A record longer than this is reported and skipped as it streams by, never held in memory. */
export const MAX_RECORD_BYTES = 64 * 1024 * 1024;

/**
 * A decoder factory for one event file. The scalars plugin writes a tag's metadata only with its
 * first value in a file, so what each tag is survives a reconnect's fresh decoder: it lives here.
 */
export function tensorBoardDecoder(): DecoderFactory<TensorBoardScalar> {
  const pluginOfTag = new Map<string, string>();
  return (offset) => new TensorBoardDecoder(offset, pluginOfTag);
}

export class TensorBoardDecoder implements RecordDecoder<TensorBoardScalar> {
  private pending: Buffer = Buffer.alloc(0);
  /** File offset of pending[0]. */
  private base: number;
  /** Bytes of an oversized record still to skip. */
  private skipping = 0;
  /** The framing was lost at this offset and is being searched for (reported once). */
  private resyncFrom: number | undefined;

  constructor(
    offset = 0,
    private readonly pluginOfTag = new Map<string, string>(),
  ) {
    this.base = offset;
  }

  get offset(): number {
    return this.base;
  }

  push(chunk: Uint8Array): DecodedBatch<TensorBoardScalar> {
    const entries: TensorBoardScalar[] = [];
    const problems: RecordProblem[] = [];
    let data = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.skipping > 0) {
      const n = Math.min(this.skipping, data.length);
      this.skipping -= n;
      this.base += n;
      data = data.subarray(n);
    }
    this.pending = this.pending.length ? Buffer.concat([this.pending, data]) : Buffer.from(data);
    let at = 0;
    const buf = this.pending;
    while (buf.length - at >= HEADER) {
      const length = buf.readBigUInt64LE(at);
      if (buf.readUInt32LE(at + 8) !== maskedCrc32c(buf, at, at + 8)) {
        // The framing is lost: step one byte and look again for a header whose CRC holds.
        if (this.resyncFrom === undefined) {
          this.resyncFrom = this.base + at;
          problems.push({
            offset: this.base + at,
            message: 'record header CRC mismatch: the file is corrupted here; skipping to the next valid record',
            excerpt: hex(buf, at),
          });
        }
        at++;
        continue;
      }
      this.resyncFrom = undefined;
      const start = this.base + at;
      if (length > BigInt(MAX_RECORD_BYTES)) {
        problems.push({
          offset: start,
          message: `record of ${length} bytes is longer than ${MAX_RECORD_BYTES}; skipped`,
          excerpt: hex(buf, at),
        });
        const total = Number(length) + HEADER + FOOTER;
        const have = buf.length - at;
        if (have >= total) {
          at += total;
          continue;
        }
        this.skipping = total - have;
        at = buf.length;
        break;
      }
      const total = Number(length) + HEADER + FOOTER;
      if (buf.length - at < total) break; // the rest of the record has not arrived yet
      const bodyStart = at + HEADER;
      const bodyEnd = bodyStart + Number(length);
      if (buf.readUInt32LE(bodyEnd) !== maskedCrc32c(buf, bodyStart, bodyEnd)) {
        problems.push({
          offset: start,
          message: `record data CRC mismatch (${length} bytes); skipped`,
          excerpt: hex(buf, bodyStart),
        });
      } else {
        this.decodeEvent(buf.subarray(bodyStart, bodyEnd), start, entries, problems);
      }
      at += total;
    }
    this.base += at;
    // Copy what is left: the caller may reuse its buffer, and a big pending buffer should not pin it.
    this.pending = at >= buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(at));
    return { entries, problems, offset: this.base };
  }

  private decodeEvent(body: Buffer, offset: number, entries: TensorBoardScalar[], problems: RecordProblem[]): void {
    let event: DecodedEvent;
    try {
      event = EVENT_TYPES.Event.decode(body) as unknown as DecodedEvent;
    } catch (e) {
      problems.push({
        offset,
        message: `record is not a TensorBoard Event: ${(e as Error).message}; skipped`,
        excerpt: hex(body, 0),
      });
      return;
    }
    const values = event.summary?.value;
    if (!values?.length) return;
    const step = toNumber(event.step);
    const wallTime = event.wall_time ?? 0;
    for (const v of values) {
      if (!v.tag) continue;
      const value = this.scalarOf(v);
      if (value !== undefined) entries.push({ offset, tag: v.tag, step, value, wallTime });
    }
  }

  private scalarOf(v: DecodedValue): number | undefined {
    const tag = v.tag!;
    const meta = has(v, 'metadata') ? v.metadata : undefined;
    const plugin =
      (meta && has(meta, 'plugin_data') ? meta.plugin_data?.plugin_name : undefined) ||
      (meta?.data_class === DATA_CLASS_SCALAR ? 'scalars' : undefined);
    if (plugin !== undefined) this.pluginOfTag.set(tag, plugin);
    // Decoded messages carry defaults on their prototype: only fields present are own properties.
    if (has(v, 'simple_value')) return v.simple_value;
    if (!has(v, 'tensor') || !v.tensor) return undefined;
    const known = this.pluginOfTag.get(tag);
    // A tensor is a scalar when the scalars plugin wrote it, or, with no metadata seen, when it
    // holds one number (histograms are [k, 3], text is strings, images are encoded bytes).
    if (known !== undefined && known !== 'scalars') return undefined;
    return tensorScalar(v.tensor);
  }
}

/** The one number a tensor holds, or undefined when it holds none or several, or not numbers. */
export function tensorScalar(t: DecodedTensor): number | undefined {
  const dims = t.tensor_shape?.dim ?? [];
  if (dims.some((d) => toNumber(d.size) !== 1)) return undefined;
  const content = t.tensor_content;
  const view =
    content && content.length ? new DataView(content.buffer, content.byteOffset, content.byteLength) : undefined;
  switch (t.dtype) {
    case DT.FLOAT:
      return one(t.float_val) ?? (view?.byteLength === 4 ? view.getFloat32(0, true) : undefined);
    case DT.DOUBLE:
      return one(t.double_val) ?? (view?.byteLength === 8 ? view.getFloat64(0, true) : undefined);
    case DT.HALF: {
      const bits = one(t.half_val) ?? (view?.byteLength === 2 ? view.getUint16(0, true) : undefined);
      return bits === undefined ? undefined : halfToNumber(bits);
    }
    case DT.BFLOAT16: {
      const bits = one(t.half_val) ?? (view?.byteLength === 2 ? view.getUint16(0, true) : undefined);
      if (bits === undefined) return undefined;
      const f = new DataView(new ArrayBuffer(4));
      f.setUint32(0, (bits & 0xffff) << 16);
      return f.getFloat32(0);
    }
    case DT.INT32:
      return one(t.int_val) ?? (view?.byteLength === 4 ? view.getInt32(0, true) : undefined);
    case DT.INT64: {
      const v = one(t.int64_val);
      return v !== undefined ? toNumber(v) : view?.byteLength === 8 ? Number(view.getBigInt64(0, true)) : undefined;
    }
    default:
      return undefined;
  }
}

function has(o: object, field: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, field);
}

function one<T>(xs: T[] | undefined): T | undefined {
  return xs && xs.length === 1 ? xs[0] : undefined;
}

function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? Number.NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

function hex(buf: Uint8Array, at: number): string {
  return Buffer.from(buf.subarray(at, at + 16))
    .toString('hex')
    .replace(/(..)/g, '$1 ')
    .trim();
}

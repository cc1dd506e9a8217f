// Opening a file of a run folder for reading, and nothing else: a run folder is written by
// programs and people we do not control, and a FIFO named run.json blocks an ordinary open (in a
// libuv thread, for ever), /dev/zero or /dev/urandom behind a symbolic link never ends, and a sparse
// file claims terabytes. So every reader opens non-blocking, looks at what it opened (fstat, after
// symlinks are followed), refuses what is not a regular file or is larger than the cap for its
// kind, and reads at most what the file held when it was opened. The refusal names the file, what
// it is and the cap, so the person sees why a run cannot be read.
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** run.json: a config and a few fields; the largest config the language server reads is 16 MiB. */
export const MANIFEST_MAX_BYTES = 32 * 1024 * 1024;
/** metrics.jsonl and TensorBoard event files: a million steps of every rank fit many times over. */
export const LOG_MAX_BYTES = 16 * 1024 * 1024 * 1024;

/** Why a file of a run folder was not read. */
export class RefusedFile extends Error {
  constructor(
    readonly file: string,
    readonly why: string,
  ) {
    super(`${file} ${why}: not read`);
    this.name = 'RefusedFile';
  }
}

const NON_BLOCKING_READ = constants.O_RDONLY | constants.O_NONBLOCK;

/** What a file is, in words, when it is not a regular file. */
export function notRegular(s: Stats): string | undefined {
  if (s.isFile()) return undefined;
  if (s.isFIFO()) return 'is a FIFO (named pipe), not a regular file';
  if (s.isCharacterDevice()) return 'is a character device (such as /dev/zero), not a regular file';
  if (s.isBlockDevice()) return 'is a block device, not a regular file';
  if (s.isSocket()) return 'is a socket, not a regular file';
  if (s.isDirectory()) return 'is a folder, not a regular file';
  return 'is not a regular file';
}

/**
 * Opens a regular file for reading without ever blocking; undefined when it does not exist.
 * Throws RefusedFile for anything else, or for a file larger than `maxBytes`.
 */
export async function openRegularFile(
  file: string,
  maxBytes: number,
): Promise<{ handle: FileHandle; size: number } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, NON_BLOCKING_READ);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  try {
    const s = await handle.stat();
    const why = notRegular(s) ?? tooLarge(s.size, maxBytes);
    if (why) throw new RefusedFile(file, why);
    return { handle, size: s.size };
  } catch (e) {
    await handle.close();
    throw e;
  }
}

/** A whole regular file (at most `maxBytes`), or undefined when it does not exist; RefusedFile otherwise. */
export async function readRegularFile(file: string, maxBytes: number): Promise<Buffer | undefined> {
  const opened = await openRegularFile(file, maxBytes);
  if (!opened) return undefined;
  try {
    const buf = Buffer.alloc(opened.size);
    let at = 0;
    while (at < opened.size) {
      const { bytesRead } = await opened.handle.read(buf, at, opened.size - at, at);
      if (bytesRead === 0) break; // it shrank since: what was there
      at += bytesRead;
    }
    return buf.subarray(0, at);
  } finally {
    await opened.handle.close();
  }
}

/** readRegularFile for synchronous callers (the CLI's run folder set-up). */
export function readRegularFileSync(file: string, maxBytes: number): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(file, NON_BLOCKING_READ);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  try {
    const s = fstatSync(fd);
    const why = notRegular(s) ?? tooLarge(s.size, maxBytes);
    if (why) throw new RefusedFile(file, why);
    const buf = Buffer.alloc(s.size);
    let at = 0;
    while (at < s.size) {
      const n = readSync(fd, buf, at, s.size - at, at);
      if (n === 0) break;
      at += n;
    }
    return buf.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}

function tooLarge(size: number, maxBytes: number): string | undefined {
  return size > maxBytes ? `is ${size} bytes, more than the ${maxBytes} bytes a file of its kind may be` : undefined;
}

// Opening a file of a run folder: a run folder is written by
// programs and people we do not control, and a FIFO named run.json blocks an ordinary open (in a
// libuv thread, for ever), /dev/zero or /dev/urandom behind a symbolic link never ends, and a sparse
// file claims terabytes. So every reader opens non-blocking, looks at what it opened (fstat, after
// symlinks are followed), refuses what is not a regular file or is larger than the cap for its
// kind, and reads at most what the file held when it was opened. The refusal names the file, what
// it is and the cap, so the person sees why a run cannot be read. Every writer opens a run folder's
// files without following a link and only when they are regular files (openRegularFileForWriting):
// a link put in the folder would otherwise carry the run's output to a file outside it.
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, writeFileSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** run.json: a config and a few fields; the largest config the language server reads is 16 MiB. */
export const MANIFEST_MAX_BYTES = 32 * 1024 * 1024;
/** metrics.jsonl and TensorBoard event files: a million steps of every rank fit many times over. */
export const LOG_MAX_BYTES = 16 * 1024 * 1024 * 1024;

/** Why a file of a run folder was not read (or, `written` true, not written). */
export class RefusedFile extends Error {
  constructor(
    readonly file: string,
    readonly why: string,
    written = false,
  ) {
    super(`${file} ${why}: ${written ? 'not written' : 'not read'}`);
    this.name = 'RefusedFile';
  }
}

const NON_BLOCKING_READ = constants.O_RDONLY | constants.O_NONBLOCK;

/** What a file is, in words, when it is not a regular file. */
export function notRegular(s: Stats): string | undefined {
  if (s.isFile()) return undefined;
  if (s.isSymbolicLink()) return 'is a symbolic link, not a regular file';
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

/**
 * Opens a file of a run folder for writing (`flags`: O_WRONLY or O_RDWR, with O_APPEND, O_CREAT…)
 * as every writer of a run folder does: never through a symbolic link, which would carry the run's
 * bytes to a file outside the folder, never blocking on a FIFO, and only when it is a regular file.
 * Returns the descriptor; throws RefusedFile naming the file and what it is instead — never what it
 * holds — or the open's own error (a missing folder, no permission).
 */
export function openRegularFileForWriting(file: string, flags: number, mode = 0o644): number {
  let fd: number;
  try {
    fd = openSync(file, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK, mode);
  } catch (e) {
    // ELOOP: the name is a link; ENXIO: a FIFO nobody reads; EISDIR: a folder. lstat says which.
    const code = (e as NodeJS.ErrnoException).code;
    const why = code === 'ELOOP' || code === 'ENXIO' || code === 'EISDIR' ? lstatNotRegular(file) : undefined;
    if (why) throw new RefusedFile(file, why, true);
    throw e;
  }
  try {
    const why = notRegular(fstatSync(fd));
    if (why) throw new RefusedFile(file, why, true);
    return fd;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** Replaces the contents of `file` with `bytes` as a writer of a run folder does (openRegularFileForWriting). */
export function writeRegularFileSync(file: string, bytes: Uint8Array): void {
  const fd = openRegularFileForWriting(file, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC);
  try {
    writeFileSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
}

function lstatNotRegular(file: string): string | undefined {
  try {
    return notRegular(lstatSync(file));
  } catch {
    return undefined;
  }
}

function tooLarge(size: number, maxBytes: number): string | undefined {
  return size > maxBytes ? `is ${size} bytes, more than the ${maxBytes} bytes a file of its kind may be` : undefined;
}

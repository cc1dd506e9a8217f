// Polling for tests that watch real processes and a real VS Code: wait until something holds, and
// fail with what was awaited (and the last value seen) when it does not within the time given.

/** Polls `get` until `ok` accepts its value, and returns that value. */
export async function untilValue<T>(
  what: string,
  get: () => Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs: number,
  intervalMs = 300,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(v)?.slice(0, 300)}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Polls `cond` until it holds. */
export async function until(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs = 50,
): Promise<void> {
  await untilValue(
    what,
    async () => cond(),
    (held) => held,
    timeoutMs,
    intervalMs,
  );
}

// How far a native runtime build is, from the lines CMake's build tool prints: Ninja's "[12/110]"
// (exact) or Make's "[ 18%]" (per target, so it can fall back: 100% of the addon's objects, then
// 98% of the trainer's). The fraction shown never goes back, and once a tenth is done and half a
// minute has passed it comes with how long the rest should take at the pace so far. No vscode here.

export interface BuildStep {
  /** 0–100, never lower than the last one given. */
  percent: number;
  /** What the notification says: "compiling: 45% — about 2 min left". */
  message: string;
}

export class BuildProgress {
  private percent = 0;

  /** `startedAt`: when compiling began (ms); `now` is passed in so tests need no clock. */
  constructor(private readonly startedAt: number) {}

  /** The step a line of build output makes, or undefined when it says nothing new. */
  line(text: string, now: number): BuildStep | undefined {
    const ninja = /^\[(\d+)\/(\d+)\]/.exec(text);
    const make = /^\[\s*(\d+)%\]/.exec(text);
    const seen = ninja ? (100 * Number(ninja[1])) / Math.max(1, Number(ninja[2])) : make ? Number(make[1]) : undefined;
    if (seen === undefined || !Number.isFinite(seen)) return undefined;
    const percent = Math.min(100, Math.max(this.percent, Math.floor(seen)));
    if (percent === this.percent && this.percent > 0) return undefined;
    this.percent = percent;
    return { percent, message: `compiling: ${percent}%${this.left(now)}` };
  }

  private left(now: number): string {
    const elapsed = (now - this.startedAt) / 1000;
    if (this.percent < 10 || this.percent >= 100 || elapsed < 30) return '';
    const seconds = (elapsed * (100 - this.percent)) / this.percent;
    return seconds < 90
      ? ` — about ${Math.max(10, Math.round(seconds / 10) * 10)} s left`
      : ` — about ${Math.round(seconds / 60)} min left`;
  }
}

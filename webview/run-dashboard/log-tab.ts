// The log tab, webview side: the run's stdout and stderr as the host follows them, each pane kept
// scrolled to the end while the person has not scrolled up, and trimmed to its last MAX_CHARS.
import type { DashboardHeader, LogStream } from '../../core/panels/dashboard-messages';

const MAX_CHARS = 1_000_000;

export const LOG_TAB_HTML = `
  <div class="log-panes">
    <section class="log-pane"><h2>stderr <span class="muted" id="log-stderr-what"></span></h2><div class="log-note muted" id="log-note-stderr"></div><pre id="log-stderr" class="log" tabindex="0">…</pre></section>
    <section class="log-pane"><h2>stdout <span class="muted" id="log-stdout-what"></span></h2><div class="log-note muted" id="log-note-stdout"></div><pre id="log-stdout" class="log" tabindex="0">…</pre></section>
  </div>`;

const shown: Record<LogStream, string> = { stdout: '', stderr: '' };

/** What each pane holds, in the words of the run's kind: the runtime's messages, or a person's script's. */
export function describeLogs(kind: DashboardHeader['runKind']): void {
  const what = document.getElementById('log-stderr-what');
  if (what)
    what.textContent =
      kind === 'command'
        ? "(your command's warnings, errors and logging output; marked [rank N] when FSDP Studio started the ranks)"
        : kind === 'native'
          ? "(the runtime's messages, warnings and errors)"
          : '';
  const out = document.getElementById('log-stdout-what');
  if (out)
    out.textContent =
      kind === 'native'
        ? "(the runtime's events, one line each)"
        : kind === 'command'
          ? '(what your command prints)'
          : '';
}

export function appendLog(stream: LogStream, text: string, reset: boolean, note: string | undefined): void {
  const pre = document.getElementById(`log-${stream}`);
  if (!pre) return;
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  if (reset) {
    shown[stream] = '';
    document.getElementById(`log-note-${stream}`)!.textContent = note ?? '';
  }
  let all = shown[stream] + text;
  // From a line start, or, in a line longer than what is kept, its last MAX_CHARS.
  if (all.length > MAX_CHARS) all = all.slice(all.indexOf('\n', all.length - MAX_CHARS) + 1 || all.length - MAX_CHARS);
  shown[stream] = all;
  pre.textContent = all || '(nothing yet)';
  if (atEnd || reset) pre.scrollTop = pre.scrollHeight;
}

/** For tests: what each pane shows. */
export function logText(): Record<LogStream, string> {
  return { ...shown };
}

// Watches one run folder with the editor's own watch (RunWatch, as the extension host makes it) on
// this machine or over ssh, until the run's end is read from metrics.jsonl and its last printed step
// from stderr.log, then prints what it read and this process's peak resident set (VmHWM).
// Run by test/runs/bounded-floods.test.ts while a run prints a flood: a watch that held a burst, a
// long line or a pile of problems whole would show it in that peak.
// Usage: node --import tsx test/harness/flood-watch.ts RUN_DIR LAST_STEP [SSH_ALIAS SSH_CONFIG]
import { readFileSync } from 'node:fs';
import { LocalMachine } from '../../runs/machines/local-machine';
import { SshMachine } from '../../runs/machines/ssh-machine';
import { RunWatch } from '../../runs/watch/run-watch';

const [runDir, lastStepArg, alias, configFile] = process.argv.slice(2);
const lastStep = Number(lastStepArg);
const machine = alias ? new SshMachine(alias, () => ({ configFile })) : new LocalMachine();
const watch = new RunWatch({ target: alias ?? 'local', runDir }, machine);

function peakRssBytes(): number {
  const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(hwm?.[1] ?? NaN) * 1024;
}

const timer = setInterval(() => {
  watch.poke();
  const loss = watch.history.step.loss;
  if (!watch.history.end || loss.lastStep !== lastStep) return;
  clearInterval(timer);
  const result = {
    peakRssBytes: peakRssBytes(),
    end: watch.history.end.status,
    lastLoss: loss.lastValue,
    problems: watch.problems.map((p) => p.message),
  };
  watch.dispose();
  console.log(JSON.stringify(result));
  process.exit(0);
}, 200);
void watch.start();

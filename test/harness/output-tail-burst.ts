// Follows a run folder's stdout.log with the Log tab's host side (RunOutputTail) until a line
// `the end` arrives, then prints what it handed the webview and this process's peak resident set.
// Run with a capped heap by test/runs/run-output-tail.test.ts: a burst held whole does not fit.
import { RunOutputTail } from '../../extension/webviews/run-output-tail';
import { LocalMachine } from '../../runs/machines/local-machine';

const runDir = process.argv[2];
let sentChars = 0;
let largestChunk = 0;
let shown = '';
let done = false;
const tail = new RunOutputTail(new LocalMachine(), runDir, (c) => {
  if (c.stream !== 'stdout') return;
  sentChars += c.text.length;
  largestChunk = Math.max(largestChunk, c.text.length);
  // What the tab would show (the webview keeps a bounded tail too).
  shown = (shown + c.text).slice(-200_000);
  if (!done && shown.includes('the end\n')) {
    done = true;
    tail.stop();
    console.log(JSON.stringify({ sentChars, largestChunk, maxRssBytes: process.resourceUsage().maxRSS * 1024, shown }));
  }
});
tail.follow();
console.log('following');

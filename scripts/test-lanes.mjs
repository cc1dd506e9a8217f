// The two lanes `npm test` runs side by side (issue 38, item 1). Much of the suite waits — on a
// SLURM scheduler, a run held at a step, code-server's workbench, an SSH round trip — so two mocha
// processes at once finish sooner on the 2-core machine than one (bench/results/suite-time-*.md has
// the figures). What decides which file goes where:
// - every file that uses the SSH tests' shared remote folder (test/harness/sshd.ts
//   SHARED_REMOTE_BASE: the runs suite's SSH and SLURM files, e2e/ssh-launch) runs in lane b, in
//   one process, with remote-runtime first: its first-use test builds the runtime there from the
//   set-up's compiler cache (test/harness/compiler-cache.ts), into the folder the later ones find;
// - lane a takes the CPU-bound native and unit files first, lane b the runs suite, which waits
//   most; the e2e files are shared out so that both lanes end about together (their measured
//   durations, bench/results/suite-time-2026-12-07.md);
// - every other shared thing is per test already: free ports, temporary folders, run ids.
// A test file is in exactly one lane: test/unit/test-lanes.test.ts checks it against the tree.

/** The e2e files lane b runs (after the runs suite); lane a runs every other e2e file. */
export const LANE_B_E2E = [
  'test/e2e/ssh-launch.test.ts',
  'test/e2e/slurm-launch.test.ts',
  'test/e2e/install-vsix.test.ts',
  'test/e2e/launch-command.test.ts',
  // ~75 s: lane b's .vsix first launch got ~90 s shorter with the unity build (2026-12-07 evening).
  'test/e2e/printed-metrics.test.ts',
];

export const LANES = {
  a: {
    specs: ['test/unit/**/*.test.ts', 'test/lsp/**/*.test.ts', 'test/native/**/*.test.ts', 'test/e2e/**/*.test.ts'],
    ignore: LANE_B_E2E,
  },
  b: {
    specs: ['test/runs/remote-runtime.test.ts', 'test/runs/**/*.test.ts', ...LANE_B_E2E],
    ignore: [],
  },
};

/** The whole suite in one mocha (FSDP_TEST_LANES=1): fastest first, the SSH files' order kept. */
export const SERIAL = [
  'test/unit/**/*.test.ts',
  'test/lsp/**/*.test.ts',
  'test/native/**/*.test.ts',
  'test/runs/remote-runtime.test.ts',
  'test/runs/**/*.test.ts',
  'test/e2e/**/*.test.ts',
];

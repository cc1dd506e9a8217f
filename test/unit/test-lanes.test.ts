// scripts/test-lanes.mjs: every test file runs in exactly one lane of `npm test`, and every file that
// shares the SSH tests' remote folder runs in lane b after remote-runtime (its first-use build).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');

interface Lane {
  specs: string[];
  ignore: string[];
}

function testFiles(dir: string): string[] {
  return readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => path.posix.join(dir, f.split(path.sep).join('/')));
}

/** The files a lane's spec patterns name, as mocha expands them (a `dir/**\/*.test.ts` glob or a file). */
function filesOf(lane: Lane): string[] {
  const out: string[] = [];
  for (const spec of lane.specs) {
    const glob = /^(.*)\/\*\*\/\*\.test\.ts$/.exec(spec);
    const files = glob ? testFiles(glob[1]) : [spec];
    for (const f of files) if (!lane.ignore.includes(f) && !out.includes(f)) out.push(f);
  }
  return out;
}

describe('npm test lanes (scripts/test-lanes.mjs)', () => {
  let lanes: Record<string, Lane>;
  let serial: string[];
  before(async () => {
    const mod = (await import(path.join(root, 'scripts', 'test-lanes.mjs'))) as {
      LANES: Record<string, Lane>;
      SERIAL: string[];
    };
    lanes = mod.LANES;
    serial = mod.SERIAL;
  });

  it('runs every test file in exactly one lane, and every lane file exists', () => {
    const all = ['test/unit', 'test/lsp', 'test/native', 'test/runs', 'test/e2e'].flatMap(testFiles).sort();
    const seen = new Map<string, string>();
    for (const [name, lane] of Object.entries(lanes)) {
      for (const f of filesOf(lane)) {
        assert.ok(all.includes(f), `lane ${name} names ${f}, which is not a test file`);
        assert.ok(!seen.has(f), `${f} runs in lane ${seen.get(f)} and lane ${name}`);
        seen.set(f, name);
      }
    }
    assert.deepEqual([...seen.keys()].sort(), all, 'the lanes together are the whole suite');
    assert.deepEqual(
      serial
        .flatMap((s) => filesOf({ specs: [s], ignore: [] }))
        .filter((f, i, a) => a.indexOf(f) === i)
        .sort(),
      all,
      'FSDP_TEST_LANES=1 runs the whole suite too',
    );
  });

  it('keeps the users of the shared SSH remote folder in one lane, remote-runtime first', () => {
    const users = ['test/unit', 'test/lsp', 'test/native', 'test/runs', 'test/e2e']
      .flatMap(testFiles)
      .filter((f) => f !== 'test/unit/test-lanes.test.ts')
      .filter((f) => /SHARED_REMOTE_BASE|LoopbackSshd/.test(readFileSync(path.join(root, f), 'utf8')));
    assert.ok(users.includes('test/runs/remote-runtime.test.ts'), 'remote-runtime uses the loopback sshd');
    const b = filesOf(lanes.b);
    for (const f of users) assert.ok(b.includes(f), `${f} uses the SSH remote folder but is not in lane b`);
    assert.equal(b[0], 'test/runs/remote-runtime.test.ts', 'lane b starts with the first-use build');
  });
});

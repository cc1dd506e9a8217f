// Which Python a launch uses: the Python extension's selection read through its public API
// (extension/python-interpreter.ts), and how a choice reaches the supervisor (the spec's python:
// first, then the selection, on this machine only). The Python extension is not installed here:
// the only stand-in is an object with the shape of its exports (environments.getActiveEnvironmentPath
// / resolveEnvironment); everything else is the real code.
import assert from 'node:assert/strict';
import { loadLaunchSpec, withSelectedPython } from '../../core/config/launch-spec';
import { supervisedArgv } from '../../runs/launch/command-launcher';
import {
  PYTHON_EXTENSION_ID,
  selectedPython,
  type Extensions,
  type PythonEnvironmentsApi,
} from '../../extension/python-interpreter';

type ActivePath = { id: string; path: string };
type Resolved = { executable: { uri?: { fsPath: string } } } | undefined;

/** vscode.extensions holding an ms-python.python whose exports are `exports`; records what was asked. */
function extensionsWith(
  exports: PythonEnvironmentsApi | undefined,
  opts: { active?: boolean; activateFails?: string } = {},
) {
  const calls: string[] = [];
  const extensions: Extensions = {
    getExtension: (id) => {
      calls.push(`getExtension ${id}`);
      if (id !== PYTHON_EXTENSION_ID) return undefined;
      return {
        isActive: opts.active ?? false,
        exports: opts.active ? exports : undefined,
        activate: async () => {
          calls.push('activate');
          if (opts.activateFails) throw new Error(opts.activateFails);
          return exports;
        },
      };
    },
  };
  return { extensions, calls };
}

function environments(
  active: ActivePath,
  resolve: (p: ActivePath | string) => Resolved,
  calls: unknown[],
): PythonEnvironmentsApi {
  return {
    environments: {
      getActiveEnvironmentPath: (resource) => {
        calls.push(['getActiveEnvironmentPath', resource]);
        return active;
      },
      resolveEnvironment: async (p) => {
        calls.push(['resolveEnvironment', p]);
        return resolve(p);
      },
    },
  };
}

const SPEC = (extra = '') =>
  loadLaunchSpec(`command: python3 train.py\n${extra}`, '/work/proj/train.fsdp-launch.yaml').spec!;

describe('which Python runs a launch spec', () => {
  it("uses the executable the Python extension resolves for the workspace's active environment, activating the extension first", async () => {
    const asked: unknown[] = [];
    const active = { id: '/proj/.venv', path: '/proj/.venv' }; // a folder, as the API warns it may be
    const { extensions, calls } = extensionsWith(
      environments(
        active,
        (p) => (p === active ? { executable: { uri: { fsPath: '/proj/.venv/bin/python' } } } : undefined),
        asked,
      ),
    );
    const resource = { fsPath: '/proj/train.fsdp-launch.yaml' } as never;
    assert.deepEqual(await selectedPython(extensions, resource), { path: '/proj/.venv/bin/python' });
    assert.deepEqual(calls, [`getExtension ${PYTHON_EXTENSION_ID}`, 'activate']);
    assert.deepEqual(asked, [
      ['getActiveEnvironmentPath', resource],
      ['resolveEnvironment', active],
    ]);
  });

  it('an extension already active is not activated again', async () => {
    const { extensions, calls } = extensionsWith(
      environments(
        { id: 'x', path: '/usr/bin/python3' },
        () => ({ executable: { uri: { fsPath: '/usr/bin/python3' } } }),
        [],
      ),
      { active: true },
    );
    assert.deepEqual(await selectedPython(extensions), { path: '/usr/bin/python3' });
    assert.ok(!calls.includes('activate'));
  });

  it('says why there is no selection: not installed, no environments API, an environment without a Python, activation failing', async () => {
    const none = async (e: Extensions) => {
      const r = await selectedPython(e);
      assert.ok('none' in r, JSON.stringify(r));
      return r.none;
    };
    assert.match(await none({ getExtension: () => undefined }), /ms-python\.python\) is not installed/);
    assert.match(await none(extensionsWith({}).extensions), /no environments API/);
    assert.match(await none(extensionsWith(undefined).extensions), /no environments API/);
    const conda = environments({ id: 'c', path: '/opt/conda/envs/empty' }, () => ({ executable: {} }), []);
    assert.match(await none(extensionsWith(conda).extensions), /\/opt\/conda\/envs\/empty\) has no Python interpreter/);
    const invalid = environments({ id: 'c', path: '/gone/python' }, () => undefined, []);
    assert.match(await none(extensionsWith(invalid).extensions), /\/gone\/python/);
    assert.match(await none(extensionsWith({}, { activateFails: 'boom' }).extensions), /did not answer: boom/);
  });

  it("the spec's python: comes first; the selection applies to this machine's launches only; a choice makes the supervisor run the command's python word", () => {
    const plain = SPEC();
    assert.equal(plain.python, 'python3');
    assert.equal(plain.pythonSource, undefined);
    assert.ok(
      !supervisedArgv(plain, '/c', '/r').includes('--use-this-python'),
      'no choice: the command runs as written',
    );

    const selected = withSelectedPython(plain, '/proj/.venv/bin/python');
    assert.equal(selected.python, '/proj/.venv/bin/python');
    assert.equal(selected.pythonSource, 'Python extension');
    const argv = supervisedArgv(selected, '/c', '/r');
    assert.equal(argv[0], '/proj/.venv/bin/python');
    assert.deepEqual(argv.slice(argv.indexOf('--') - 1), ['--use-this-python', '--', 'python3', 'train.py']);

    const own = SPEC('python: /opt/py/bin/python3\n');
    assert.equal(own.pythonSource, 'launch spec');
    assert.equal(
      withSelectedPython(own, '/proj/.venv/bin/python').python,
      '/opt/py/bin/python3',
      "the spec's own python: wins",
    );
    assert.ok(supervisedArgv(own, '/c', '/r').includes('--use-this-python'));

    const remote = loadLaunchSpec(
      'command: python3 train.py\ntarget: gpu-box\ncwd: /srv/code\n',
      '/work/proj/r.fsdp-launch.yaml',
    ).spec!;
    assert.equal(
      withSelectedPython(remote, '/proj/.venv/bin/python').python,
      'python3',
      'a path on this machine means nothing on gpu-box',
    );
    assert.equal(withSelectedPython(plain, undefined), plain);
  });
});

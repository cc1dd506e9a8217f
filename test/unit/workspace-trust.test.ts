// Workspace Trust as package.json declares it and the code enforces it: every FSDP command that runs
// a program or connects to a host is disabled in an untrusted workspace (enablement) and refuses
// when invoked by id (a guard in the code that registers it); every setting that names a program, a
// folder runtimes run from or an SSH config is restricted. The e2e test
// (test/e2e/untrusted-workspace.test.ts) checks the same in the real editor with a hostile workspace.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');

interface Manifest {
  capabilities: {
    untrustedWorkspaces: { supported: string; description: string; restrictedConfigurations?: string[] };
  };
  contributes: {
    commands: { command: string; enablement?: string }[];
    configuration: { properties: Record<string, { description?: string; markdownDescription?: string }> };
  };
}
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as Manifest;

/**
 * The commands that work in an untrusted workspace, and why none of them runs anything the
 * workspace names. A new command is either added here with its reason or gets the enablement.
 */
const WORKS_UNTRUSTED: Record<string, string> = {
  'fsdp.openDashboard': 'shows a recorded run (its events are read, nothing is started)',
  'fsdp.compareRuns': 'charts recorded runs side by side',
  'fsdp.showDiagnostics': "shows a run's NaN report",
  'fsdp.showSpikes': "shows a run's loss spikes",
  'fsdp.openRunConfig': 'opens a file in the editor',
  'fsdp.openRunFolder': "opens a run's run.json in the editor",
  'fsdp.openRunLog': "opens a run's log in the editor",
  'fsdp.renameRun': 'writes the name into the extension storage',
  'fsdp.refreshRuns': 'lists run folders of the workspace',
  'fsdp.openMemoryEstimator': "the estimate is the memory model's arithmetic",
  'fsdp.chooseModel': "keeps a model's name in the workspace's state; reads config.json files, runs nothing",
  'fsdp.newRunConfig': 'writes a config file from a template',
};

/** Files that register a safe command and reach runs only through a guard checked elsewhere here. */
const REACHES_THROUGH_A_GUARD: Record<string, string> = {
  'extension/studio-context.ts':
    'fsdp.refreshRuns calls runs.discover(), which watches remote runs only when trusted; ' +
    'remoteRunsDir serves Attach and launches, which need trust',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** The source of the file that registers `command` (registerCommand('<id>', …)). */
function registeringSource(command: string): { file: string; text: string } {
  const hits = sourceFiles(path.join(root, 'extension'))
    .map((file) => ({ file, text: readFileSync(file, 'utf8') }))
    .filter(({ text }) => text.includes(`registerCommand('${command}'`));
  assert.equal(hits.length, 1, `${command} is registered in ${hits.length} files under extension/ (expected one)`);
  return hits[0];
}

describe('Workspace Trust: package.json and the command guards', () => {
  const commands = manifest.contributes.commands;

  it('every command not listed as safe is disabled in an untrusted workspace', () => {
    const unguarded = commands
      .filter((c) => !(c.command in WORKS_UNTRUSTED))
      .filter((c) => !/\bisWorkspaceTrusted\b/.test(c.enablement ?? ''))
      .map((c) => c.command);
    assert.deepEqual(unguarded, [], 'these commands run programs or connect but have no isWorkspaceTrusted enablement');
  });

  it('the list of safe commands names only commands package.json contributes', () => {
    const known = new Set(commands.map((c) => c.command));
    assert.deepEqual(
      Object.keys(WORKS_UNTRUSTED).filter((id) => !known.has(id)),
      [],
    );
  });

  it("Check environment and Attach, which run launch specs' Pythons and connect to hosts, are among the disabled", () => {
    for (const id of ['fsdp.checkEnvironment', 'fsdp.attachRun', 'fsdp.buildRuntime', 'fsdp.prepareSampleData']) {
      const c = commands.find((x) => x.command === id);
      assert.ok(c, `${id} is not contributed`);
      assert.match(c.enablement ?? '', /\bisWorkspaceTrusted\b/, `${id} lacks the enablement`);
    }
  });

  it('every disabled command also refuses in code when invoked by id in an untrusted workspace', () => {
    const missing = commands
      .filter((c) => /\bisWorkspaceTrusted\b/.test(c.enablement ?? ''))
      .filter((c) => {
        const { text } = registeringSource(c.command);
        // The guard is requireTrust(…) (extension/commands/launch-run.ts) or a direct isTrusted check.
        return !/requireTrust\(|workspace\.isTrusted/.test(text);
      })
      .map((c) => `${c.command} (${path.relative(root, registeringSource(c.command).file)})`);
    assert.deepEqual(missing, [], 'these commands have the enablement but no trust check in the code that runs them');
  });

  it('every setting that names an SSH config, hosts, a program or a folder run from is restricted', () => {
    const restricted = new Set(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations ?? []);
    const props = manifest.contributes.configuration.properties;
    const namesSomethingRun = Object.entries(props)
      .filter(([key, p]) => {
        const text = `${key} ${p.description ?? ''} ${p.markdownDescription ?? ''}`;
        return (
          /ssh -F|ssh config|host alias|\bfsdp\.ssh\.hosts\b/i.test(text) ||
          /\b(python|program|executable|interpreter|command)\b/i.test(key) ||
          /\bdirectory\b|\bfolder\b.*\b(built|runtime)\b/i.test(text)
        );
      })
      .map(([key]) => key);
    assert.ok(
      namesSomethingRun.includes('fsdp.ssh.configFile'),
      'the filter above no longer finds fsdp.ssh.configFile',
    );
    assert.deepEqual(
      namesSomethingRun.filter((k) => !restricted.has(k)),
      [],
      'settings that name what runs, or where, are missing from restrictedConfigurations',
    );
    assert.deepEqual(
      [...restricted].filter((k) => !(k in props)),
      [],
      'restrictedConfigurations names settings that do not exist',
    );
  });

  it('the untrusted description says what still works', () => {
    const { supported, description } = manifest.capabilities.untrustedWorkspaces;
    assert.equal(supported, 'limited');
    assert.match(description, /config checks/);
    assert.match(description, /memory estimates/);
    assert.match(description, /runs on this machine/, 'it says which dashboards still open');
    assert.match(description, /a run on an SSH host/, 'it says that remote runs are refused');
  });

  // The commands that work untrusted show runs; a run on an SSH host is reached over ssh, which
  // reads the person's SSH config (a ProxyCommand runs) and connects. Each such path is refused
  // before it starts a watch or a machine, with a message (mayReach), and Runs itself never makes
  // a remote machine untrusted (remoteRefusal under machine() and cluster()).
  it('every safe command or restored panel that reaches a run asks mayReach first', () => {
    const reaching = /\.watch\(|\.machine\(|\.cluster\(/;
    const files = new Set(Object.keys(WORKS_UNTRUSTED).map((id) => registeringSource(id).file));
    for (const f of sourceFiles(path.join(root, 'extension'))) {
      if (readFileSync(f, 'utf8').includes('registerWebviewPanelSerializer(')) files.add(f);
    }
    const unguarded = [...files]
      .map((file) => ({ file, text: readFileSync(file, 'utf8') }))
      .filter(({ file }) => !(path.relative(root, file) in REACHES_THROUGH_A_GUARD))
      .filter(({ text }) => reaching.test(text) && !/\bmayReach\(/.test(text))
      .map(({ file }) => path.relative(root, file));
    assert.deepEqual(unguarded, [], "these files reach a run's watch or machine without mayReach");
    // The dashboard every command opens through (studio.dashboards.show) guards inside.
    const dashboard = readFileSync(path.join(root, 'extension/webviews/run-dashboard.ts'), 'utf8');
    const show = dashboard.slice(dashboard.indexOf('  show(record: RunRecord)'));
    assert.ok(show.indexOf('mayReach(') >= 0 && show.indexOf('mayReach(') < show.indexOf('this.runs.watch('));
  });

  it("Runs refuses to make a remote run's machine or SLURM login host in an untrusted workspace", () => {
    const text = readFileSync(path.join(root, 'extension/runs/runs.ts'), 'utf8');
    for (const method of ['machine(target: TargetName)', 'cluster(target: TargetName)']) {
      const body = text.slice(text.indexOf(method), text.indexOf('\n  }\n', text.indexOf(method)));
      const guard = body.indexOf('refuseRemote(target)');
      assert.ok(guard >= 0, `Runs.${method} has no refuseRemote(target)`);
      assert.ok(guard < body.indexOf('new '), `Runs.${method} guards after it makes one`);
    }
    assert.match(text, /remote\.length === 0 \|\| vscode\.workspace\.isTrusted/);
    // Watching at start-up (discover) skips remote runs untrusted, and trust granted later rediscovers.
    assert.match(text, /r\.launchedAt !== undefined && vscode\.workspace\.isTrusted/);
    const context = readFileSync(path.join(root, 'extension/studio-context.ts'), 'utf8');
    assert.match(context, /onDidGrantWorkspaceTrust\([^]*?this\.runs\.discover\(\)/);
  });
});

// `node --import tsx bench/accelerate-100k.ts`: CPU time of an accelerate config of 100,000 keys
// (test/harness/large-configs.ts, 'accelerate-mapping') as the estimate and the config checks read
// it (issue 40, item 7: under 2 s), beside the same text read by the `yaml` package's CST, which
// every YAML 1.1 document took before js-yaml's YAML 1.1 schema read large ones
// (core/config/large-yaml-document.ts). CPU time, not wall time: other tenants of a shared
// machine inflate the latter. Prints one line per measurement (best of 3 after a warm-up).
import os from 'node:os';
import { analyseConfig } from '../core/config/config-analysis';
import { YamlSourceDocument } from '../core/config/yaml-document';
import { readConfigForEstimate } from '../core/memory/inputs/read-config';
import { largeConfig } from '../test/harness/large-configs';

function bestCpuMs(run: () => unknown): number {
  run();
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const c0 = process.cpuUsage();
    run();
    const c = process.cpuUsage(c0);
    best = Math.min(best, (c.user + c.system) / 1000);
  }
  return best;
}

const { kind, text, file } = largeConfig('accelerate-mapping', 100_000);
const rows: Array<[string, number]> = [
  [
    'estimate input (readConfigForEstimate)',
    bestCpuMs(() => readConfigForEstimate(text, file, { model: 'llama-3-8b' })),
  ],
  ['config checks (analyseConfig)', bestCpuMs(() => analyseConfig(kind, text, file))],
  ["the yaml package's CST alone (the reader before)", bestCpuMs(() => new YamlSourceDocument(text, '1.1'))],
];
console.log(`${os.cpus()[0]?.model ?? 'cpu'}, load ${os.loadavg()[0].toFixed(1)}; ${text.length} chars, 100,000 keys`);
for (const [what, ms] of rows) console.log(`${what}: ${ms.toFixed(0)} ms CPU`);

// What differs between the configs of the runs being compared: every leaf of the resolved configs
// as a dotted key, kept when the runs do not all have the same value (or some lack it).

export interface ConfigDifference {
  /** Dotted path, e.g. training.learning_rate. */
  key: string;
  /** One per run, in the runs' order; undefined where a run's config does not have the key. */
  values: Array<string | undefined>;
}

/** Differences in the order keys first appear (a config's own section order). */
export function configDifferences(configs: unknown[]): ConfigDifference[] {
  const flat = configs.map((c) => flatten(c));
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const f of flat) {
    for (const k of f.keys()) {
      if (!seen.has(k)) {
        seen.add(k);
        keys.push(k);
      }
    }
  }
  const out: ConfigDifference[] = [];
  for (const key of keys) {
    const values = flat.map((f) => f.get(key));
    if (values.some((v) => v !== values[0])) out.push({ key, values });
  }
  return out;
}

/** Leaves of a config as dotted keys and display strings (arrays as one value, JSON). */
function flatten(value: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value as Record<string, unknown>))
      flatten(v, prefix ? `${prefix}.${k}` : k, out);
    return out;
  }
  if (prefix) out.set(prefix, typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value)));
  return out;
}

// run.json: the manifest of a run directory. Types generated from the schema, one validator.
import Ajv from 'ajv';
import manifestSchema from '../schemas/run-manifest.schema.json';
import type { RunManifest } from '../generated/run-manifest';

export * from '../generated/run-manifest';

export const RUN_MANIFEST_VERSION = 1;

const validateManifest = new Ajv({ strict: false }).compile<RunManifest>(manifestSchema);

/** Parses run.json text; returns the manifest or a message saying what is wrong with it. */
export function parseRunManifest(text: string): { manifest: RunManifest } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Not JSON.parse's message: it quotes the text, and run.json may be a link to a person's file.
    return { error: `run.json is not valid JSON (${text.length} characters; not shown)` };
  }
  if (!validateManifest(value)) {
    const err = validateManifest.errors?.[0];
    const where = err?.instancePath ? err.instancePath.slice(1).replace(/\//g, '.') : 'run.json';
    return { error: `run.json: ${where} ${err?.message ?? 'is invalid'}` };
  }
  return { manifest: value };
}

// The metrics protocol: types generated from core/schemas/metrics-event.schema.json and one
// compiled validator, shared by the run-log reader, the extension and the tests.
import Ajv from 'ajv';
import metricsSchema from '../schemas/metrics-event.schema.json';
import type { MetricsEvent } from '../generated/metrics-event';

export * from '../generated/metrics-event';

export const METRICS_PROTOCOL_VERSION = 1;

export type MetricsEventType = MetricsEvent['type'];
export type MetricsEventOf<T extends MetricsEventType> = Extract<MetricsEvent, { type: T }>;

const ajv = new Ajv({ allErrors: false, strict: false });
const validateEvent = ajv.compile<MetricsEvent>(metricsSchema);
const branchValidators = new Map<string, ReturnType<typeof ajv.compile>>();

/**
 * Checks a parsed JSON value against the protocol. Returns null when it is a valid event, else a
 * message naming the offending property. The message is about the branch the value's `type`
 * selects, not the whole oneOf, so it says what is actually wrong.
 */
export function checkMetricsEvent(value: unknown): string | null {
  if (validateEvent(value)) return null;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const record = value as Record<string, unknown>;
  if (record.v !== METRICS_PROTOCOL_VERSION)
    return `unsupported protocol version v=${JSON.stringify(record.v)} (this reader knows v=${METRICS_PROTOCOL_VERSION})`;
  const type = record.type;
  const branch = typeof type === 'string' ? branchSchemaName(type) : undefined;
  if (!branch) return `unknown event type ${JSON.stringify(type)}`;
  let validate = branchValidators.get(branch);
  if (!validate) {
    validate = ajv.compile({ $ref: `${metricsSchema.$id}#/definitions/${branch}` });
    branchValidators.set(branch, validate);
  }
  validate(value);
  const err = validate.errors?.[0];
  if (!err) return 'does not match the protocol';
  const where = err.instancePath ? err.instancePath.slice(1).replace(/\//g, '.') : type;
  return `${type} event: ${where} ${err.message ?? 'is invalid'}`;
}

function branchSchemaName(type: string): string | undefined {
  const name =
    type
      .split('_')
      .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
      .join('') + 'Event';
  return name in metricsSchema.definitions ? name : undefined;
}

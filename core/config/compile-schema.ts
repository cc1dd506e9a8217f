// One ajv instance for all config schemas. allErrors: every problem at once; verbose: errors carry
// their schema, so unknown-key problems can list the known keys; strict off: our schemas carry
// annotations of their own (x-unknown-keys, x-replaced-by, ...).
import Ajv, { type ValidateFunction } from 'ajv';

const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });

export function compileSchema<T = unknown>(schema: object): ValidateFunction<T> {
  return ajv.compile<T>(schema);
}

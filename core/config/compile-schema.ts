// One ajv instance for all config schemas. allErrors: every problem at once; verbose: errors carry
// their schema, so unknown-key problems can list the known keys; strict off: our schemas carry
// annotations of their own (x-unknown-keys, x-replaced-by, ...).
import Ajv, { type ValidateFunction } from 'ajv';

const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });

/**
 * A validator compiled on its first use: importing the config checks compiles nothing, so a
 * command that checks one kind of config (fsdp-train: run configs) does not pay for the others'
 * schemas (compiling all four was a fifth of `fsdp-train --plan` on a 100k-key config). Callers
 * use it as ajv's own: call it, then read `.errors`.
 */
export function compileSchema<T = unknown>(schema: object): ValidateFunction<T> {
  let compiled: ValidateFunction<T> | undefined;
  const validate = ((data: unknown) => {
    compiled ??= ajv.compile<T>(schema);
    const ok = compiled(data);
    validate.errors = compiled.errors;
    return ok;
  }) as ValidateFunction<T>;
  return validate;
}

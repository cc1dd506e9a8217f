// accelerate reads its config with PyYAML, which follows YAML 1.1: an unquoted NO, no, yes, on or off
// is a boolean. `mixed_precision: no` becomes False and `accelerate launch` fails calling .lower() on
// it (utils/launch.py); `distributed_type: NO` becomes False, matches no distributed type and runs as
// NO only by accident (config_args.py converts strings only). Quoting keeps the string.
import { typesOf, type SchemaNode } from '../../config/schema-walk';
import type { ConfigPath } from '../../config/source-document';
import { report, type ConfigRule, type RuleContext } from '../rule';
import accelerateSchema from '../../schemas/accelerate-config.schema.json';

const YAML11_BOOLEAN_WORDS = /^(y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$/;

export const yaml11Booleans: ConfigRule = {
  code: 'accelerate.yaml11-boolean',
  why: 'accelerate loads the file with PyYAML (YAML 1.1), where unquoted yes/no/on/off are booleans, not strings: `mixed_precision: no` is read as false and accelerate launch fails calling .lower() on it.',
  source:
    'accelerate/commands/config/config_args.py: load_config_from_file (yaml.safe_load), BaseConfig.__post_init__; accelerate/utils/launch.py: prepare_simple_launcher_cmd_env; https://yaml.org/type/bool.html',
  check(ctx) {
    return stringKeysReadAsBooleans(ctx).map(({ path, word }) => {
      const fatal = path[0] === 'mixed_precision';
      const consequence = fatal ? 'and accelerate launch fails on it' : 'where accelerate expects a string';
      return report(ctx, this, {
        path,
        severity: fatal ? 'error' : 'warning',
        message: `PyYAML reads the unquoted ${word} as the boolean ${/^(y|yes|on)$/i.test(word) ? 'true' : 'false'} ${consequence}; quote it: '${word}'`,
        fixes: [{ title: `Quote it: '${word}'`, preferred: true, edits: [{ kind: 'set', path, value: word }] }],
      });
    });
  },
};

/** Keys whose schema wants a string but whose YAML 1.1 value is a boolean written as a word. */
export function stringKeysReadAsBooleans(ctx: RuleContext): Array<{ path: ConfigPath; word: string }> {
  const found: Array<{ path: ConfigPath; word: string }> = [];
  const props = (accelerateSchema as SchemaNode).properties ?? {};
  for (const [key, value] of Object.entries(ctx.value)) {
    const schema = props[key];
    if (typeof value !== 'boolean' || !schema || typesOf(schema).includes('boolean')) continue;
    const span = ctx.doc.valueSpan([key]);
    const word = span ? ctx.doc.text.slice(span.start, span.end) : '';
    if (YAML11_BOOLEAN_WORDS.test(word)) found.push({ path: [key], word });
  }
  return found;
}

// Comments in a DeepSpeed .json config: DeepSpeed reads them (deepspeed/runtime/config.py loads the
// file with hjson), but accelerate (deepspeed_config_file) and the Hugging Face Trainer
// (HfDeepSpeedConfig) open it with json.load, which stops at the first comment. Accepted, and said
// once, at the first comment, as strongly as the fsdp.deepspeed.launchedWith setting makes it matter.
import { jsonComments } from '../../config/json-comments';
import type { ConfigProblem } from '../../config/schema-problems';
import type { ConfigRule } from '../rule';

export const jsonCommentsRule: ConfigRule = {
  code: 'deepspeed.json-comments',
  why: "DeepSpeed's loader (hjson) reads comments in a JSON config; accelerate's deepspeed_config_file and the Hugging Face Trainer read the file with json.load and refuse it. The setting fsdp.deepspeed.launchedWith says how your configs are launched.",
  source:
    'deepspeed/runtime/config.py: DeepSpeedConfig.__init__ (hjson.load); transformers/integrations/deepspeed.py: HfDeepSpeedConfig (json.load); accelerate/utils/deepspeed.py: HfDeepSpeedConfig',
  check(ctx) {
    if (!/\.json$/i.test(ctx.fileName)) return [];
    const launched = ctx.env.settings.deepspeedLaunchedWith;
    if (launched === 'deepspeed') return [];
    const first = jsonComments(ctx.doc.text)[0];
    if (!first) return [];
    const problem: ConfigProblem = {
      // Launched through Hugging Face the file fails to load; with the launcher unknown it is said,
      // not marked as a fault (the sample's deepspeed launch reads it).
      severity: launched === 'huggingface' ? 'error' : 'information',
      path: [],
      code: jsonCommentsRule.code,
      message:
        launched === 'huggingface'
          ? 'a comment in a JSON config: accelerate and the Hugging Face Trainer read this file with json.load, which refuses comments (DeepSpeed alone would read them)'
          : 'a comment in a JSON config: DeepSpeed reads it (hjson), but accelerate and the Hugging Face Trainer read the file with json.load, which refuses comments (set fsdp.deepspeed.launchedWith to say how you launch)',
      range: { start: ctx.doc.positionAt(first.offset), end: ctx.doc.positionAt(first.offset + first.length) },
    };
    return [problem];
  },
};

// torchtitan's parallel degrees as its ParallelDims resolves them (torchtitan/distributed/
// parallel_dims.py): every degree defaults to 1 except data_parallel_shard_degree, whose -1 takes
// the ranks left over; the world size is WORLD_SIZE, which the TOML does not hold, so it comes from
// the config's `fsdp-studio: nproc=… nnodes=…` comment when given.
import { findOptionComment } from '../../memory/inputs/estimate-options';
import { asNumber, isObject, type RuleContext } from '../rule';

export const PARALLELISM = 'parallelism';

export interface Degrees {
  replicate: number;
  /** As written: -1 means "what is left". */
  shardAsWritten: number;
  /** Resolved with the world size; undefined when -1 and the world size is unknown or does not divide. */
  shard?: number;
  cp: number;
  tp: number;
  pp: number;
  ep: number;
  etp: number;
  /** From the fsdp-studio comment (nproc × nnodes), when given. */
  world?: number;
}

/** The degrees of a config whose parallelism section has the schema's types (the schema reports the rest). */
export function readDegrees(ctx: RuleContext): Degrees | undefined {
  const p = ctx.value[PARALLELISM] ?? {};
  if (!isObject(p)) return undefined;
  const degree = (key: string, fallback: number) => {
    const v = asNumber(p[key]);
    return v !== undefined && Number.isInteger(v) ? v : fallback;
  };
  const d: Degrees = {
    replicate: degree('data_parallel_replicate_degree', 1),
    shardAsWritten: degree('data_parallel_shard_degree', -1),
    cp: degree('context_parallel_degree', 1),
    tp: degree('tensor_parallel_degree', 1),
    pp: degree('pipeline_parallel_degree', 1),
    ep: degree('expert_parallel_degree', 1),
    etp: degree('expert_tensor_parallel_degree', 1),
  };
  if (
    [d.replicate, d.cp, d.tp, d.pp, d.ep, d.etp].some((x) => x < 1) ||
    d.shardAsWritten === 0 ||
    d.shardAsWritten < -1
  )
    return undefined;
  const world = worldFromComment(ctx.doc.text);
  if (world !== undefined) d.world = world;
  const others = d.replicate * d.cp * d.tp * d.pp;
  if (d.shardAsWritten > 0) d.shard = d.shardAsWritten;
  else if (world !== undefined && world % others === 0) d.shard = world / others;
  return d;
}

/** nproc × nnodes of the `fsdp-studio:` comment; undefined when it gives neither. */
export function worldFromComment(text: string): number | undefined {
  const c = findOptionComment(text);
  if (!c || (c.options.nproc === undefined && c.options.nnodes === undefined)) return undefined;
  return (c.options.nproc ?? 1) * (c.options.nnodes ?? 1);
}

/** Ranks that see different data: replicate × shard (torchtitan's "batch" mesh). */
export function batchDegree(d: Degrees): number | undefined {
  return d.shard === undefined ? undefined : d.replicate * d.shard;
}

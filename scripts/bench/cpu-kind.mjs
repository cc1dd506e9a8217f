// The CPU a benchmark ran on, as the runtime's BLAS table names it (native/src/runtime/blas_kernels.h):
// vendor and widest vector unit ("intel-avx512", "amd-avx2"). CPU speed figures are kept one file per
// kind (issue 42 item 4), so the kind is in each result's file name as well as in its machine record.
import { readFileSync } from 'node:fs';

/** { kind, model, family, model_number, bf16, amx } from /proc/cpuinfo's first processor. */
export function cpuKind() {
  const info = readFileSync('/proc/cpuinfo', 'utf8');
  const flags = new Set((info.match(/^flags\s*:(.*)$/m)?.[1] ?? '').trim().split(/\s+/));
  const vendor = info.match(/^vendor_id\s*:\s*(\S+)/m)?.[1] ?? 'unknown';
  const v = vendor === 'GenuineIntel' ? 'intel' : vendor === 'AuthenticAMD' ? 'amd' : vendor.toLowerCase();
  const tier = flags.has('avx512f') ? 'avx512' : flags.has('avx2') && flags.has('fma') ? 'avx2' : 'sse';
  const model = (info.match(/^model name\s*:\s*(.*)$/m)?.[1] ?? '').trim();
  const family = info.match(/^cpu family\s*:\s*(\d+)/m)?.[1];
  const modelNo = info.match(/^model\s*:\s*(\d+)/m)?.[1];
  return {
    kind: `${v}-${tier}`,
    model,
    family: Number(family),
    model_number: `0x${Number(modelNo).toString(16)}`,
    bf16: flags.has('avx512_bf16'),
    amx: flags.has('amx_tile'),
  };
}

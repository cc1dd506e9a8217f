// The CUDA backend compile check (native/cmake/cuda.cmake, target fsdp_cuda_kernels_check): on a
// machine with nvcc, every kernel file compiles for every architecture of FSDP_CUDA_ARCHITECTURES
// (sm_80 and sm_90) and every host file of the backend compiles, except the ones that need a
// library this machine lacks (cuBLASLt, NCCL), which the report names with the reason (cuBLASLt's
// one file is then still syntax-checked against a stub of its header); the GPU tests and the
// kernel micro-benchmark compile too. Without nvcc there is nothing to compile, and the test says so.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './native-build';

const cmakeBuild = path.join(repoRoot, 'native', 'build');
const cudaSources = path.join(repoRoot, 'native', 'src', 'backend', 'cuda');
const report = path.join(cmakeBuild, 'cuda-check', 'report.json');

interface CheckReport {
  nvcc: string;
  cuda_version: string;
  architectures: string[];
  backend_built: boolean;
  compiled: string[];
  skipped: Array<{ file: string; reason: string }>;
  stub_checked?: string[];
}

function nvccPresent(): boolean {
  return spawnSync('nvcc', ['--version'], { encoding: 'utf8' }).status === 0 || existsSync('/usr/local/cuda/bin/nvcc');
}

describe('native runtime: CUDA backend compile check', function () {
  // nvcc compiles the attention kernels for two architectures: minutes on two busy cores.
  this.timeout(1_800_000);

  before(function () {
    if (!nvccPresent()) {
      console.log('    no nvcc on this machine: the CUDA sources cannot be compiled here');
      this.skip();
    }
  });

  it('compiles every kernel for sm_80 and sm_90 and every host file whose libraries are here', () => {
    const r = spawnSync('cmake', ['--build', cmakeBuild, '--target', 'fsdp_cuda_kernels_check', '--parallel', '2'], { encoding: 'utf8' });
    assert.equal(r.status, 0, `the compile check failed:\n${(r.stdout + r.stderr).slice(-8000)}`);
    const check = JSON.parse(readFileSync(report, 'utf8')) as CheckReport;
    assert.deepEqual(check.architectures, ['80', '90']);

    const kernels = readdirSync(path.join(cudaSources, 'kernels')).filter((f) => f.endsWith('.cu')).map((f) => `kernels/${f}`);
    const hosts = readdirSync(cudaSources).filter((f) => f.endsWith('.cc'));
    assert.ok(kernels.length >= 7, `kernel files: ${kernels.join(', ')}`);
    for (const k of kernels) assert.ok(check.compiled.includes(k), `${k} was not compiled`);
    // Every host file is either compiled or skipped for a library it really includes.
    for (const h of hosts) {
      const skip = check.skipped.find((s) => s.file === h);
      if (!skip) {
        assert.ok(check.compiled.includes(h), `${h} was neither compiled nor skipped`);
        continue;
      }
      const text = readFileSync(path.join(cudaSources, h), 'utf8');
      const needs = /#include <(cublasLt|nccl)\.h>/.exec(text)?.[1];
      assert.ok(needs, `${h} was skipped but includes neither cublasLt.h nor nccl.h`);
      assert.match(skip.reason, new RegExp(`${needs}\\.h`));
    }
    // No file outside the two isolated ones may need cuBLAS or NCCL.
    for (const h of hosts.filter((f) => check.compiled.includes(f))) {
      assert.doesNotMatch(readFileSync(path.join(cudaSources, h), 'utf8'), /#include <(cublas|nccl)/, `${h} includes cuBLAS or NCCL`);
    }
    // A skipped cuBLASLt file is syntax-checked against the stub header instead.
    for (const s of check.skipped.filter((s) => /cublasLt\.h/.test(s.reason))) {
      assert.ok(check.stub_checked?.includes(s.file), `${s.file} was neither compiled nor checked against the cublasLt.h stub`);
    }
    // The GPU-only sources (built with the backend) compile here.
    const gpuOnly = [
      ...readdirSync(path.join(repoRoot, 'native', 'test', 'cuda')).filter((f) => f.endsWith('.cc')).map((f) => `test/cuda/${f}`),
      ...readdirSync(path.join(repoRoot, 'native', 'bench')).filter((f) => f.endsWith('.cc')).map((f) => `bench/${f}`),
    ];
    assert.ok(gpuOnly.includes('bench/kernel_bench.cc') && gpuOnly.includes('test/cuda/attention_kernel_test.cc'), gpuOnly.join(', '));
    for (const f of gpuOnly) assert.ok(check.compiled.includes(f), `${f} was not compiled`);
    console.log(`    compiled with nvcc ${check.cuda_version}: ${check.compiled.join(', ')}`);
    if (check.stub_checked?.length) console.log(`    checked against the cublasLt.h stub: ${check.stub_checked.join(', ')}`);
    for (const s of check.skipped) console.log(`    not compiled here: ${s.file}: ${s.reason}`);
  });
});

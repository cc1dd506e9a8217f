// The CUDA compile check (native/cmake/cuda.cmake, target fsdp_cuda_kernels_check): on a machine
// with nvcc, every .cu file of the backend compiles for every architecture of
// FSDP_CUDA_ARCHITECTURES (sm_80 and sm_90) — for sm_80 alone while no source branches on
// __CUDA_ARCH__, since PTX that compiles for compute_80 compiles for every later architecture, for
// each of them once one does; every host file of the backend and of the GPU
// collectives (parallel/cuda/), every runtime file with an FSDP_WITH_CUDA branch (with it on) and
// every GPU test compiles — except the ones that need a library this machine lacks (cuBLASLt,
// NCCL), which the report names with the reason; those files are then still syntax-checked against
// a stub of the header they need (native/cmake/stubs/), and the kernel micro-benchmark
// (native/bench/) compiles too.
// Without nvcc there is nothing to compile, and the test says so.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './native-build';

const cmakeBuild = path.join(repoRoot, 'native', 'build');
const nativeDir = path.join(repoRoot, 'native');
const cudaSources = path.join(nativeDir, 'src', 'backend', 'cuda');
const commSources = path.join(nativeDir, 'src', 'parallel', 'cuda');
const gpuTests = path.join(nativeDir, 'test', 'cuda');
const report = path.join(cmakeBuild, 'cuda-check', 'report.json');

interface CheckReport {
  nvcc: string;
  cuda_version: string;
  architectures: string[];
  compiled_for: string[];
  arch_branches: string[];
  backend_built: boolean;
  compiled: string[];
  skipped: Array<{ file: string; reason: string }>;
  stub_checked?: string[];
}

/** The C++ and CUDA sources under `dir`, at any depth. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sourceFiles(path.join(dir, e.name))
      : /\.(cc|cu|cuh|h)$/.test(e.name)
        ? [path.join(dir, e.name)]
        : [],
  );
}

function nvccPresent(): boolean {
  return spawnSync('nvcc', ['--version'], { encoding: 'utf8' }).status === 0 || existsSync('/usr/local/cuda/bin/nvcc');
}

describe('native runtime: CUDA backend compile check', function () {
  // nvcc compiles the attention kernels: minutes on two busy cores.
  this.timeout(1_800_000);

  before(function () {
    if (!nvccPresent()) {
      console.log('    no nvcc on this machine: the CUDA sources cannot be compiled here');
      this.skip();
    }
  });

  it('compiles every kernel for sm_80 and sm_90 (for sm_80 while no source branches on the architecture), and every host file, CUDA branch and GPU test whose libraries are here', () => {
    const r = spawnSync('cmake', ['--build', cmakeBuild, '--target', 'fsdp_cuda_kernels_check', '--parallel', '2'], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, `the compile check failed:\n${(r.stdout + r.stderr).slice(-8000)}`);
    const check = JSON.parse(readFileSync(report, 'utf8')) as CheckReport;
    assert.deepEqual(check.architectures, ['80', '90']);
    // Read here as well as by CMake: a source that asks which architecture it is compiled for
    // (__CUDA_ARCH__ and its feature macros) has code only some architectures see, and then every
    // architecture must be compiled; otherwise the lowest proves them all.
    const branching = sourceFiles(path.join(nativeDir, 'src'))
      .filter((f) => /\.(cu|cuh|h)$/.test(f) && readFileSync(f, 'utf8').includes('__CUDA_ARCH'))
      .map((f) => path.relative(nativeDir, f))
      .sort();
    // CMake reads the sources when it configures: a build configured before a file began (or
    // stopped) branching compiles for the architectures of then, so configure it again.
    assert.deepEqual(
      [...check.arch_branches].sort(),
      branching,
      `${cmakeBuild} was configured before the sources' __CUDA_ARCH__ branches changed: run its CMake configure again`,
    );
    assert.deepEqual(check.compiled_for, branching.length > 0 ? ['80', '90'] : ['80'], branching.join(', '));

    const kernels = [
      ...readdirSync(path.join(cudaSources, 'kernels'))
        .filter((f) => f.endsWith('.cu'))
        .map((f) => `kernels/${f}`),
      ...readdirSync(cudaSources).filter((f) => f.endsWith('.cu')),
    ];
    // Host files as the report names them: the backend's by file name, the others by path under native/.
    const hosts = new Map<string, string>();
    for (const f of readdirSync(cudaSources).filter((f) => f.endsWith('.cc'))) hosts.set(f, path.join(cudaSources, f));
    for (const f of readdirSync(commSources).filter((f) => f.endsWith('.cc')))
      hosts.set(`src/parallel/cuda/${f}`, path.join(commSources, f));
    for (const f of readdirSync(gpuTests).filter((f) => f.endsWith('.cc')))
      hosts.set(`test/cuda/${f}`, path.join(gpuTests, f));
    for (const f of ['src/parallel/device_collectives.cc', 'src/backend/backend.cc'])
      hosts.set(f, path.join(nativeDir, f));
    assert.ok(kernels.length >= 8, `kernel files: ${kernels.join(', ')}`);
    for (const k of kernels) assert.ok(check.compiled.includes(k), `${k} was not compiled`);
    // Every host file is either compiled or skipped for a library it really includes.
    for (const [name, file] of hosts) {
      const skip = check.skipped.find((s) => s.file === name);
      if (!skip) {
        assert.ok(check.compiled.includes(name), `${name} was neither compiled nor skipped`);
        continue;
      }
      const text = readFileSync(file, 'utf8');
      const needs = /#include <(cublasLt|nccl)\.h>|#include "parallel\/cuda\/(nccl)_collectives\.h"/.exec(text);
      assert.ok(needs, `${name} was skipped but includes neither cublasLt.h nor nccl.h`);
      assert.match(skip.reason, new RegExp(`${needs[1] ?? needs[2]}\\.h`));
    }
    // No file outside the isolated ones may need cuBLAS or NCCL.
    for (const [name, file] of hosts) {
      if (!check.compiled.includes(name)) continue;
      assert.doesNotMatch(readFileSync(file, 'utf8'), /#include <(cublas|nccl)/, `${name} includes cuBLAS or NCCL`);
    }
    // A file skipped for cuBLASLt or NCCL (the GPU collectives' NCCL path, its test) is syntax-checked against the stub header instead.
    for (const s of check.skipped.filter((s) => /(cublasLt|nccl)\.h/.test(s.reason))) {
      assert.ok(
        check.stub_checked?.includes(s.file),
        `${s.file} was neither compiled nor checked against a stub of the header it needs`,
      );
    }
    // The kernel micro-benchmark (built with the backend) compiles here; the GPU tests are among the hosts above.
    const bench = readdirSync(path.join(nativeDir, 'bench'))
      .filter((f) => f.endsWith('.cc'))
      .map((f) => `bench/${f}`);
    assert.ok(bench.includes('bench/kernel_bench.cc'), bench.join(', '));
    for (const f of bench) assert.ok(check.compiled.includes(f), `${f} was not compiled`);
    assert.ok(
      hosts.has('test/cuda/attention_kernel_test.cc') && check.compiled.includes('test/cuda/attention_kernel_test.cc'),
    );
    console.log(
      `    compiled with nvcc ${check.cuda_version} for sm_${check.compiled_for.join(', sm_')}: ${check.compiled.join(', ')}`,
    );
    if (check.stub_checked?.length)
      console.log(`    checked against a stub header (cmake/stubs/): ${check.stub_checked.join(', ')}`);
    for (const s of check.skipped) console.log(`    not compiled here: ${s.file}: ${s.reason}`);
  });
});

describe('native runtime: CUDA sources order every copy on a stream', () => {
  // The backend's and the NCCL collectives' streams are non-blocking, so the legacy default stream
  // (which cudaMemcpy and cudaMemset use) is unordered with them: a copy there can overtake, or be
  // overtaken by, the work queued on them (the NCCL host-scalar path did, sharing a buffer with
  // queued copies). Read on any machine, nvcc or not.
  it('no runtime file copies or sets memory on the legacy stream', () => {
    const sources = sourceFiles(path.join(nativeDir, 'src'));
    const streams = sources.filter((f) => /cudaStreamNonBlocking/.test(readFileSync(f, 'utf8')));
    assert.ok(
      streams.some((f) => f.endsWith('nccl_collectives.cc')) && streams.some((f) => f.endsWith('cuda_backend.cc')),
      streams.join(', '),
    );
    const offenders = sources.flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          /\bcuda(Memcpy|Memset|Memcpy2D|Memcpy3D|MemcpyToSymbol|MemcpyFromSymbol)\s*\(/.test(
            line.replace(/\/\/.*$/, ''),
          )
            ? [`${path.relative(nativeDir, f)}:${i + 1}: ${line.trim()}`]
            : [],
        ),
    );
    assert.deepEqual(offenders, [], 'use the *Async form on the stream the data belongs to');
  });
});

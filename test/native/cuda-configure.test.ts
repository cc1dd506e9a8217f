// The CUDA backend's CMake path, configured and generated for real on a machine without cuBLAS:
// a stand-in cuBLASLt and NCCL (a header and a tiny shared library each, built here, laid out as
// NVIDIA's pip wheels lay them out) are found through FSDP_CUDA_LIBS_ROOT, so CMake takes the
// branch a GPU host takes — enable_language(CUDA), the backend's sources on fsdp_runtime — and
// must generate build files whose CUDA objects carry the architectures asked for. The first GPU
// host's build failed exactly there (CUDA_ARCHITECTURES empty for fsdp_runtime); this catches a
// configure-level mistake before a GPU host sees it. One kernel object is then compiled through
// the generated rule, so the flags CMake wrote are ones nvcc accepts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { repoRoot } from './native-build';

const nativeDir = path.join(repoRoot, 'native');

function nvccPresent(): boolean {
  return spawnSync('nvcc', ['--version'], { encoding: 'utf8' }).status === 0 || existsSync('/usr/local/cuda/bin/nvcc');
}

const ninja = spawnSync('ninja', ['--version'], { encoding: 'utf8' }).status === 0;

/** A library the way the wheels ship it: nvidia/<name>/include/<header>, nvidia/<name>/lib/<soname>. */
function standIn(root: string, name: string, header: string, soname: string): void {
  const include = path.join(root, 'nvidia', name, 'include');
  const lib = path.join(root, 'nvidia', name, 'lib');
  mkdirSync(include, { recursive: true });
  mkdirSync(lib, { recursive: true });
  writeFileSync(path.join(include, header), `// stand-in for ${header}: configure-level tests only\n#pragma once\n`);
  const source = path.join(root, `${name}.c`);
  writeFileSync(source, `int fsdp_stand_in_${name}(void) { return 0; }\n`);
  const r = spawnSync('cc', ['-shared', '-fPIC', '-o', path.join(lib, soname), source], { encoding: 'utf8' });
  assert.equal(r.status, 0, `building the stand-in ${soname}: ${r.stderr}`);
}

function configure(build: string, args: string[]): string {
  const r = spawnSync(
    'nice',
    ['-n', '10', 'cmake', '-S', nativeDir, '-B', build, '-G', ninja ? 'Ninja' : 'Unix Makefiles', ...args],
    { encoding: 'utf8' },
  );
  const out = r.stdout + r.stderr;
  assert.equal(r.status, 0, `cmake configure + generate failed:\n${out.slice(-6000)}`);
  assert.doesNotMatch(out, /CMake Error/, out.slice(-6000));
  return out;
}

/** The nvcc flags CMake generated for fsdp_runtime's CUDA objects. */
function cudaFlags(build: string): string {
  if (ninja) {
    const text = readFileSync(path.join(build, 'build.ninja'), 'utf8');
    const rule =
      /build CMakeFiles\/fsdp_runtime\.dir\/src\/backend\/cuda\/kernels\/adamw\.cu\.o:[^\n]*\n((?: {2}[^\n]*\n)*)/.exec(
        text,
      );
    assert.ok(rule, "build.ninja has no rule for fsdp_runtime's kernels/adamw.cu");
    return rule[1];
  }
  return readFileSync(path.join(build, 'CMakeFiles', 'fsdp_runtime.dir', 'flags.make'), 'utf8');
}

describe('native runtime: CUDA backend configure + generate (stand-in cuBLASLt and NCCL)', function () {
  this.timeout(300_000);
  let root = '';

  before(function () {
    if (!nvccPresent()) {
      console.log('    no nvcc on this machine: CMake cannot enable CUDA here');
      this.skip();
    }
    root = mkdtempSync(path.join(os.tmpdir(), 'fsdp-cuda-configure-'));
    standIn(root, 'cublas', 'cublasLt.h', 'libcublasLt.so.13');
    standIn(root, 'nccl', 'nccl.h', 'libnccl.so.2');
  });

  after(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('generates the backend for one architecture (as a GPU host builds it) and compiles a kernel through the generated rule', () => {
    const build = path.join(root, 'sm90');
    const out = configure(build, [
      `-DFSDP_CUDA_LIBS_ROOT=${path.join(root, 'nvidia')}`,
      '-DFSDP_CUDA_ARCHITECTURES=90',
    ]);
    assert.match(out, /CUDA backend: cuBLASLt .*libcublasLt\.so\.13; NCCL ON .*libnccl\.so\.2; architectures 90/);
    const flags = cudaFlags(build);
    assert.match(flags, /arch=compute_90,code=\[compute_90,sm_90\]/);
    assert.doesNotMatch(flags, /compute_80/);
    const report = JSON.parse(readFileSync(path.join(build, 'cuda-check', 'report.json'), 'utf8')) as {
      backend_built: boolean;
      skipped: unknown[];
    };
    assert.equal(report.backend_built, true);
    assert.deepEqual(report.skipped, [], 'with both libraries found, the compile check skips nothing');

    const object = 'CMakeFiles/fsdp_runtime.dir/src/backend/cuda/kernels/embedding.cu.o';
    const r = ninja
      ? spawnSync('nice', ['-n', '10', 'ninja', '-C', build, object], { encoding: 'utf8' })
      : spawnSync('nice', ['-n', '10', 'make', '-C', build, '-f', 'CMakeFiles/fsdp_runtime.dir/build.make', object], {
          encoding: 'utf8',
        });
    assert.equal(r.status, 0, `compiling ${object} through the generated rule:\n${(r.stdout + r.stderr).slice(-6000)}`);
    assert.ok(existsSync(path.join(build, object)));
  });

  it('generates every architecture of the default list when none is given', () => {
    const build = path.join(root, 'default');
    const out = configure(build, [`-DFSDP_CUDA_LIBS_ROOT=${path.join(root, 'nvidia')}`]);
    assert.match(out, /architectures 80;90/);
    const flags = cudaFlags(build);
    assert.match(flags, /arch=compute_80,code=\[compute_80,sm_80\]/);
    assert.match(flags, /arch=compute_90,code=\[compute_90,sm_90\]/);
  });
});

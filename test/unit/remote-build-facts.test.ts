// What a remote build makes of a host's facts: the architectures nvidia-smi names (deduplicated,
// N/A ignored), the CMake definitions (GPU architectures and PyTorch's wheels only with a CUDA
// toolkit), the exact package a host lacking a library needs for its distribution, and which
// backend a finished build has, read from CMake's own configure lines.
import assert from 'node:assert/strict';
import {
  cmakeDefinitions,
  describeBuiltBackend,
  missingLibrariesMessage,
  parseBuildFacts,
  type BuildFacts,
} from '../../runs/runtime/remote-build-facts';

const gpuHost = (over: Partial<BuildFacts> = {}): BuildFacts => ({
  gpuArchitectures: ['90'],
  nvcc: '/usr/local/cuda/bin/nvcc',
  nvidiaWheels: '/usr/lib/python3/dist-packages/nvidia',
  libraries: { blas: true, json: true, zlib: true },
  os: 'ubuntu debian',
  ...over,
});

describe('remote build facts', () => {
  it('reads every GPU architecture nvidia-smi names, once each, and ignores what is not one', () => {
    const f = parseBuildFacts(
      [
        'gpu_caps=9.0,8.0,9.0,N/A,',
        'nvcc=/usr/local/cuda/bin/nvcc',
        'nvidia_wheels=/w/nvidia',
        'blas=yes',
        'json=no',
        'zlib=yes',
        'os=rocky rhel centos fedora',
      ].join('\n'),
    );
    assert.deepEqual(f.gpuArchitectures, ['80', '90']);
    assert.equal(f.nvidiaWheels, '/w/nvidia');
    assert.deepEqual(f.libraries, { blas: true, json: false, zlib: true });
    assert.deepEqual(parseBuildFacts('gpu_caps=\nnvcc=\n').gpuArchitectures, []);
  });

  it("passes the GPUs' architectures and the wheels to CMake only where a CUDA toolkit is", () => {
    assert.deepEqual(cmakeDefinitions(gpuHost({ gpuArchitectures: ['80', '90'] })), [
      '-DFSDP_CUDA_ARCHITECTURES=80;90',
      '-DFSDP_CUDA_LIBS_ROOT=/usr/lib/python3/dist-packages/nvidia',
    ]);
    assert.deepEqual(
      cmakeDefinitions(gpuHost({ gpuArchitectures: [] })),
      ['-DFSDP_CUDA_LIBS_ROOT=/usr/lib/python3/dist-packages/nvidia'],
      'no GPU named: the default architecture list',
    );
    assert.deepEqual(cmakeDefinitions(gpuHost({ nvcc: '' })), [], 'no toolkit: nothing CUDA');
    assert.deepEqual(cmakeDefinitions(gpuHost({ nvidiaWheels: 'Traceback' })), ['-DFSDP_CUDA_ARCHITECTURES=90']);
  });

  it('names the exact package a host without a library needs, for its distribution', () => {
    assert.equal(missingLibrariesMessage('gpu1', gpuHost()), undefined);
    const debian = missingLibrariesMessage('gpu1', gpuHost({ libraries: { blas: false, json: true, zlib: true } }))!;
    assert.match(
      debian,
      /^gpu1 lacks OpenBLAS .*a GPU host needs them too.*Install with: sudo apt-get install libopenblas-dev$/,
    );
    const fedora = missingLibrariesMessage(
      'gpu2',
      gpuHost({ os: 'rocky rhel centos fedora', libraries: { blas: false, json: false, zlib: true } }),
    )!;
    assert.match(fedora, /Install with: sudo dnf install openblas-devel json-devel$/);
    assert.match(
      missingLibrariesMessage(
        'box',
        gpuHost({ os: 'plan9', gpuArchitectures: [], libraries: { blas: true, json: true, zlib: false } }),
      )!,
      /^box lacks zlib, needed to build the runtime there\. Install their development packages/,
    );
  });

  it("says which backend a build has, from CMake's configure lines", () => {
    const cuda = describeBuiltBackend(
      '-- CUDA backend: cuBLASLt /usr/local/cuda/lib64/libcublasLt.so; NCCL ON /w/nvidia/nccl/lib/libnccl.so.2; architectures 90\n',
      gpuHost(),
    );
    assert.equal(
      cuda,
      'CUDA backend for sm_90 (cuBLASLt /usr/local/cuda/lib64/libcublasLt.so; NCCL /w/nvidia/nccl/lib/libnccl.so.2)',
    );
    const noNccl = describeBuiltBackend(
      '-- CUDA backend: cuBLASLt /c/libcublasLt.so.13; NCCL OFF FSDP_NCCL_LIBRARY-NOTFOUND; architectures 80;90\n',
      gpuHost(),
    );
    assert.match(
      noNccl,
      /^CUDA backend for sm_80, sm_90 \(cuBLASLt \/c\/libcublasLt\.so\.13; no NCCL: several GPUs communicate through MPI/,
    );
    assert.match(
      describeBuiltBackend(
        '-- CUDA backend: not built (cuBLASLt not found in the toolkit or under FSDP_CUDA_LIBS_ROOT); fsdp_cuda_kernels_check compile-checks it\n',
        gpuHost(),
      ),
      /^CPU backend only: cuBLASLt not found/,
    );
    assert.match(describeBuiltBackend('', gpuHost({ nvcc: '' })), /GPUs but no CUDA toolkit/);
  });
});

#!/usr/bin/env bash
# Sourced by test.sh and bench.sh on the GPU machine: unpacks the carried Debian packages, finds
# cuBLAS and NCCL in PyTorch's NVIDIA wheels, and builds the runtime with the CUDA backend for this
# GPU's architecture into native/build-gpu (kept between calls while the machine stays warm).
# Writes what it found to $OUT/environment.txt.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-$ROOT/gpu-out}"
mkdir -p "$OUT"
BUILD="$ROOT/native/build-gpu"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader || echo "nvidia-smi: none"
  nvcc --version | tail -1
  cmake --version | head -1
  echo "c++: $(c++ --version | head -1)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true
  echo "mpirun: $(command -v mpirun || echo none)"
} > "$OUT/environment.txt" 2>&1

# Debian packages carried in .gpu-debs (scripts/gpu/fetch-debs.sh): unpacked aside, then copied
# into / without replacing anything the image already has.
if [ -d "$ROOT/.gpu-debs" ] && [ ! -e /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so ]; then
  rm -rf /tmp/gpu-debroot && mkdir -p /tmp/gpu-debroot
  for deb in "$ROOT"/.gpu-debs/*.deb; do dpkg -x "$deb" /tmp/gpu-debroot; done
  cp -an /tmp/gpu-debroot/. /
  ldconfig
fi

NVIDIA_WHEELS="$(python3 -c 'import nvidia, os; print(os.path.realpath(list(nvidia.__path__)[0]))' 2>/dev/null || true)"
{
  echo "nvidia wheels: ${NVIDIA_WHEELS:-none}"
  [ -n "$NVIDIA_WHEELS" ] && find "$NVIDIA_WHEELS" \( -name 'cublasLt.h' -o -name 'nccl.h' -o -name 'libcublasLt.so*' -o -name 'libnccl.so*' \) | sort
} >> "$OUT/environment.txt" 2>&1
# The wheels' libraries are found at run time through the build's RPATH; keep them on the path too.
for d in $(find "${NVIDIA_WHEELS:-/nonexistent}" -name 'lib' -type d 2>/dev/null); do LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"; done
export LD_LIBRARY_PATH

ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')"
cmake -S "$ROOT/native" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFSDP_CUDA_LIBS_ROOT="$NVIDIA_WHEELS" \
  -DFSDP_CUDA_ARCHITECTURES="${ARCH:-90}" > "$OUT/configure.log" 2>&1 || { tail -40 "$OUT/configure.log"; exit 1; }
grep -E "CUDA backend|OpenBLAS" "$OUT/configure.log" || true
cmake --build "$BUILD" -j "$(nproc)" > "$OUT/build.log" 2>&1 || { grep -E "error|Error" -A3 "$OUT/build.log" | head -60; exit 1; }
grep -q "FSDP_WITH_CUDA" "$BUILD/CMakeFiles/fsdp_runtime.dir/flags.make" 2>/dev/null || grep -rq "FSDP_WITH_CUDA" "$BUILD/build.ninja" || {
  echo "the CUDA backend was not built: see $OUT/configure.log"
  exit 1
}
CLI="$BUILD/Release/fsdp-train-native"
echo "built: $CLI"

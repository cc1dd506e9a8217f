#!/usr/bin/env bash
# Sourced by test.sh and bench.sh on the GPU machine, run by first-run.sh (under its own timeout):
# unpacks the carried Debian packages, finds cuBLAS and NCCL in PyTorch's NVIDIA wheels, and builds
# the runtime with the CUDA backend for this GPU's architecture only (nvidia-smi's compute_cap) into
# native/build-gpu (kept between calls while the machine stays warm). FSDP_BUILD_TARGETS names the
# targets to build (default: all). Writes what it found to $OUT/environment.txt, and
# $OUT/build-env.sh (BUILD, CLI, LD_LIBRARY_PATH) for a script that ran it instead of sourcing it.
# Fails loudly, naming what is missing: the CUDA backend, NCCL (the one-rank NCCL checks), MPI
# (every multi-rank check).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-$ROOT/gpu-out}"
mkdir -p "$OUT"
BUILD="$ROOT/native/build-gpu"
BUILD_T0=$SECONDS

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader || echo "nvidia-smi: none"
  nvcc --version | tail -1
  cmake --version | head -1
  echo "c++: $(c++ --version | head -1)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true
  echo "mpirun: $(command -v mpirun || echo none) $(mpirun --version 2>/dev/null | head -1)"
  echo "node: $(command -v node || echo none)"
  echo "cores: $(nproc)"
} > "$OUT/environment.txt" 2>&1

# Debian packages carried in .gpu-debs (scripts/gpu/fetch-debs.sh): unpacked aside, then copied
# into / without replacing anything the image already has (OpenBLAS, nlohmann-json, GoogleTest,
# zlib headers, and Open MPI's headers where the image has its runtime but not them).
MPI_INCLUDE="$(ls -d /usr/lib/x86_64-linux-gnu/openmpi/include 2>/dev/null || true)"
if [ -d "$ROOT/.gpu-debs" ] && { [ ! -e /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so ] || [ ! -e "${MPI_INCLUDE:-/none}/mpi.h" ]; }; then
  rm -rf /tmp/gpu-debroot && mkdir -p /tmp/gpu-debroot
  for deb in "$ROOT"/.gpu-debs/*.deb; do dpkg -x "$deb" /tmp/gpu-debroot; done
  # Docs hold links to files of packages not unpacked here (cp refuses to write through them): leave them out.
  rm -rf /tmp/gpu-debroot/usr/share/doc /tmp/gpu-debroot/usr/share/man /tmp/gpu-debroot/usr/share/lintian
  cp -an /tmp/gpu-debroot/. / || echo "build.sh: some unpacked files were not copied (above); the build says if one was needed" >&2
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

# Open MPI without its compiler wrapper (only the runtime and the carried headers): point CMake at it.
MPI_ARGS=()
if ! command -v mpicc > /dev/null && [ -e /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ]; then
  MPI_ARGS=(-DMPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi -DMPI_C_HEADER_DIR=/usr/lib/x86_64-linux-gnu/openmpi/include
            -DMPI_C_LIB_NAMES=mpi -DMPI_mpi_LIBRARY="$(ls /usr/lib/x86_64-linux-gnu/libmpi.so* 2>/dev/null | head -1)")
fi

ARCH="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')"
cmake -S "$ROOT/native" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFSDP_CUDA_LIBS_ROOT="$NVIDIA_WHEELS" \
  -DFSDP_CUDA_ARCHITECTURES="${ARCH:-90}" "${MPI_ARGS[@]}" > "$OUT/configure.log" 2>&1 || { echo "CONFIGURE FAILED:"; tail -40 "$OUT/configure.log"; exit 1; }
grep -E "CUDA backend|OpenBLAS|MPI" "$OUT/configure.log" || true
grep -q "CUDA backend: cuBLASLt" "$OUT/configure.log" || { echo "BUILD FAILED: the CUDA backend was not configured (no cuBLASLt found): see configure.log"; exit 1; }
grep -q "NCCL ON" "$OUT/configure.log" || { echo "BUILD FAILED: NCCL was not found (in the toolkit or $NVIDIA_WHEELS): the NCCL checks cannot run"; exit 1; }
grep -q -- "-- MPI: " "$OUT/configure.log" || { echo "BUILD FAILED: MPI was not found (mpi.h: carry .gpu-debs with libopenmpi-dev, scripts/gpu/fetch-debs.sh): every multi-rank check needs it"; exit 1; }
TARGET_ARGS=()
for target in ${FSDP_BUILD_TARGETS:-}; do TARGET_ARGS+=(--target "$target"); done
cmake --build "$BUILD" -j "$(nproc)" "${TARGET_ARGS[@]}" > "$OUT/build.log" 2>&1 || { echo "BUILD FAILED:"; grep -E "error|Error" -A3 "$OUT/build.log" | head -60; exit 1; }
for binary in fsdp-train-native fsdp-native-tests fsdp-cuda-tests fsdp-mpi-tests; do
  [ -x "$BUILD/Release/$binary" ] || { echo "BUILD FAILED: $BUILD/Release/$binary was not built (GoogleTest or MPI missing? see configure.log)"; exit 1; }
done
CLI="$BUILD/Release/fsdp-train-native"
BUILD_SECONDS=$((SECONDS - BUILD_T0))
printf 'export LD_LIBRARY_PATH=%q\nBUILD=%q\nCLI=%q\n' "$LD_LIBRARY_PATH" "$BUILD" "$CLI" > "$OUT/build-env.sh"
echo "built: $CLI in ${BUILD_SECONDS} s"

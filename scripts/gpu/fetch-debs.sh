#!/usr/bin/env bash
# Run HERE (a developer machine with Debian's package archive), before a GPU-machine call: puts the
# Debian packages the native build needs and the GPU machine lacks (it has no package manager and
# no network) into .gpu-debs/, which the call carries (`carry: [".gpu-debs"]`). About 15 MB.
# scripts/gpu/build.sh unpacks them there. Only Debian packages, fetched by apt-get.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-debs
cd .gpu-debs
# OpenBLAS (OpenMP build) and its Fortran runtime, nlohmann-json, GoogleTest, zlib headers, and
# Open MPI's headers (the GPU machine has its runtime and mpirun, not always its headers).
apt-get download libopenblas0-openmp libopenblas-openmp-dev libgfortran5 nlohmann-json3-dev libgtest-dev zlib1g-dev libopenmpi-dev
ls -la

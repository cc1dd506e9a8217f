# The CUDA backend (src/backend/cuda/), the GPU collectives (src/parallel/cuda/) and their compile check.
#
# The backend is built only where a CUDA toolkit (nvcc, the runtime) and cuBLASLt are found: in the
# toolkit itself, or in NVIDIA's pip wheels (the ones PyTorch installs) under FSDP_CUDA_LIBS_ROOT,
# e.g. .../site-packages/nvidia. NCCL likewise (optional: without it device collectives go through
# MPI and pinned host memory). NVML is opened at run time (libnvidia-ml.so.1 comes with the
# driver), so it needs nothing here.
#
# Where nvcc is found, fsdp_cuda_kernels_check (not built by default) compiles every .cu file for
# each architecture of FSDP_CUDA_ARCHITECTURES; every host file of the backend and of the GPU
# collectives; every runtime file with an FSDP_WITH_CUDA branch, with that branch on; and the GPU
# tests (test/cuda/) — all but what needs a missing library — and writes cuda-check/report.json:
# what it compiled, and what it could not and why. test/native/cuda-compile-check.test.ts builds
# it; test/native/cuda-configure.test.ts configures the backend path against stand-in libraries.
option(FSDP_CUDA "Build the CUDA backend where a CUDA toolkit with cuBLAS is found" ON)
set(FSDP_CUDA_LIBS_ROOT "" CACHE PATH "Folder of NVIDIA's pip wheels (site-packages/nvidia) to find cuBLASLt and NCCL in")
set(FSDP_CUDA_ARCHITECTURES "80;90" CACHE STRING "GPU architectures (compute capabilities) the kernels are compiled for")

set(FSDP_CUDA_DIR ${CMAKE_SOURCE_DIR}/src/backend/cuda)
set(FSDP_CUDA_COMM_DIR ${CMAKE_SOURCE_DIR}/src/parallel/cuda)
file(GLOB FSDP_CUDA_KERNELS CONFIGURE_DEPENDS ${FSDP_CUDA_DIR}/kernels/*.cu ${FSDP_CUDA_DIR}/*.cu)
file(GLOB FSDP_CUDA_HOST_SOURCES CONFIGURE_DEPENDS ${FSDP_CUDA_DIR}/*.cc ${FSDP_CUDA_COMM_DIR}/*.cc)
file(GLOB FSDP_CUDA_HEADERS CONFIGURE_DEPENDS ${FSDP_CUDA_DIR}/*.h ${FSDP_CUDA_DIR}/kernels/*.h ${FSDP_CUDA_DIR}/kernels/*.cuh ${FSDP_CUDA_COMM_DIR}/*.h
     ${CMAKE_SOURCE_DIR}/src/parallel/*.h)
# The only files that include cuBLAS's or NCCL's headers: everything else compiles without them.
set(FSDP_CUDA_CUBLAS_SOURCES ${FSDP_CUDA_DIR}/cublaslt_matmul.cc)
set(FSDP_CUDA_NCCL_SOURCES ${FSDP_CUDA_COMM_DIR}/nccl_collectives.cc ${CMAKE_SOURCE_DIR}/test/cuda/nccl_test.cc)

find_package(CUDAToolkit QUIET)

# A header or library in the toolkit, else anywhere under FSDP_CUDA_LIBS_ROOT (the wheels' layout
# differs between CUDA versions: nvidia/cublas/include, nvidia/cu13/include, ...).
function(fsdp_find_cuda_file out kind)
  set(names ${ARGN})
  if(kind STREQUAL "header")
    find_path(${out} NAMES ${names} HINTS ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
  else()
    find_library(${out} NAMES ${names} HINTS ${CUDAToolkit_LIBRARY_DIR} NO_DEFAULT_PATH)
  endif()
  if(NOT ${out} AND FSDP_CUDA_LIBS_ROOT)
    foreach(name ${names})
      file(GLOB_RECURSE found LIST_DIRECTORIES false "${FSDP_CUDA_LIBS_ROOT}/*/${name}")
      if(found)
        list(GET found 0 first)
        if(kind STREQUAL "header")
          get_filename_component(first ${first} DIRECTORY)
        endif()
        set(${out} ${first} CACHE PATH "" FORCE)
        break()
      endif()
    endforeach()
  endif()
endfunction()

set(FSDP_CUDA_BUILT OFF)
set(FSDP_NCCL_BUILT OFF)
if(CUDAToolkit_FOUND)
  fsdp_find_cuda_file(FSDP_CUBLASLT_INCLUDE header cublasLt.h)
  fsdp_find_cuda_file(FSDP_CUBLASLT_LIBRARY library cublasLt libcublasLt.so.13 libcublasLt.so.12)
  fsdp_find_cuda_file(FSDP_NCCL_INCLUDE header nccl.h)
  fsdp_find_cuda_file(FSDP_NCCL_LIBRARY library nccl libnccl.so.2)
endif()

if(FSDP_CUDA AND CUDAToolkit_FOUND AND FSDP_CUBLASLT_INCLUDE AND FSDP_CUBLASLT_LIBRARY)
  set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
  set(CMAKE_CUDA_ARCHITECTURES ${FSDP_CUDA_ARCHITECTURES})
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(sources ${FSDP_CUDA_KERNELS} ${FSDP_CUDA_HOST_SOURCES})
  if(FSDP_NCCL_INCLUDE AND FSDP_NCCL_LIBRARY)
    set(FSDP_NCCL_BUILT ON)
  else()
    list(REMOVE_ITEM sources ${FSDP_CUDA_NCCL_SOURCES})
  endif()
  target_include_directories(fsdp_runtime PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_sources(fsdp_runtime PRIVATE ${sources})
  # A target takes CMAKE_CUDA_ARCHITECTURES when it is created, and fsdp_runtime was created before
  # CUDA was enabled here: without this its CUDA_ARCHITECTURES is empty and CMake refuses to
  # generate (the first GPU host's build failed so; test/native/cuda-configure.test.ts guards it).
  set_target_properties(fsdp_runtime PROPERTIES CUDA_ARCHITECTURES "${FSDP_CUDA_ARCHITECTURES}")
  target_include_directories(fsdp_runtime PRIVATE ${FSDP_CUBLASLT_INCLUDE})
  target_compile_options(fsdp_runtime PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--extended-lambda -lineinfo -O3>)
  target_compile_definitions(fsdp_runtime PUBLIC FSDP_WITH_CUDA)
  target_link_libraries(fsdp_runtime PUBLIC CUDA::cudart ${FSDP_CUBLASLT_LIBRARY} ${CMAKE_DL_LIBS})
  if(FSDP_NCCL_BUILT)
    target_include_directories(fsdp_runtime PRIVATE ${FSDP_NCCL_INCLUDE})
    target_compile_definitions(fsdp_runtime PUBLIC FSDP_WITH_NCCL)
    target_link_libraries(fsdp_runtime PUBLIC ${FSDP_NCCL_LIBRARY})
  endif()
  set(FSDP_CUDA_BUILT ON)
  message(STATUS "CUDA backend: cuBLASLt ${FSDP_CUBLASLT_LIBRARY}; NCCL ${FSDP_NCCL_BUILT} ${FSDP_NCCL_LIBRARY}; architectures ${FSDP_CUDA_ARCHITECTURES}")
elseif(CUDAToolkit_FOUND)
  message(STATUS "CUDA backend: not built (cuBLASLt not found in the toolkit or under FSDP_CUDA_LIBS_ROOT); fsdp_cuda_kernels_check compile-checks it")
endif()

# --- the compile check ------------------------------------------------------------------------------
if(CUDAToolkit_FOUND AND CUDAToolkit_NVCC_EXECUTABLE)
  set(check_dir ${CMAKE_BINARY_DIR}/cuda-check)
  file(MAKE_DIRECTORY ${check_dir})
  # The architectures the check compiles the kernels for. PTX is forward compatible (what compiles
  # for compute_80 compiles for every later architecture: the driver relies on it to JIT), so where
  # no source asks which architecture it is compiled for (__CUDA_ARCH__ and its feature macros), the
  # lowest architecture of FSDP_CUDA_ARCHITECTURES proves them all; each further one costs every .cu
  # file a cicc and a ptxas pass (sm_90: 35 of the check's 114 s of CPU, measured on the 2-core
  # machine). Where a source branches on __CUDA_ARCH__, an architecture sees code the others do not,
  # and every one is compiled; the product's build compiles every one whatever the check does.
  file(GLOB_RECURSE arch_scanned CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*.cu ${CMAKE_SOURCE_DIR}/src/*.cuh ${CMAKE_SOURCE_DIR}/src/*.h)
  set(arch_branches)
  foreach(file ${arch_scanned})
    file(STRINGS ${file} arch_lines REGEX "__CUDA_ARCH")
    if(arch_lines)
      file(RELATIVE_PATH name ${CMAKE_SOURCE_DIR} ${file})
      list(APPEND arch_branches "\"${name}\"")
    endif()
  endforeach()
  set(check_archs ${FSDP_CUDA_ARCHITECTURES})
  if(NOT arch_branches)
    list(SORT check_archs COMPARE NATURAL)
    list(GET check_archs 0 check_archs)
  endif()
  set(gencode)
  foreach(arch ${check_archs})
    list(APPEND gencode -gencode arch=compute_${arch},code=sm_${arch})
  endforeach()
  set(common_includes -I${CMAKE_SOURCE_DIR}/src -I${CMAKE_BINARY_DIR}/generated)
  foreach(dir ${CUDAToolkit_INCLUDE_DIRS})
    list(APPEND common_includes -I${dir})
  endforeach()
  set(depends ${FSDP_CUDA_HEADERS} ${CMAKE_SOURCE_DIR}/src/backend/backend.h ${CMAKE_SOURCE_DIR}/src/runtime/rng.h ${CMAKE_SOURCE_DIR}/src/runtime/allocator.h)
  set(outputs)
  set(compiled)
  set(skipped)
  foreach(file ${FSDP_CUDA_KERNELS})
    file(RELATIVE_PATH name ${FSDP_CUDA_DIR} ${file})
    string(REPLACE "/" "_" object ${name})
    add_custom_command(OUTPUT ${check_dir}/${object}.o
                       COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -std=c++17 --extended-lambda ${gencode} ${common_includes} -c ${file} -o ${check_dir}/${object}.o
                       DEPENDS ${file} ${depends} COMMENT "nvcc (${check_archs}): ${name}" VERBATIM)
    list(APPEND outputs ${check_dir}/${object}.o)
    list(APPEND compiled "\"${name}\"")
  endforeach()
  # Host files of the backend and the GPU collectives; runtime files with an FSDP_WITH_CUDA branch
  # (compiled with it on); the GPU tests. Each is named in the report by its path under native/.
  file(GLOB_RECURSE runtime_sources CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*.cc)
  set(cuda_branch_sources)
  foreach(file ${runtime_sources})
    if(file MATCHES "/src/(backend/cuda|parallel/cuda)/")
      continue()
    endif()
    file(STRINGS ${file} cuda_lines REGEX "FSDP_WITH_CUDA")
    if(cuda_lines)
      list(APPEND cuda_branch_sources ${file})
    endif()
  endforeach()
  file(GLOB FSDP_CUDA_TEST_CHECK_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/test/cuda/*.cc)
  file(GLOB FSDP_TEST_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/test/*.h ${CMAKE_SOURCE_DIR}/test/cuda/*.h)
  find_package(GTest QUIET)
  foreach(file ${FSDP_CUDA_HOST_SOURCES} ${cuda_branch_sources} ${FSDP_CUDA_TEST_CHECK_SOURCES})
    file(RELATIVE_PATH name ${CMAKE_SOURCE_DIR} ${file})
    string(REGEX REPLACE "^src/backend/cuda/" "" name ${name})
    string(REPLACE "/" "_" object ${name})
    set(extra)
    set(reason "")
    if(file IN_LIST cuda_branch_sources OR file IN_LIST FSDP_CUDA_TEST_CHECK_SOURCES)
      list(APPEND extra -DFSDP_WITH_CUDA)
      if(FSDP_NCCL_INCLUDE)
        list(APPEND extra -DFSDP_WITH_NCCL -I${FSDP_NCCL_INCLUDE})
      endif()
    endif()
    if(file IN_LIST FSDP_CUDA_TEST_CHECK_SOURCES)
      list(APPEND extra -I${CMAKE_SOURCE_DIR}/test -DFSDP_REFERENCE_FIXTURES="")
      if(NOT GTest_FOUND)
        set(reason "needs gtest/gtest.h (GoogleTest), which is not installed")
      endif()
    endif()
    if(file IN_LIST FSDP_CUDA_CUBLAS_SOURCES)
      if(FSDP_CUBLASLT_INCLUDE)
        list(APPEND extra -I${FSDP_CUBLASLT_INCLUDE})
      else()
        set(reason "needs cublasLt.h (cuBLASLt), which is not in this CUDA toolkit nor under FSDP_CUDA_LIBS_ROOT")
      endif()
    elseif(file IN_LIST FSDP_CUDA_NCCL_SOURCES)
      if(FSDP_NCCL_INCLUDE)
        list(APPEND extra -I${FSDP_NCCL_INCLUDE})
      else()
        set(reason "needs nccl.h (NCCL), which is not in this CUDA toolkit nor under FSDP_CUDA_LIBS_ROOT")
      endif()
    endif()
    if(reason)
      list(APPEND skipped "{\"file\": \"${name}\", \"reason\": \"${reason}\"}")
      continue()
    endif()
    add_custom_command(OUTPUT ${check_dir}/${object}.o
                       COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -Wall -Wextra -Werror ${common_includes} ${extra} -c ${file} -o ${check_dir}/${object}.o
                       DEPENDS ${file} ${depends} ${FSDP_TEST_HEADERS} COMMENT "c++: ${name}" VERBATIM)
    list(APPEND outputs ${check_dir}/${object}.o)
    list(APPEND compiled "\"${name}\"")
  endforeach()
  # Where cuBLASLt's or NCCL's header is missing, the files that need it are still syntax-checked
  # against stubs/cublasLt.h or stubs/nccl.h (the declarations they use, no definitions); the
  # kernel micro-benchmark, built only with the backend, is compiled (not linked) here.
  set(stubbed)
  set(stub_checks)
  if(NOT FSDP_CUBLASLT_INCLUDE)
    foreach(file ${FSDP_CUDA_CUBLAS_SOURCES})
      list(APPEND stub_checks "${file}|cublasLt.h")
    endforeach()
  endif()
  if(NOT FSDP_NCCL_INCLUDE)
    list(APPEND stub_checks "${FSDP_CUDA_COMM_DIR}/nccl_collectives.cc|nccl.h")
    if(GTest_FOUND)
      list(APPEND stub_checks "${CMAKE_SOURCE_DIR}/test/cuda/nccl_test.cc|nccl.h")
    endif()
  endif()
  foreach(check ${stub_checks})
    string(REPLACE "|" ";" check ${check})
    list(GET check 0 file)
    list(GET check 1 stub)
    # Named as the report names the file where it is skipped.
    file(RELATIVE_PATH name ${CMAKE_SOURCE_DIR} ${file})
    string(REGEX REPLACE "^src/backend/cuda/" "" name ${name})
    string(REPLACE "/" "_" object ${name})
    set(extra)
    if(file MATCHES "/test/cuda/")
      set(extra -DFSDP_WITH_CUDA -DFSDP_WITH_NCCL -I${CMAKE_SOURCE_DIR}/test -DFSDP_REFERENCE_FIXTURES="")
    endif()
    add_custom_command(OUTPUT ${check_dir}/${object}.stub.o
                       COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -Wall -Wextra -Werror ${common_includes} -I${CMAKE_SOURCE_DIR}/cmake/stubs ${extra} -c ${file}
                               -o ${check_dir}/${object}.stub.o
                       DEPENDS ${file} ${depends} ${FSDP_TEST_HEADERS} ${CMAKE_SOURCE_DIR}/cmake/stubs/${stub} COMMENT "c++ (${stub} stub): ${name}" VERBATIM)
    list(APPEND outputs ${check_dir}/${object}.stub.o)
    list(APPEND stubbed "\"${name}\"")
  endforeach()
  file(GLOB FSDP_BENCH_CHECK_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/*.cc)
  foreach(file ${FSDP_BENCH_CHECK_SOURCES})
    file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${file})
    string(REPLACE "/" "_" obj ${rel})
    add_custom_command(OUTPUT ${check_dir}/${obj}.o
                       COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -Wall -Wextra -Werror ${common_includes} -c ${file} -o ${check_dir}/${obj}.o
                       DEPENDS ${file} ${depends} COMMENT "c++: ${rel}" VERBATIM)
    list(APPEND outputs ${check_dir}/${obj}.o)
    list(APPEND compiled "\"${rel}\"")
  endforeach()
  list(JOIN stubbed ", " stubbed_json)
  list(JOIN compiled ", " compiled_json)
  list(JOIN skipped ", " skipped_json)
  list(JOIN FSDP_CUDA_ARCHITECTURES "\", \"" archs_json)
  list(JOIN check_archs "\", \"" check_archs_json)
  list(JOIN arch_branches ", " arch_branches_json)
  if(FSDP_CUDA_BUILT)
    set(built_json true)
  else()
    set(built_json false)
  endif()
  file(WRITE ${check_dir}/report.json
       "{\"nvcc\": \"${CUDAToolkit_NVCC_EXECUTABLE}\", \"cuda_version\": \"${CUDAToolkit_VERSION}\", \"architectures\": [\"${archs_json}\"], "
       "\"compiled_for\": [\"${check_archs_json}\"], \"arch_branches\": [${arch_branches_json}], "
       "\"backend_built\": ${built_json}, \"compiled\": [${compiled_json}], \"skipped\": [${skipped_json}], \"stub_checked\": [${stubbed_json}]}\n")
  add_custom_target(fsdp_cuda_kernels_check DEPENDS ${outputs})
endif()

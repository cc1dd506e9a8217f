# The CUDA backend (src/backend/cuda/) and its compile check.
#
# The backend is built only where a CUDA toolkit (nvcc, the runtime) and cuBLASLt are found: in the
# toolkit itself, or in NVIDIA's pip wheels (the ones PyTorch installs) under FSDP_CUDA_LIBS_ROOT,
# e.g. .../site-packages/nvidia. NCCL likewise (optional: without it there are no NCCL collectives).
# NVML is opened at run time (libnvidia-ml.so.1 comes with the driver), so it needs nothing here.
#
# Where nvcc is found, fsdp_cuda_kernels_check (not built by default) compiles every kernel file for
# each architecture of FSDP_CUDA_ARCHITECTURES and every host file of the backend that does not
# need a missing library, and writes cuda-check/report.json: what it compiled, and what it could
# not and why. test/native/cuda-compile-check.test.ts builds it.
option(FSDP_CUDA "Build the CUDA backend where a CUDA toolkit with cuBLAS is found" ON)
set(FSDP_CUDA_LIBS_ROOT "" CACHE PATH "Folder of NVIDIA's pip wheels (site-packages/nvidia) to find cuBLASLt and NCCL in")
set(FSDP_CUDA_ARCHITECTURES "80;90" CACHE STRING "GPU architectures (compute capabilities) the kernels are compiled for")

set(FSDP_CUDA_DIR ${CMAKE_SOURCE_DIR}/src/backend/cuda)
file(GLOB FSDP_CUDA_KERNELS CONFIGURE_DEPENDS ${FSDP_CUDA_DIR}/kernels/*.cu)
file(GLOB FSDP_CUDA_HOST_SOURCES CONFIGURE_DEPENDS ${FSDP_CUDA_DIR}/*.cc)
file(GLOB FSDP_CUDA_HEADERS CONFIGURE_DEPENDS ${FSDP_CUDA_DIR}/*.h ${FSDP_CUDA_DIR}/kernels/*.h ${FSDP_CUDA_DIR}/kernels/*.cuh)
# The only files that include cuBLAS's or NCCL's headers: everything else compiles without them.
set(FSDP_CUDA_CUBLAS_SOURCES ${FSDP_CUDA_DIR}/cublaslt_matmul.cc)
set(FSDP_CUDA_NCCL_SOURCES ${FSDP_CUDA_DIR}/nccl_collectives.cc)

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
  set(gencode)
  foreach(arch ${FSDP_CUDA_ARCHITECTURES})
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
    get_filename_component(name ${file} NAME)
    add_custom_command(OUTPUT ${check_dir}/${name}.o
                       COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} -std=c++17 --extended-lambda ${gencode} ${common_includes} -c ${file} -o ${check_dir}/${name}.o
                       DEPENDS ${file} ${depends} COMMENT "nvcc (${FSDP_CUDA_ARCHITECTURES}): ${name}" VERBATIM)
    list(APPEND outputs ${check_dir}/${name}.o)
    list(APPEND compiled "\"kernels/${name}\"")
  endforeach()
  foreach(file ${FSDP_CUDA_HOST_SOURCES})
    get_filename_component(name ${file} NAME)
    set(extra)
    set(reason "")
    if(file IN_LIST FSDP_CUDA_CUBLAS_SOURCES)
      if(FSDP_CUBLASLT_INCLUDE)
        set(extra -I${FSDP_CUBLASLT_INCLUDE})
      else()
        set(reason "needs cublasLt.h (cuBLASLt), which is not in this CUDA toolkit nor under FSDP_CUDA_LIBS_ROOT")
      endif()
    elseif(file IN_LIST FSDP_CUDA_NCCL_SOURCES)
      if(FSDP_NCCL_INCLUDE)
        set(extra -I${FSDP_NCCL_INCLUDE})
      else()
        set(reason "needs nccl.h (NCCL), which is not in this CUDA toolkit nor under FSDP_CUDA_LIBS_ROOT")
      endif()
    endif()
    if(reason)
      list(APPEND skipped "{\"file\": \"${name}\", \"reason\": \"${reason}\"}")
      continue()
    endif()
    add_custom_command(OUTPUT ${check_dir}/${name}.o
                       COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -Wall -Wextra -Werror ${common_includes} ${extra} -c ${file} -o ${check_dir}/${name}.o
                       DEPENDS ${file} ${depends} COMMENT "c++: ${name}" VERBATIM)
    list(APPEND outputs ${check_dir}/${name}.o)
    list(APPEND compiled "\"${name}\"")
  endforeach()
  list(JOIN compiled ", " compiled_json)
  list(JOIN skipped ", " skipped_json)
  list(JOIN FSDP_CUDA_ARCHITECTURES "\", \"" archs_json)
  if(FSDP_CUDA_BUILT)
    set(built_json true)
  else()
    set(built_json false)
  endif()
  file(WRITE ${check_dir}/report.json
       "{\"nvcc\": \"${CUDAToolkit_NVCC_EXECUTABLE}\", \"cuda_version\": \"${CUDAToolkit_VERSION}\", \"architectures\": [\"${archs_json}\"], "
       "\"backend_built\": ${built_json}, \"compiled\": [${compiled_json}], \"skipped\": [${skipped_json}]}\n")
  add_custom_target(fsdp_cuda_kernels_check DEPENDS ${outputs})
endif()

# SPDX-License-Identifier: Apache-2.0
# SPMD_CUDA=AUTO|ON|OFF: whether the CUDA backend (runtime/src/cuda) is built. AUTO builds it when a
# CUDA compiler, the toolkit and NCCL are found (CUDAToolkit_ROOT or nvcc on the PATH; NCCL beside
# the toolkit or in the system's folders), ON requires them, OFF leaves it out. A build with it needs no GPU: its tests report themselves skipped where none is
# present. Sets SPMD_WITH_CUDA and enables the CUDA language.
set(SPMD_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (if the CUDA toolkit is found), ON, OFF")
set_property(CACHE SPMD_CUDA PROPERTY STRINGS AUTO ON OFF)
set(SPMD_WITH_CUDA OFF)
if(NOT SPMD_SANITIZE STREQUAL "" AND SPMD_CUDA STREQUAL "AUTO")
  # The sanitizers instrument host code only, and their flags are not nvcc's.
  message(STATUS "spmd: CUDA backend off in a sanitizer build (SPMD_SANITIZE=${SPMD_SANITIZE})")
elseif(NOT SPMD_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Hopper (H100/H200) by default; -DCMAKE_CUDA_ARCHITECTURES=... for other GPUs.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    # CMake 3.25 predates nvcc 13 and knows no flag for its C++20 dialect, which the targets'
    # cxx_std_20 feature asks of their CUDA sources.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    find_package(CUDAToolkit)
    find_package(SpmdNCCL MODULE)
  endif()
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND SpmdNCCL_FOUND)
    set(SPMD_WITH_CUDA ON)
    message(STATUS "spmd: CUDA backend on (CUDA ${CUDAToolkit_VERSION}, NCCL ${SpmdNCCL_LIBRARY}, "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(SPMD_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SPMD_CUDA=ON needs the CUDA toolkit (nvcc and the CUDA runtime) and NCCL: "
                        "set CUDAToolkit_ROOT or put nvcc on the PATH, install NCCL (libnccl-dev), "
                        "or configure with -DSPMD_CUDA=OFF")
  else()
    message(STATUS "spmd: CUDA backend off (no CUDA toolkit and NCCL found; SPMD_CUDA=AUTO)")
  endif()
endif()

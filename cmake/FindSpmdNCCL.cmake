# SPDX-License-Identifier: Apache-2.0
# Finds NCCL for the CUDA backend's collectives between GPUs: nccl.h and libnccl, beside the CUDA
# toolkit (NVIDIA's packages put them in its lib folder), in the system's folders (Debian's
# libnccl-dev), or under SpmdNCCL_ROOT (the Python package nvidia-nccl-cu13's folder, whose lib/
# holds only libnccl.so.2). Defines SpmdNCCL_FOUND and the imported target SpmdNCCL::NCCL.
find_path(SpmdNCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
find_library(SpmdNCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR
             HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib
                   ${CUDAToolkit_LIBRARY_ROOT}/lib64)
mark_as_advanced(SpmdNCCL_INCLUDE_DIR SpmdNCCL_LIBRARY)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SpmdNCCL REQUIRED_VARS SpmdNCCL_LIBRARY SpmdNCCL_INCLUDE_DIR)
if(SpmdNCCL_FOUND AND NOT TARGET SpmdNCCL::NCCL)
  add_library(SpmdNCCL::NCCL UNKNOWN IMPORTED)
  set_target_properties(SpmdNCCL::NCCL PROPERTIES
                        IMPORTED_LOCATION "${SpmdNCCL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${SpmdNCCL_INCLUDE_DIR}")
endif()

# SPDX-License-Identifier: Apache-2.0
# Finds BLIS for the CPU backend's float matmul (its CBLAS gemm), preferring the serial build:
# every spmd device is a thread already, so gemm must run on the caller's thread, start none of
# its own, and be safe to call from every device thread at once. Debian installs each flavour in
# a folder of its own (blis-serial, blis-pthread, blis-openmp) and points the plain libblis.so at
# one of them by update-alternatives, so the serial folder is searched first and the library is
# linked by its full path, which puts that folder in the RPATH of what links it (the loader would
# otherwise follow the alternative).
#
# Why BLIS (libblis-serial-dev) and not Debian 12's OpenBLAS 0.3.21, measured single-threaded on
# an AMD EPYC (Zen, AVX2, 2 cores), square row-major gemm, median GFLOP/s (sgemm / dgemm):
#   n                              8         32        128       256       512      1024      2048
#   BLIS serial                2.4/2.7  55.3/33.5 82.6/38.9 87.5/40.3 83.7/40.6 82.7/41.0 77.9/41.4
#   OpenBLAS serial            9.2/4.2  44.5/26.4 71.1/37.2 79.3/39.7 83.2/39.0 83.3/39.2 84.6/38.7
#   OpenBLAS pthread, 1 thread 7.9/8.0  44.6/27.2 71.4/37.2 79.6/39.4 84.0/39.6 85.2/39.5 83.6/39.2
# Speed ties from n = 256 up; BLIS leads below that except at tiny sizes. The choice is safety:
# Debian's serial OpenBLAS lacks USE_LOCKING (its option for serial builds called from several
# threads), and concurrent calls race on its shared buffers (8 threads calling sgemm, 256x8 @
# 8x1: 8,379 of 160,000 results wrong; spmd's sgd_linear example diverged), and its pthread
# build is safe only after the process-wide
# openblas_set_num_threads(1), with a thread pool started when it loads. Serial BLIS gave 0
# wrong results in the same test and starts no threads.
#
# Defines SpmdBLIS_FOUND and the imported target SpmdBLIS::BLIS (BLIS's cblas.h, the library).
# blis.h sits beside BLIS's own cblas.h (not beside the reference CBLAS's or OpenBLAS's).
find_path(SpmdBLIS_INCLUDE_DIR blis.h PATH_SUFFIXES blis-serial blis)
find_library(SpmdBLIS_LIBRARY NAMES blis PATH_SUFFIXES blis-serial)
mark_as_advanced(SpmdBLIS_INCLUDE_DIR SpmdBLIS_LIBRARY)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SpmdBLIS REQUIRED_VARS SpmdBLIS_LIBRARY SpmdBLIS_INCLUDE_DIR)
if(SpmdBLIS_FOUND AND NOT TARGET SpmdBLIS::BLIS)
  add_library(SpmdBLIS::BLIS UNKNOWN IMPORTED)
  set_target_properties(SpmdBLIS::BLIS PROPERTIES
                        IMPORTED_LOCATION "${SpmdBLIS_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${SpmdBLIS_INCLUDE_DIR}")
endif()

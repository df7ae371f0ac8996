# SPDX-License-Identifier: Apache-2.0
# Warning and sanitizer flags, applied per target through spmd_target_options() so that projects
# embedding spmd never inherit them.
function(spmd_target_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wno-missing-field-initializers>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wshadow,-Wno-missing-field-initializers>)
  if(SPMD_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
                                             $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
  endif()
endfunction()

# Sanitizers must cover every object in the process, so they are global in a sanitizer build.
# -O1 keeps sanitizer builds (ASan + UBSan in particular) fast to compile and still fast enough;
# -g1 (line tables, no variables) keeps file:line in their reports for a third less compile time.
if(NOT SPMD_SANITIZE STREQUAL "")
  add_compile_options(-O1 -g1)
endif()
if(SPMD_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(SPMD_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(NOT SPMD_SANITIZE STREQUAL "")
  message(FATAL_ERROR "SPMD_SANITIZE must be '', 'thread' or 'address', got '${SPMD_SANITIZE}'")
endif()

# Fuzzing rides on the address build (scripts/fuzz.sh builds its targets in build-asan/, beside
# the tests): every object gets libFuzzer's coverage instrumentation as well, except the test
# code (tests/CMakeLists.txt takes it off there), and the fuzz targets link libFuzzer's main
# (tests/fuzz/CMakeLists.txt).
if(SPMD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SPMD_FUZZ needs Clang (libFuzzer): configure with "
                        "CMAKE_CXX_COMPILER=clang++-14 (the asan preset does)")
  endif()
  if(NOT SPMD_SANITIZE STREQUAL "address")
    message(FATAL_ERROR "SPMD_FUZZ runs under ASan + UBSan: configure with SPMD_SANITIZE=address "
                        "(the asan preset does), got SPMD_SANITIZE='${SPMD_SANITIZE}'")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# SPDX-License-Identifier: Apache-2.0
# Fails when a source file includes a backend's folder from outside that folder.
# Usage: cmake -DROOT=<source dir> -DBACKENDS="cpu;cuda" -P CheckLayering.cmake
set(sources "")
foreach(folder IN ITEMS runtime compat tests bench examples)
  file(GLOB_RECURSE found RELATIVE ${ROOT} ${ROOT}/${folder}/*.h ${ROOT}/${folder}/*.cc
       ${ROOT}/${folder}/*.cu ${ROOT}/${folder}/*.cuh)
  list(APPEND sources ${found})
endforeach()
list(FILTER sources EXCLUDE REGEX "^tests/rewriter/")  # legacy programs, not spmd's sources
set(violations "")
foreach(file IN LISTS sources)
  file(STRINGS ${ROOT}/${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(backend IN LISTS BACKENDS)
    if(file MATCHES "^runtime/src/${backend}/")
      continue()
    endif()
    foreach(line IN LISTS includes)
      if(line MATCHES "\"${backend}/")
        string(APPEND violations "  ${file}: ${line}\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "backend folders included from outside (use backend/backend.h and "
                      "backend/registry.h instead):\n${violations}")
endif()
list(LENGTH sources count)
message(STATUS "layering: ${count} files checked, no backend folder included from outside")

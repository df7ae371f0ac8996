# SPDX-License-Identifier: Apache-2.0
# Runs PROGRAM and compares its standard output with the file EXPECTED byte for byte; on a
# difference, writes the output to ACTUAL and prints a unified diff.
#   cmake -DPROGRAM=... [-DARGS=a;b] -DEXPECTED=... -DACTUAL=... -P check_output.cmake
execute_process(COMMAND ${PROGRAM} ${ARGS} OUTPUT_VARIABLE actual ERROR_VARIABLE errors
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} failed (${status}):\n${errors}\nits output:\n${actual}")
endif()
file(READ ${EXPECTED} expected)
if(NOT actual STREQUAL expected)
  file(WRITE ${ACTUAL} "${actual}")
  execute_process(COMMAND diff -u ${EXPECTED} ${ACTUAL} OUTPUT_VARIABLE diff)
  message(FATAL_ERROR "the output of ${PROGRAM} differs from ${EXPECTED}:\n${diff}\n"
                      "If the change is intended: cp ${ACTUAL} ${EXPECTED}")
endif()

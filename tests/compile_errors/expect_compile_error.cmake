# SPDX-License-Identifier: Apache-2.0
# Compiles SOURCE with COMPILER and FLAGS (a ;-list) and fails unless the compiler rejects it with
# a message matching EXPECT: the static_assert that explains the mistake.
separate_arguments(flags NATIVE_COMMAND "${FLAGS}")
execute_process(COMMAND ${COMPILER} ${flags} -fsyntax-only ${SOURCE}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must be rejected")
endif()
string(FIND "${out}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${SOURCE} was rejected without the message '${EXPECT}':\n${out}")
endif()
message(STATUS "rejected with '${EXPECT}'")

# SPDX-License-Identifier: Apache-2.0
# Compile every public header alone with -std=c11 -pedantic -Wall -Wextra -Werror.
file(MAKE_DIRECTORY ${OUT})
foreach(h ${HEADERS})
  string(REPLACE "/" "_" base ${h})
  file(WRITE ${OUT}/${base}.c "#include <${h}>\nint kc_header_test_${base}(void);\nint kc_header_test_${base}(void) { return 0; }\n")
  string(REPLACE "." "_" base2 ${base})
  file(WRITE ${OUT}/${base}.c "#include <${h}>\nint kc_header_test_${base2}(void);\nint kc_header_test_${base2}(void) { return 0; }\n")
  execute_process(COMMAND ${CC} -std=c11 -pedantic -Wall -Wextra -Werror -I${INC} -c ${OUT}/${base}.c -o ${OUT}/${base}.o
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "header ${h} does not compile alone:\n${err}")
  endif()
  message(STATUS "ok ${h}")
endforeach()

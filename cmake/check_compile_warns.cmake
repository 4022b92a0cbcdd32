# Compile-warning test driver: compiles SRC, expects success, and expects the compiler's
# output to match the regex on SRC's first line (`// expect: <regex>`); with -DSILENCE=<macro>,
# compiles again with that macro defined and expects no such output.
file(STRINGS ${SRC} first_line LIMIT_COUNT 1)
string(REGEX MATCH "^// expect: (.*)$" _ "${first_line}")
set(expected "${CMAKE_MATCH_1}")
if(expected STREQUAL "")
  message(FATAL_ERROR "${SRC}: the first line must be `// expect: <regex>`")
endif()
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SRC} must compile (with a warning), but failed:\n${err}")
endif()
string(REGEX MATCH "${expected}" found "${out}${err}")
if(found STREQUAL "")
  message(FATAL_ERROR "${SRC} compiled without the expected warning `${expected}`. Output:\n${err}")
endif()
if(DEFINED SILENCE)
  execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -D${SILENCE} -I${INCLUDE} ${SRC}
                  RESULT_VARIABLE rc2 OUTPUT_VARIABLE out2 ERROR_VARIABLE err2)
  string(REGEX MATCH "${expected}" found2 "${out2}${err2}")
  if(NOT rc2 EQUAL 0 OR NOT found2 STREQUAL "")
    message(FATAL_ERROR "${SRC} with -D${SILENCE}: expected a silent, successful compile. Output:\n${err2}")
  endif()
endif()
message(STATUS "warns as expected: ${found}")

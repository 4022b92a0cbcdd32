# Compile-fail test driver: compiles SRC, expects failure, and expects the compiler's
# output to match the regex on SRC's first line (`// expect: <regex>`).
file(STRINGS ${SRC} first_line LIMIT_COUNT 1)
string(REGEX MATCH "^// expect: (.*)$" _ "${first_line}")
set(expected "${CMAKE_MATCH_1}")
if(expected STREQUAL "")
  message(FATAL_ERROR "${SRC}: the first line must be `// expect: <regex>`")
endif()
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but it must fail with: ${expected}")
endif()
string(REGEX MATCH "${expected}" found "${out}${err}")
if(found STREQUAL "")
  message(FATAL_ERROR "${SRC} failed to compile, but without the expected message `${expected}`. Output:\n${err}")
endif()
message(STATUS "fails as expected: ${found}")

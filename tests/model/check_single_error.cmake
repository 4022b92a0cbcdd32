# Compile-fail test driver for "reported once": compiles SRC (a tests/fail/ file), expects it to
# fail with exactly one `error:` line, and that line's message to match the regex on SRC's first
# line (`// expect: <regex>`). tests/fail/ already checks the message; this checks that no second
# error follows it (a cascade used to bury the first one).
file(STRINGS ${SRC} first_line LIMIT_COUNT 1)
string(REGEX MATCH "^// expect: (.*)$" _ "${first_line}")
set(expected "${CMAKE_MATCH_1}")
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but it must fail with: ${expected}")
endif()
string(REGEX MATCHALL "error: [^\n]*" errors "${out}${err}")
list(LENGTH errors n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "${SRC}: ${n} errors, expected exactly one:\n${errors}")
endif()
string(REGEX MATCH "${expected}" found "${errors}")
if(found STREQUAL "")
  message(FATAL_ERROR "${SRC}: the one error is not the expected `${expected}`:\n${errors}")
endif()
message(STATUS "one error, as expected: ${found}")

# Runs one failing MPI job and checks that it failed the right way:
#   exit status != 0 (and == EXPECT_RC when given), the output matches EXPECT (a regex),
#   at most MAX_LINES lines start with "weft[rank" (when given), within MAX_SECONDS.
# Usage (see CMakeLists.txt here):
#   cmake -DMPIEXEC=... -DNP_FLAG=-np -DNP=4 "-DPREFLAGS=a|b" "-DPOSTFLAGS=" -DEXE=... -DMODE=...
#         -DEXPECT=regex [-DEXPECT_RC=3] [-DMAX_LINES=1] -DMAX_SECONDS=20 -P expect_failure.cmake
# PREFLAGS/POSTFLAGS use | between arguments (a ; would split the add_test command).
cmake_minimum_required(VERSION 3.25)

foreach(var MPIEXEC NP_FLAG NP EXE MODE EXPECT MAX_SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_failure.cmake: -D${var}=... is required")
  endif()
endforeach()
string(REPLACE "|" ";" pre "${PREFLAGS}")
string(REPLACE "|" ";" post "${POSTFLAGS}")
string(REPLACE "|" ";" mode_args "${MODE}")  # MODE may carry several arguments: a|b|c

math(EXPR kill_after "${MAX_SECONDS} + 10")  # a hang still ends, and is reported as one
string(TIMESTAMP t0 "%s")
execute_process(
  COMMAND ${MPIEXEC} ${NP_FLAG} ${NP} ${pre} ${EXE} ${post} ${mode_args}
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  TIMEOUT ${kill_after})
string(TIMESTAMP t1 "%s")
math(EXPR seconds "${t1} - ${t0}")
set(all "${out}${err}")
set(report "mode ${MODE}, np ${NP}: exit status '${rc}' after ${seconds} s; output:\n${all}")

if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end by itself (${rc}) — ${report}")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the job exited 0 but must fail — ${report}")
endif()
if(DEFINED EXPECT_RC AND NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "expected exit status ${EXPECT_RC} — ${report}")
endif()
if(seconds GREATER_EQUAL MAX_SECONDS)
  message(FATAL_ERROR "the job took ${seconds} s, limit ${MAX_SECONDS} s — ${report}")
endif()
if(NOT all MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not match '${EXPECT}' — ${report}")
endif()
if(DEFINED MAX_LINES)
  string(REGEX MATCHALL "weft\\[rank [0-9]+/[0-9]+\\]:" lines "${all}")
  list(LENGTH lines count)
  if(count GREATER MAX_LINES)
    message(FATAL_ERROR "${count} weft error lines, at most ${MAX_LINES} expected — ${report}")
  endif()
endif()
# A killed rank (fault injection) prints "killing rank R at unix time T" just before SIGKILL;
# the job must end within MAX_SECONDS_AFTER_KILL of that moment.
if(DEFINED MAX_SECONDS_AFTER_KILL)
  string(REGEX MATCH "killing rank [0-9]+ at unix time ([0-9]+)" _ "${all}")
  if(CMAKE_MATCH_1 STREQUAL "")
    message(FATAL_ERROR "the rank was never killed — ${report}")
  endif()
  math(EXPR after_kill "${t1} - ${CMAKE_MATCH_1}")
  if(after_kill GREATER MAX_SECONDS_AFTER_KILL)
    message(FATAL_ERROR "the job ended ${after_kill} s after the kill, limit ${MAX_SECONDS_AFTER_KILL} s — ${report}")
  endif()
  message(STATUS "the job ended ${after_kill} s after the kill")
endif()
message(STATUS "ok: ${MODE} failed with status ${rc} in ${seconds} s")

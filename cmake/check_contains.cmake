# Passes when FILE contains the byte string TEXT (e.g. a fat binary's "sm_90a" target).
file(STRINGS ${FILE} hits REGEX "${TEXT}" LIMIT_COUNT 1)
if(NOT hits)
  message(FATAL_ERROR "${FILE} does not contain ${TEXT}")
endif()
message(STATUS "${FILE} contains ${TEXT}")

# Runs train_gpt twice, --precision f32 and --precision bf16, with the same arguments, and checks
# that both exit with status 0 and that the bf16 run's final validation loss is within
# TOLERANCE (relative) of the f32 run's (issue 7: "within 3%").
#   cmake -DTRAIN_GPT=<exe> "-DARGS=--preset|small|--steps|400" -DTOLERANCE=0.03 -P compare_precision.cmake
string(REPLACE "|" ";" args "${ARGS}")
foreach(p f32 bf16)
  execute_process(COMMAND ${TRAIN_GPT} ${args} --precision ${p} --quiet --sample 0 --checkpoint "" --log ""
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "train_gpt --precision ${p} exited with ${rc}:\n${out}\n${err}")
  endif()
  if(NOT out MATCHES "final validation loss ([0-9.]+)")
    message(FATAL_ERROR "train_gpt --precision ${p}: no final validation loss in its output:\n${out}")
  endif()
  set(loss_${p} ${CMAKE_MATCH_1})
endforeach()
# CMake's math() is integer-only: compare |bf16 - f32| * 10^6 with TOLERANCE * f32 * 10^6.
foreach(v loss_f32 loss_bf16 TOLERANCE)
  string(REGEX MATCH "^([0-9]+)\\.?([0-9]*)" _ "${${v}}")
  set(frac "${CMAKE_MATCH_2}000000")
  string(SUBSTRING "${frac}" 0 6 frac)
  math(EXPR ${v}_micro "${CMAKE_MATCH_1} * 1000000 + 1${frac} - 1000000")
endforeach()
math(EXPR diff "${loss_bf16_micro} - ${loss_f32_micro}")
if(diff LESS 0)
  math(EXPR diff "-(${diff})")
endif()
math(EXPR bound "${loss_f32_micro} * ${TOLERANCE_micro} / 1000000")
message(STATUS "validation loss: f32 ${loss_f32}, bf16 ${loss_bf16}, |difference| ${diff}e-6, bound ${bound}e-6")
if(diff GREATER bound)
  message(FATAL_ERROR "bf16 validation loss ${loss_bf16} is not within ${TOLERANCE} of the f32 run's ${loss_f32}")
endif()

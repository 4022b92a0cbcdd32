# moe: a mixture-of-experts GPT trained on the fortune corpus (examples/05_moe/README.md).
add_executable(moe ${CMAKE_CURRENT_LIST_DIR}/moe.cpp)
target_link_libraries(moe PRIVATE weft::host)
target_compile_options(moe PRIVATE -march=native)
set_target_properties(moe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

# demo.moe: the example trains to its validation-loss goal; the output prints loss, goal and
# margin (measured in docs/moe.md), and the exit status says whether it was met (both checked:
# cmake/run_expect.cmake). The goal holds on both of OpenBLAS's kernels CI may meet (top-k
# routing turns last-bit differences into different trajectories: docs/moe.md). The top level enables testing only after the examples, and
# CMake writes a directory's CTestTestfile only where testing is enabled: so enable it for this
# directory too (the same switch the top level flips; ctest then finds demo.moe).
if(WEFT_ENABLE_TESTS)
  enable_testing()
  add_test(NAME demo.moe
           COMMAND ${CMAKE_COMMAND} "-DCOMMAND=$<TARGET_FILE:moe>|--steps|1000|--eval-every|500|--expect-val-loss|2.3"
                   "-DEXPECT=loss goal: .* \\(met\\)" -P ${PROJECT_SOURCE_DIR}/cmake/run_expect.cmake)
  # COST: one of the suite's longest runs, started first by `ctest -j` (tests/CMakeLists.txt).
  set_tests_properties(demo.moe PROPERTIES LABELS demo TIMEOUT 900 COST 900
                       ENVIRONMENT "OMP_NUM_THREADS=1;OPENBLAS_NUM_THREADS=1")
endif()

# bench_auto_strategy: the compile time of the planner's search is the benchmark; building the
# target measures it (bench_auto_strategy.sh times a clean compile and prints the choices).
add_executable(bench_auto_strategy ${CMAKE_CURRENT_LIST_DIR}/bench_auto_strategy.cpp)
target_link_libraries(bench_auto_strategy PRIVATE weft::weft)
set_target_properties(bench_auto_strategy PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

# planner_validation: prints the tables of docs/planner_validation.md.
add_executable(planner_validation ${CMAKE_CURRENT_LIST_DIR}/planner_validation.cpp)
target_link_libraries(planner_validation PRIVATE weft::weft)
set_target_properties(planner_validation PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

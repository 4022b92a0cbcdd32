# plan_cluster: the planner's explorer (examples/04_plan_cluster/README.md).
add_executable(plan_cluster ${CMAKE_CURRENT_LIST_DIR}/plan_cluster.cpp)
target_link_libraries(plan_cluster PRIVATE weft::weft)
set_target_properties(plan_cluster PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

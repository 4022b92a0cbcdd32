# bench_loader: the data loader's tokens/s against the training step's (docs/data_pipeline.md).
find_package(Threads REQUIRED)
add_executable(bench_loader ${CMAKE_CURRENT_LIST_DIR}/bench_loader.cpp)
target_link_libraries(bench_loader PRIVATE weft::host Threads::Threads)
target_compile_options(bench_loader PRIVATE -march=native)
set_target_properties(bench_loader PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})

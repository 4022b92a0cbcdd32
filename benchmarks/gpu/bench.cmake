# bench_kernels: each CUDA kernel at GPT-2 124M's shapes against the copy and bf16 matrix-product
# rates measured in the same run (benchmarks/gpu/run.sh builds and runs it on a lent GPU). In
# CMake: part of the `benchmarks` target wherever nvcc is, for the configured architectures; it
# exits 77 without a device.
if(CMAKE_CUDA_COMPILER AND TARGET weft::cuda)
  add_executable(bench_kernels ${CMAKE_CURRENT_LIST_DIR}/bench_kernels.cu)
  target_link_libraries(bench_kernels PRIVATE weft::cuda)
  set_target_properties(bench_kernels PROPERTIES CUDA_STANDARD 20 RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endif()

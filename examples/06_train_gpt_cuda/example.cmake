# train_gpt_cuda: the GPT of 01_train_gpt on one GPU (training_step<Plan, cuda_context>).
# Built where nvcc and the CUDA libraries are found, for the configured architectures (90a in
# weft's own build, 90a;80 as a subproject); it needs a device to run and exits 77 without one
# (CTest: Skipped).
if(CMAKE_CUDA_COMPILER AND TARGET weft::cuda)
  add_executable(train_gpt_cuda ${CMAKE_CURRENT_LIST_DIR}/train_gpt_cuda.cu)
  target_link_libraries(train_gpt_cuda PRIVATE weft::cuda)
  target_compile_definitions(train_gpt_cuda PRIVATE WEFT_PORTABLE_GEMM)
  set_target_properties(train_gpt_cuda PROPERTIES CUDA_STANDARD 20 RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  if(WEFT_ENABLE_TESTS)
    enable_testing()
    # A short run on the device: the loss must fall below the byte-level model's start (ln 256).
    add_test(NAME gpu.train_gpt_cuda COMMAND train_gpt_cuda --preset small --steps 100 --log-every 20 --expect-loss 3.5)
    set_tests_properties(gpu.train_gpt_cuda PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600
                         FAIL_REGULAR_EXPRESSION "loss (nan|inf)")
    add_test(NAME gpu.train_gpt_cuda_bf16
             COMMAND train_gpt_cuda --preset small --precision bf16 --steps 100 --log-every 20 --expect-loss 3.6)
    set_tests_properties(gpu.train_gpt_cuda_bf16 PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600
                         FAIL_REGULAR_EXPRESSION "loss (nan|inf)")
    # f16 storage with dynamic loss scaling (an overflow skips the step and halves the scale).
    add_test(NAME gpu.train_gpt_cuda_f16
             COMMAND train_gpt_cuda --preset small --precision f16 --steps 100 --log-every 20 --expect-loss 3.6)
    set_tests_properties(gpu.train_gpt_cuda_f16 PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600
                         FAIL_REGULAR_EXPRESSION "loss (nan|inf)")
  endif()
endif()

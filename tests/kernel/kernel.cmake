# Kernel tests (issue 8): weft's own CUDA kernels' phase code (include/weft/backend/cuda/kernels/*.hpp)
# runs on the host's emulated grid against the host ops, in f32 and bf16, without a GPU or nvcc.
# Included from tests/CMakeLists.txt, after the tests/cuda glob.

# ---- tests/kernel/test_*.cpp: Catch2 executables, label `kernel` ----
file(GLOB weft_kernel_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/kernel/test_*.cpp)
foreach(src IN LISTS weft_kernel_tests)
  get_filename_component(stem ${src} NAME_WE)
  set(exe kernel_${stem})
  add_executable(${exe} ${src})
  target_link_libraries(${exe} PRIVATE weft::host Catch2::Catch2WithMain)
  target_compile_options(${exe} PRIVATE -Wall -Wextra)
  catch_discover_tests(${exe} TEST_PREFIX "kernel." PROPERTIES LABELS kernel TIMEOUT 600)
  # Again with blocks and threads run in reverse order inside each phase: a kernel that is
  # right only in one order has a race a barrier does not cover (grid.hpp, emulation_order).
  # (EXTRA_ARGS --order decl is Catch2's default order; it only makes the generated file's name
  # differ from the first registration's.)
  catch_discover_tests(${exe} TEST_PREFIX "kernel.reverse." EXTRA_ARGS --order decl
                       PROPERTIES LABELS kernel TIMEOUT 600 ENVIRONMENT WEFT_EMULATION_ORDER=reverse)
endforeach()

# ---- nvcc: every launcher for sm_90a and sm_80; cuBLASLt descriptors without a device ----
if(CMAKE_CUDA_COMPILER AND TARGET weft::cuda)
  # tests/CMakeLists.txt's glob of tests/cuda/compile_*.cu made this target and a cuda-labelled
  # test that only reports the build; pin both architectures and label it a kernel build check too.
  if(TARGET cuda_compile_kernels)
    set_target_properties(cuda_compile_kernels PROPERTIES CUDA_ARCHITECTURES "90a;80")
    set_tests_properties(cuda.compile_kernels PROPERTIES LABELS "cuda;kernel")
  endif()
  # The programs that need a device are built for the configured architectures (sm_90a alone in
  # weft's own build: they only skip here, and the GPU script builds its own).
  if(TARGET cuda_test_kernels_gpu)
    # weft::cuda has no CBLAS: the host reference's small products use the portable loops.
    target_compile_definitions(cuda_test_kernels_gpu PRIVATE WEFT_PORTABLE_GEMM)
  endif()
  if(TARGET cuda_test_model_ops_gpu)
    # A whole GPT and LLaMA through cuda_context (backend/cuda/ops.cuh).
    target_compile_definitions(cuda_test_model_ops_gpu PRIVATE WEFT_PORTABLE_GEMM)
  endif()
  # Creating cuBLASLt descriptors and layouts needs no device: this runs here (not label gpu).
  add_executable(kernel_blaslt_descriptors ${CMAKE_CURRENT_SOURCE_DIR}/kernel/blaslt_descriptors.cu)
  target_link_libraries(kernel_blaslt_descriptors PRIVATE weft::cuda)
  target_compile_definitions(kernel_blaslt_descriptors PRIVATE WEFT_PORTABLE_GEMM)
  set_target_properties(kernel_blaslt_descriptors PROPERTIES CUDA_STANDARD 20)
  add_test(NAME kernel.blaslt_descriptors COMMAND kernel_blaslt_descriptors)
  set_tests_properties(kernel.blaslt_descriptors PROPERTIES LABELS "kernel;cuda" TIMEOUT 300)
endif()

# NCCL: the bootstrap runs under mpirun without a GPU (label mpi); the communicator on one GPU
# (label gpu) is compiled for the configured architectures and skipped (status 77) without a device.
if(TARGET weft::nccl)
  if(TARGET weft::mpi)
    add_executable(mpi_nccl_bootstrap ${CMAKE_CURRENT_SOURCE_DIR}/comm/nccl_bootstrap.cpp)
    target_link_libraries(mpi_nccl_bootstrap PRIVATE weft::mpi weft::nccl)
    foreach(np 1 2 4)
      add_test(NAME mpi.nccl_bootstrap.np${np}
               COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS}
                       $<TARGET_FILE:mpi_nccl_bootstrap> ${MPIEXEC_POSTFLAGS})
      set_tests_properties(mpi.nccl_bootstrap.np${np} PROPERTIES LABELS mpi TIMEOUT 60 PROCESSORS 2
                           ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_pml=ob1;OMPI_MCA_btl=self,vader;OMPI_MCA_rmaps_base_oversubscribe=1")
    endforeach()
  endif()
  add_executable(cuda_nccl_world ${CMAKE_CURRENT_SOURCE_DIR}/comm/test_nccl_world.cu)
  target_link_libraries(cuda_nccl_world PRIVATE weft::nccl)
  set_target_properties(cuda_nccl_world PROPERTIES CUDA_STANDARD 20)
  add_test(NAME gpu.nccl_world_of_one COMMAND cuda_nccl_world)
  set_tests_properties(gpu.nccl_world_of_one PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
# Several processes on one GPU through the staging communicator (label gpu; 77 without a device).
if(TARGET weft::cuda AND TARGET weft::mpi)
  add_executable(cuda_gpu_shared_dp ${CMAKE_CURRENT_SOURCE_DIR}/comm/test_gpu_shared_dp.cu)
  target_link_libraries(cuda_gpu_shared_dp PRIVATE weft::cuda weft::mpi)
  target_compile_definitions(cuda_gpu_shared_dp PRIVATE WEFT_PORTABLE_GEMM)
  set_target_properties(cuda_gpu_shared_dp PROPERTIES CUDA_STANDARD 20)
  add_test(NAME gpu.shared_gpu_dp.np2
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${MPIEXEC_PREFLAGS}
                   $<TARGET_FILE:cuda_gpu_shared_dp> ${MPIEXEC_POSTFLAGS})
  set_tests_properties(gpu.shared_gpu_dp.np2 PROPERTIES LABELS "gpu;mpi" SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS 2
                       ENVIRONMENT "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_pml=ob1;OMPI_MCA_btl=self,vader;OMPI_MCA_rmaps_base_oversubscribe=1")
endif()
if(NOT TARGET weft::nccl)
  message(STATUS "weft: no NCCL - the NCCL bootstrap and communicator tests are skipped")
endif()

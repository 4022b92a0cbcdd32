# weft's optional parts. Used both from the source tree and from an installed package
# (weftConfig.cmake includes this file), so a consumer gets the same targets:
#   weft::host  headers + CBLAS (OpenBLAS) + OpenMP, defines WEFT_HAS_CBLAS; + oneDNN where found
#               (bf16 products on AMX / AVX512-BF16), defines WEFT_HAS_DNNL
#   weft::mpi   headers + Boost.MPI + MPI
#   weft::cuda  headers + CUDA runtime, cuBLAS(Lt)   (only where the CUDA language is enabled)
#   weft::nccl  imported target over the toolkit's NCCL
# A missing part is reported in one line and never fails the host-only build.
include_guard(GLOBAL)

if(NOT TARGET weft::weft)
  message(FATAL_ERROR "weft_parts.cmake: include after weft::weft is defined")
endif()

# ---- weft::host ----
if(NOT TARGET weft::host)
  find_package(OpenMP QUIET COMPONENTS CXX)
  find_package(Threads QUIET)
  # OpenBLAS built on OpenMP first (Debian: libopenblas-openmp-dev): its matrix products share
  # one thread pool with the step's own OpenMP loops. The pthread build runs its own threads
  # beside OpenMP's, and the two fight over the cores (system time triples on two cores).
  set(_weft_blas_lib)
  set(_weft_blas_threads none)
  if(OpenMP_CXX_FOUND)
    find_library(WEFT_OPENBLAS_OPENMP_LIB NAMES openblas
      PATHS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp
      NO_DEFAULT_PATH NO_CACHE)
    find_path(WEFT_OPENBLAS_OPENMP_INCLUDE cblas.h
      PATHS /usr/include/x86_64-linux-gnu/openblas-openmp /usr/include/aarch64-linux-gnu/openblas-openmp
      NO_DEFAULT_PATH NO_CACHE)
    if(WEFT_OPENBLAS_OPENMP_LIB AND WEFT_OPENBLAS_OPENMP_INCLUDE)
      set(_weft_blas_lib ${WEFT_OPENBLAS_OPENMP_LIB})
      set(WEFT_CBLAS_INCLUDE_DIR ${WEFT_OPENBLAS_OPENMP_INCLUDE})
      set(_weft_blas_threads openmp)
    endif()
  endif()
  if(NOT _weft_blas_lib)
    set(BLA_VENDOR OpenBLAS)
    find_package(BLAS QUIET)
    find_path(WEFT_CBLAS_INCLUDE_DIR cblas.h
      PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include/x86_64-linux-gnu
      NO_CACHE)
    if(BLAS_FOUND AND WEFT_CBLAS_INCLUDE_DIR)
      set(_weft_blas_lib ${BLAS_LIBRARIES})
      set(_weft_blas_threads pthread)
      message(STATUS "weft: OpenBLAS on OpenMP not found - using the pthread OpenBLAS, whose threads compete with the step's (apt-get install libopenblas-openmp-dev)")
    endif()
  endif()
  add_library(weft_host INTERFACE)
  add_library(weft::host ALIAS weft_host)
  target_link_libraries(weft_host INTERFACE weft::weft)
  if(Threads_FOUND)
    target_link_libraries(weft_host INTERFACE Threads::Threads)
  endif()
  if(_weft_blas_lib AND WEFT_CBLAS_INCLUDE_DIR)
    target_link_libraries(weft_host INTERFACE ${_weft_blas_lib})
    if(_weft_blas_threads STREQUAL "openmp")
      # Both OpenBLAS builds have the soname libopenblas.so.0; the run path picks this one over
      # the system's default (Debian's alternatives prefer the pthread build).
      get_filename_component(_weft_blas_dir ${_weft_blas_lib} DIRECTORY)
      target_link_options(weft_host INTERFACE "LINKER:-rpath,${_weft_blas_dir}")
      target_compile_definitions(weft_host INTERFACE WEFT_OPENBLAS_OPENMP=1)
    endif()
    target_include_directories(weft_host SYSTEM INTERFACE ${WEFT_CBLAS_INCLUDE_DIR})
    target_compile_definitions(weft_host INTERFACE WEFT_HAS_CBLAS=1)
    set(WEFT_HAS_CBLAS ON)
  else()
    message(STATUS "weft: OpenBLAS/CBLAS not found - weft::host uses the portable matrix product (apt-get install libopenblas-dev)")
    set(WEFT_HAS_CBLAS OFF)
  endif()
  # oneDNN for the bf16 matrix product on the CPU's matrix engine (AMX / AVX512-BF16, chosen by
  # oneDNN at run time); without it bf16 products use weft's portable float tiles.
  # -DWEFT_ENABLE_DNNL=OFF leaves it out.
  set(WEFT_HAS_DNNL OFF)
  if(NOT DEFINED WEFT_ENABLE_DNNL OR WEFT_ENABLE_DNNL)
    find_package(dnnl CONFIG QUIET)
    if(dnnl_FOUND AND TARGET DNNL::dnnl)
      target_link_libraries(weft_host INTERFACE DNNL::dnnl)
      target_compile_definitions(weft_host INTERFACE WEFT_HAS_DNNL=1)
      set(WEFT_HAS_DNNL ON)
    else()
      message(STATUS "weft: oneDNN not found - bf16 matrix products on the host use the portable float tiles (apt-get install libdnnl-dev)")
    endif()
  endif()
  if(OpenMP_CXX_FOUND)
    target_link_libraries(weft_host INTERFACE OpenMP::OpenMP_CXX)
  else()
    message(STATUS "weft: OpenMP not found - host ops run single-threaded")
  endif()
endif()

# ---- weft::mpi ----
if(NOT TARGET weft::mpi AND (NOT DEFINED WEFT_ENABLE_MPI OR WEFT_ENABLE_MPI))
  find_package(MPI QUIET COMPONENTS CXX)
  find_package(Boost QUIET COMPONENTS mpi serialization)
  if(MPI_CXX_FOUND AND Boost_MPI_FOUND AND Boost_SERIALIZATION_FOUND)
    add_library(weft_mpi INTERFACE)
    add_library(weft::mpi ALIAS weft_mpi)
    target_link_libraries(weft_mpi INTERFACE weft::host Boost::mpi Boost::serialization MPI::MPI_CXX)
    set(WEFT_HAS_MPI ON)
  else()
    message(STATUS "weft: Boost.MPI/MPI not found - weft::mpi and the multi-rank tests are skipped (apt-get install libboost-mpi-dev openmpi-bin)")
    set(WEFT_HAS_MPI OFF)
  endif()
endif()

# ---- weft::cuda and weft::nccl (need the CUDA language enabled by the caller) ----
if(NOT TARGET weft::cuda AND CMAKE_CUDA_COMPILER)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    add_library(weft_cuda INTERFACE)
    add_library(weft::cuda ALIAS weft_cuda)
    target_link_libraries(weft_cuda INTERFACE weft::weft CUDA::cudart CUDA::cublas CUDA::cublasLt)
    # CCCL (Thrust, CUB, libcudacxx) lives under include/cccl in CUDA 13
    if(EXISTS ${CUDAToolkit_INCLUDE_DIRS}/cccl)
      target_include_directories(weft_cuda SYSTEM INTERFACE ${CUDAToolkit_INCLUDE_DIRS}/cccl)
    endif()
    target_compile_options(weft_cuda INTERFACE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
    set(WEFT_HAS_CUDA ON)
    find_path(WEFT_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} NO_CACHE)
    find_library(WEFT_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} NO_CACHE)
    if(WEFT_NCCL_INCLUDE_DIR AND WEFT_NCCL_LIBRARY)
      add_library(weft::nccl_lib UNKNOWN IMPORTED)
      set_target_properties(weft::nccl_lib PROPERTIES IMPORTED_LOCATION ${WEFT_NCCL_LIBRARY}
        INTERFACE_INCLUDE_DIRECTORIES ${WEFT_NCCL_INCLUDE_DIR})
      add_library(weft_nccl INTERFACE)
      add_library(weft::nccl ALIAS weft_nccl)
      target_link_libraries(weft_nccl INTERFACE weft::cuda weft::nccl_lib)
      set(WEFT_HAS_NCCL ON)
    else()
      message(STATUS "weft: NCCL not found under the CUDA toolkit - weft::nccl is skipped")
      set(WEFT_HAS_NCCL OFF)
    endif()
  else()
    message(STATUS "weft: CUDA toolkit libraries not found - weft::cuda is skipped")
    set(WEFT_HAS_CUDA OFF)
  endif()
endif()

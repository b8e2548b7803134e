# Optional dependencies of the runtime, each found automatically and each
# with an option to turn it off. Nothing here is required: the runtime falls
# back to its built-in CPU kernels and in-process communicator.
#
#   PARTITA_ENABLE_CUDA     CUDA toolkit + cuBLAS + NCCL (on when found)
#   PARTITA_ENABLE_MPI      MPI for the multi-process runtime (on when found)
#   PARTITA_ENABLE_OPENBLAS OpenBLAS GEMM for the CPU backend (on when found)
#   PARTITA_ENABLE_JEMALLOC jemalloc as the compiler tools' allocator (on when
#                           found, off with sanitizers)
#
# Results: PARTITA_HAVE_CUDA / _MPI / _OPENBLAS and the imported targets
# Partita::NCCL (with CUDA), MPI::MPI_CXX, Partita::OpenBLAS.

# --- CUDA -------------------------------------------------------------------
include(CheckLanguage)
if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
check_language(CUDA)
set(_partita_cuda_default OFF)
if(CMAKE_CUDA_COMPILER)
  set(_partita_cuda_default ON)
endif()
option(PARTITA_ENABLE_CUDA "Build the CUDA backend (CUDA, cuBLAS, NCCL)" ${_partita_cuda_default})
set(PARTITA_HAVE_CUDA OFF)
if(PARTITA_ENABLE_CUDA)
  # H200 is sm_90; "native" fails on machines without a GPU.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  # One cudart: the shared one.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  # NCCL has no CMake package: look in the toolkit, then in pip's nvidia-nccl.
  find_path(PARTITA_NCCL_INCLUDE_DIR nccl.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
  find_library(PARTITA_NCCL_LIBRARY NAMES nccl libnccl.so.2
    HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib lib64)
  if(PARTITA_NCCL_INCLUDE_DIR AND PARTITA_NCCL_LIBRARY)
    add_library(Partita::NCCL UNKNOWN IMPORTED)
    set_target_properties(Partita::NCCL PROPERTIES
      IMPORTED_LOCATION ${PARTITA_NCCL_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${PARTITA_NCCL_INCLUDE_DIR})
    set(PARTITA_HAVE_CUDA ON)
  else()
    message(WARNING "CUDA found but NCCL not: the CUDA backend is disabled "
                    "(set NCCL_HOME, or -DPARTITA_ENABLE_CUDA=OFF)")
  endif()
endif()

# --- MPI --------------------------------------------------------------------
find_package(MPI QUIET COMPONENTS CXX)
set(_partita_mpi_default OFF)
if(MPI_CXX_FOUND)
  set(_partita_mpi_default ON)
endif()
option(PARTITA_ENABLE_MPI "Build the MPI communicator" ${_partita_mpi_default})
set(PARTITA_HAVE_MPI OFF)
if(PARTITA_ENABLE_MPI AND MPI_CXX_FOUND)
  set(PARTITA_HAVE_MPI ON)
endif()

# --- OpenBLAS ---------------------------------------------------------------
find_path(PARTITA_OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas)
find_library(PARTITA_OPENBLAS_LIBRARY NAMES openblas)
set(_partita_blas_default OFF)
if(PARTITA_OPENBLAS_INCLUDE_DIR AND PARTITA_OPENBLAS_LIBRARY)
  set(_partita_blas_default ON)
endif()
option(PARTITA_ENABLE_OPENBLAS "Use OpenBLAS for CPU GEMM" ${_partita_blas_default})
set(PARTITA_HAVE_OPENBLAS OFF)
if(PARTITA_ENABLE_OPENBLAS AND _partita_blas_default)
  add_library(Partita::OpenBLAS UNKNOWN IMPORTED)
  set_target_properties(Partita::OpenBLAS PROPERTIES
    IMPORTED_LOCATION ${PARTITA_OPENBLAS_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${PARTITA_OPENBLAS_INCLUDE_DIR})
  set(PARTITA_HAVE_OPENBLAS ON)
endif()

# --- jemalloc ---------------------------------------------------------------
# The compiler allocates many small objects (shardings, proposals, axis
# lists): with jemalloc in place of glibc's malloc an 86-layer GPT train step
# compiles in 2.3 s instead of 3.4 s (docs/Planning.md, "Limits"); the
# runtime's cross-process collectives allocate their bookkeeping per call.
# Linked into the tools' executables only (`partita_use_jemalloc`), never
# into libraries, and not with sanitizers, which bring their own allocator.
find_library(PARTITA_JEMALLOC_LIBRARY NAMES jemalloc)
set(_partita_jemalloc_default OFF)
if(PARTITA_JEMALLOC_LIBRARY AND NOT PARTITA_SANITIZE)
  set(_partita_jemalloc_default ON)
endif()
option(PARTITA_ENABLE_JEMALLOC "Link the tools with jemalloc" ${_partita_jemalloc_default})
set(PARTITA_HAVE_JEMALLOC OFF)
if(PARTITA_ENABLE_JEMALLOC AND PARTITA_JEMALLOC_LIBRARY AND NOT PARTITA_SANITIZE)
  set(PARTITA_HAVE_JEMALLOC ON)
endif()
# Makes `target` (an executable) allocate with jemalloc when it is found: the
# library is kept even where the linker drops what nothing references.
function(partita_use_jemalloc target)
  if(PARTITA_HAVE_JEMALLOC)
    target_link_libraries(${target} PRIVATE
      -Wl,--push-state,--no-as-needed ${PARTITA_JEMALLOC_LIBRARY} -Wl,--pop-state)
  endif()
endfunction()

message(STATUS "Partita optional dependencies: CUDA+NCCL=${PARTITA_HAVE_CUDA} "
               "MPI=${PARTITA_HAVE_MPI} OpenBLAS=${PARTITA_HAVE_OPENBLAS} "
               "jemalloc=${PARTITA_HAVE_JEMALLOC}")

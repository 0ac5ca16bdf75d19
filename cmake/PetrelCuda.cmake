# Resolves PETREL_WITH_CUDA (AUTO|ON|OFF) into PETREL_HAVE_CUDA (STYLE.md §14).
# With CUDA: enables the CUDA language, finds the toolkit (CUDA::cudart,
# CUDA::cublas), defines PETREL_HAVE_CUDA for every target and sets the
# CMake variable PETREL_HAVE_CUDA that kernels/CMakeLists.txt reads.
set(PETREL_HAVE_CUDA OFF)
string(TOUPPER "${PETREL_WITH_CUDA}" _petrel_cuda_mode)
if(NOT _petrel_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "PETREL_WITH_CUDA must be AUTO, ON or OFF, not '${PETREL_WITH_CUDA}'")
endif()

if(_petrel_cuda_mode STREQUAL "OFF")
  set(_petrel_cuda_why "PETREL_WITH_CUDA=OFF")
else()
  # The toolkit's default location is not on PATH on our machines.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
     AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  # Default targets: machine code for Ampere (sm_80) and Hopper (sm_90),
  # plus compute_90 PTX so that newer GPUs (Blackwell and later) JIT-compile
  # the kernels at load time. CI and deploy/gpu-check.sh pass one
  # architecture (90-real) to compile faster.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # One runtime for everything: the shared libcudart that CUDA::cudart
    # names (CMake's default would also link the static one into CUDA
    # targets, giving two runtimes with separate state).
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    set(PETREL_HAVE_CUDA ON)
    add_compile_definitions(PETREL_HAVE_CUDA)
    set(_petrel_cuda_why
        "nvcc ${CMAKE_CUDA_COMPILER_VERSION} at ${CMAKE_CUDA_COMPILER}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
  elseif(_petrel_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR
      "PETREL_WITH_CUDA=ON but no working CUDA compiler was found "
      "(set CMAKE_CUDA_COMPILER or install the toolkit in /usr/local/cuda)")
  else()
    set(_petrel_cuda_why "PETREL_WITH_CUDA=AUTO and no CUDA compiler was found")
  endif()
endif()

if(PETREL_HAVE_CUDA)
  message(STATUS "Petrel CUDA: ON (${_petrel_cuda_why})")
else()
  message(STATUS "Petrel CUDA: OFF (${_petrel_cuda_why})")
endif()

# The values of base/build_info.h, fixed at configure time into the
# generated header <build>/base/build_info_values.h:
# - the version: project(VERSION) in the top-level CMakeLists.txt, the one
#   place it is written (the Debian package and PetrelConfigVersion.cmake
#   take it from there too);
# - the git commit: -DPETREL_GIT_COMMIT=<hash> when given (a build from a
#   source tarball), else `git rev-parse` of the source tree, else
#   "unknown" (no git, or not a checkout). Local only, never the network.
#   A commit or checkout re-runs CMake on the next build (the reflog of
#   HEAD is a configure dependency), so the hash does not go stale;
# - the build type (CMAKE_BUILD_TYPE, "none" when empty) and whether the
#   CUDA kernels are compiled in (PETREL_HAVE_CUDA, from PetrelCuda.cmake).

set(PETREL_GIT_COMMIT "" CACHE STRING
    "The commit --version reports; empty: ask git at configure time")

if(PETREL_GIT_COMMIT)
  set(_petrel_commit "${PETREL_GIT_COMMIT}")
else()
  set(_petrel_commit unknown)
  find_package(Git QUIET)
  if(GIT_FOUND)
    execute_process(
      COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      OUTPUT_VARIABLE _petrel_head
      RESULT_VARIABLE _petrel_git_rc
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(
      COMMAND ${GIT_EXECUTABLE} rev-parse --absolute-git-dir
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      OUTPUT_VARIABLE _petrel_git_dir
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    # Only a checkout of this project, not of a directory above it (a
    # tarball unpacked inside some other repository).
    execute_process(
      COMMAND ${GIT_EXECUTABLE} rev-parse --show-toplevel
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      OUTPUT_VARIABLE _petrel_git_top
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_petrel_git_rc EQUAL 0 AND _petrel_head MATCHES "^[0-9a-f]+$")
      file(REAL_PATH "${PROJECT_SOURCE_DIR}" _petrel_src_real)
      if(_petrel_git_top)
        file(REAL_PATH "${_petrel_git_top}" _petrel_git_top)
      endif()
      if(_petrel_git_top STREQUAL _petrel_src_real)
        set(_petrel_commit "${_petrel_head}")
        if(EXISTS "${_petrel_git_dir}/logs/HEAD")
          set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                       "${_petrel_git_dir}/logs/HEAD")
        endif()
      endif()
    endif()
  endif()
endif()
# The header's string literal must stay one: only hex digits, letters,
# dots and dashes pass through.
string(REGEX REPLACE "[^0-9A-Za-z._-]" "" PETREL_GIT_COMMIT_VALUE
       "${_petrel_commit}")
if(NOT PETREL_GIT_COMMIT_VALUE)
  set(PETREL_GIT_COMMIT_VALUE unknown)
endif()

if(CMAKE_BUILD_TYPE)
  set(PETREL_BUILD_TYPE_NAME "${CMAKE_BUILD_TYPE}")
else()
  set(PETREL_BUILD_TYPE_NAME none)
endif()
if(PETREL_HAVE_CUDA)
  set(PETREL_BUILD_WITH_CUDA 1)
else()
  set(PETREL_BUILD_WITH_CUDA 0)
endif()

configure_file(${PROJECT_SOURCE_DIR}/base/build_info_values.h.in
               ${PROJECT_BINARY_DIR}/base/build_info_values.h @ONLY)
message(STATUS "Petrel ${PROJECT_VERSION}: commit ${PETREL_GIT_COMMIT_VALUE}, "
               "build type ${PETREL_BUILD_TYPE_NAME}, CUDA ${PETREL_HAVE_CUDA}")

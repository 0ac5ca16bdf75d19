# Helpers modelled on absl_cc_library / absl_cc_test. Every source is listed by hand.

# petrel_cc_library(NAME n SRCS ... [HDRS ...] [DEPS ...] [PUBLIC_DEPS ...])
# Every header that sits beside a source (foo.h for foo.cc or foo.cu) must be
# listed in HDRS, so that a target's interface is written down in one place.
function(petrel_cc_library)
  cmake_parse_arguments(P "" "NAME" "SRCS;HDRS;DEPS;PUBLIC_DEPS" ${ARGN})
  foreach(src IN LISTS P_SRCS)
    get_filename_component(dir ${src} DIRECTORY)
    get_filename_component(stem ${src} NAME_WE)
    if(dir)
      set(hdr ${dir}/${stem}.h)
    else()
      set(hdr ${stem}.h)
    endif()
    if(IS_ABSOLUTE ${hdr})
      set(hdr_path ${hdr})
    else()
      set(hdr_path ${CMAKE_CURRENT_SOURCE_DIR}/${hdr})
    endif()
    if(EXISTS ${hdr_path} AND NOT hdr IN_LIST P_HDRS)
      message(SEND_ERROR "${P_NAME}: list ${hdr} in HDRS (it sits beside ${src})")
    endif()
  endforeach()
  add_library(${P_NAME} STATIC ${P_SRCS} ${P_HDRS})
  target_link_libraries(${P_NAME} PUBLIC ${P_PUBLIC_DEPS} PRIVATE ${P_DEPS})
endfunction()

# petrel_cc_binary(NAME n SRCS ... [DEPS ...] [OUTPUT_NAME name])
function(petrel_cc_binary)
  cmake_parse_arguments(P "" "NAME;OUTPUT_NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${P_NAME} ${P_SRCS})
  target_link_libraries(${P_NAME} PRIVATE ${P_DEPS})
  if(P_OUTPUT_NAME)
    set_target_properties(${P_NAME} PROPERTIES OUTPUT_NAME ${P_OUTPUT_NAME})
  endif()
  set_target_properties(${P_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                             ${CMAKE_BINARY_DIR}/bin)
endfunction()

# Where the tests' temporary files go: GoogleTest's TempDir() reads TMPDIR.
# (Not TEST_TMPDIR: glog makes that the default --log_dir, and the daemons
# the tests start would log to files instead of stderr.)
set(PETREL_TEST_TMPDIR ${CMAKE_BINARY_DIR}/test-tmp)

# petrel_cc_test(NAME n SRCS ... [DEPS ...] [LABELS ...] [TIMEOUT s])
# One executable per test file, registered with gtest_discover_tests.
function(petrel_cc_test)
  if(NOT PETREL_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(P "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT P_TIMEOUT)
    set(P_TIMEOUT 60)
  endif()
  if(NOT P_LABELS)
    set(P_LABELS unit)
  endif()
  add_executable(${P_NAME} ${P_SRCS})
  target_link_libraries(${P_NAME} PRIVATE ${P_DEPS} GTest::gmock GTest::gtest_main)
  # `cmake --build B --target petrel_unit_tests` builds just what
  # `ctest -L unit` runs (the sanitizer build of deploy/run-tests.sh).
  if("unit" IN_LIST P_LABELS)
    if(NOT TARGET petrel_unit_tests)
      add_custom_target(petrel_unit_tests)
    endif()
    add_dependencies(petrel_unit_tests ${P_NAME})
  endif()
  # Files a test makes under ::testing::TempDir() go to the build tree, not
  # /tmp: a test that fails (or is killed) before its clean-up leaves them
  # where `rm -rf build` finds them.
  file(MAKE_DIRECTORY ${PETREL_TEST_TMPDIR})
  gtest_discover_tests(${P_NAME}
    PROPERTIES LABELS "${P_LABELS}" TIMEOUT ${P_TIMEOUT}
               ENVIRONMENT "TMPDIR=${PETREL_TEST_TMPDIR}"
    DISCOVERY_TIMEOUT 30)
endfunction()

# petrel_cc_benchmark(NAME n SRCS ... [DEPS ...])
function(petrel_cc_benchmark)
  if(NOT PETREL_BUILD_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(P "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${P_NAME} ${P_SRCS})
  target_link_libraries(${P_NAME} PRIVATE ${P_DEPS} benchmark::benchmark_main)
endfunction()

# PETREL_TSAN builds: adds base/testing/tsan_absl_sync.cc, through which
# TSan sees Abseil's locking (the file says how), to every executable
# defined in directory `dir` and below.
function(petrel_add_tsan_absl_sync dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type STREQUAL "EXECUTABLE")
      target_sources(${t} PRIVATE
                     ${PROJECT_SOURCE_DIR}/base/testing/tsan_absl_sync.cc)
      target_link_libraries(${t} PRIVATE ${CMAKE_DL_LIBS})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    petrel_add_tsan_absl_sync(${sub})
  endforeach()
endfunction()

# Helpers modelled on absl_cc_library / absl_cc_test. Every source is listed by hand.

# petrel_cc_library(NAME n SRCS ... [HDRS ...] [DEPS ...] [PUBLIC_DEPS ...])
function(petrel_cc_library)
  cmake_parse_arguments(P "" "NAME" "SRCS;HDRS;DEPS;PUBLIC_DEPS" ${ARGN})
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
  gtest_discover_tests(${P_NAME}
    PROPERTIES LABELS "${P_LABELS}" TIMEOUT ${P_TIMEOUT}
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

# Metrics registry, metrics HTTP endpoint and key partitioner: the parts of
# van/ that need neither protobuf nor ZeroMQ. Included from van/CMakeLists.txt;
# paths use CMAKE_CURRENT_LIST_DIR so the file also works when included from
# elsewhere.

petrel_cc_library(
  NAME petrel_van_base
  SRCS
    ${CMAKE_CURRENT_LIST_DIR}/metrics.cc
    ${CMAKE_CURRENT_LIST_DIR}/metrics_http_server.cc
    ${CMAKE_CURRENT_LIST_DIR}/key_range_map.cc
  HDRS
    ${CMAKE_CURRENT_LIST_DIR}/metrics.h
    ${CMAKE_CURRENT_LIST_DIR}/metrics_http_server.h
    ${CMAKE_CURRENT_LIST_DIR}/key_range_map.h
  DEPS
    absl::int128
  PUBLIC_DEPS
    absl::status
    absl::statusor
    absl::synchronization
    absl::strings
    absl::time
    PkgConfig::GLOG
    Threads::Threads
)

petrel_cc_test(
  NAME metrics_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/metrics_test.cc
  DEPS petrel_van_base
  LABELS unit
)

petrel_cc_test(
  NAME metrics_http_server_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/metrics_http_server_test.cc
  DEPS petrel_van_base
  LABELS unit
)

petrel_cc_test(
  NAME key_range_map_test
  SRCS ${CMAKE_CURRENT_LIST_DIR}/key_range_map_test.cc
  DEPS petrel_van_base
  LABELS unit
)

# What `cmake --install` puts under the prefix (GNUInstallDirs layout):
#   bin/                     the daemons and tools (petrel-scheduler, ...)
#   lib/libpetrel.a          the client library, Petrel::petrel: the
#                            messaging core (van/), the push/pull protocol
#                            (kv/: KVWorker, KVServer), the generated
#                            protobuf code and base/ utilities they use
#   lib/libpetrel_node_flags.a  the flags module of node programs,
#                            Petrel::node_flags (NodeSettingsFromFlags,
#                            RunNodeDaemon; it defines gflags flags, so it
#                            is linked into executables only)
#   include/petrel/          their headers, included as in the source tree
#                            ("kv/kv_worker.h", "proto/meta.pb.h")
#   lib/libpetrel_pslite.a   PS-Lite's API over it, Petrel::pslite, with its
#                            headers in include/ps/ (docs/pslite.md)
#   lib/cmake/Petrel/        PetrelConfig.cmake, its version file and the
#                            exported targets, for find_package(Petrel)
#   lib/pkgconfig/petrel.pc  for pkg-config (petrel-pslite.pc: PS-Lite's API)
#   share/doc/petrel/        docs and config examples
# Test and benchmark binaries are not installed. The systemd units and
# /etc/petrel are the "system" component, installed only when asked for
# (cmake --install B --component system) and by the Debian package
# (cmake/PetrelPackage.cmake), so that an install into a prefix never
# writes to /etc.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(PETREL_INSTALLED_BINARIES
    petrel-scheduler petrel-server petrel-worker petrel-launch
    petrel-datagen petrel-bench petrel-predict petrel-export petrelctl
    petrel-keygen)
install(TARGETS ${PETREL_INSTALLED_BINARIES}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# petrel-plot is a Python program (python3-matplotlib).
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/plot/petrel-plot
        DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

# The libraries the client library is made of, in the source tree's
# targets; their objects are archived once more into libpetrel.a (nothing
# is compiled twice). Position-independent, so that users may link the
# archive into shared objects too (the Python module does the same).
set(PETREL_CLIENT_PARTS
    petrel_proto petrel_base petrel_build_info petrel_huge_page_memory
    petrel_row_index petrel_shard_pool petrel_cpu_affinity petrel_security
    petrel_van petrel_cluster petrel_store petrel_node petrel_kv)
set(PETREL_NODE_FLAGS_PARTS petrel_node_flags petrel_flag_check petrel_cli)
foreach(part IN LISTS PETREL_CLIENT_PARTS PETREL_NODE_FLAGS_PARTS)
  set_target_properties(${part} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endforeach()

set(_petrel_include_dir ${CMAKE_INSTALL_INCLUDEDIR}/petrel)

add_library(petrel_client STATIC)
foreach(part IN LISTS PETREL_CLIENT_PARTS)
  target_sources(petrel_client PRIVATE $<TARGET_OBJECTS:${part}>)
endforeach()
# The external libraries of every part, public ones and private ones alike
# (a static archive's users link them all).
# ZeroMQ and glog come from pkg-config; PetrelConfig.cmake makes targets of
# its own for them (PkgConfig::PetrelZMQ, PkgConfig::PetrelGLOG), so that a
# user's own pkg_check_modules(ZMQ ...) does not meet ours.
target_link_libraries(petrel_client INTERFACE
  $<BUILD_INTERFACE:PkgConfig::ZMQ> $<INSTALL_INTERFACE:PkgConfig::PetrelZMQ>
  $<BUILD_INTERFACE:PkgConfig::GLOG> $<INSTALL_INTERFACE:PkgConfig::PetrelGLOG>
  protobuf::libprotobuf Threads::Threads
  absl::btree absl::flat_hash_map absl::flat_hash_set absl::int128
  absl::span absl::status absl::statusor absl::str_format absl::strings
  absl::synchronization absl::time
  # base/metrics: prometheus-cpp and the civetweb the HTTP endpoint uses
  # directly (PetrelConfig.cmake finds them: find_dependency).
  prometheus-cpp::core prometheus-cpp::pull civetweb::civetweb-cpp)
target_include_directories(petrel_client INTERFACE
  $<INSTALL_INTERFACE:${_petrel_include_dir}>)
target_compile_features(petrel_client INTERFACE cxx_std_17)
set_target_properties(petrel_client PROPERTIES
  OUTPUT_NAME petrel EXPORT_NAME petrel
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)

add_library(petrel_client_node_flags STATIC)
foreach(part IN LISTS PETREL_NODE_FLAGS_PARTS)
  target_sources(petrel_client_node_flags PRIVATE $<TARGET_OBJECTS:${part}>)
endforeach()
target_link_libraries(petrel_client_node_flags INTERFACE petrel_client gflags)
set_target_properties(petrel_client_node_flags PROPERTIES
  OUTPUT_NAME petrel_node_flags EXPORT_NAME node_flags
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)

# PS-Lite's API (docs/pslite.md): libpetrel_pslite.a holds the layer and the
# scheduler it runs in a program started with DMLC_ROLE=scheduler, over
# libpetrel.a; its headers go to include/ps/ ("ps/ps.h").
set(PETREL_PSLITE_PARTS petrel_pslite petrel_scheduler petrel_secret_compare)
add_library(petrel_client_pslite STATIC)
foreach(part IN LISTS PETREL_PSLITE_PARTS)
  set_target_properties(${part} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_sources(petrel_client_pslite PRIVATE $<TARGET_OBJECTS:${part}>)
endforeach()
target_link_libraries(petrel_client_pslite INTERFACE petrel_client)
target_include_directories(petrel_client_pslite INTERFACE
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(petrel_client_pslite PROPERTIES
  OUTPUT_NAME petrel_pslite EXPORT_NAME pslite
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/pslite/include/ps
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)

install(TARGETS petrel_client petrel_client_node_flags petrel_client_pslite
        EXPORT PetrelTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)

# Headers: every header the parts list (petrel_cc_library's HDRS), at its
# path in the source tree, plus the generated ones.
foreach(part IN LISTS PETREL_CLIENT_PARTS PETREL_NODE_FLAGS_PARTS)
  get_target_property(_sources ${part} SOURCES)
  get_target_property(_source_dir ${part} SOURCE_DIR)
  foreach(src IN LISTS _sources)
    # Generated headers (proto/*.pb.h) are installed below.
    string(FIND "${src}" "${PROJECT_BINARY_DIR}/" _in_build_dir)
    if(NOT src MATCHES "\\.h$" OR _in_build_dir EQUAL 0)
      continue()
    endif()
    if(NOT IS_ABSOLUTE ${src})
      set(src ${_source_dir}/${src})
    endif()
    file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${src})
    get_filename_component(_rel_dir ${_rel} DIRECTORY)
    install(FILES ${src} DESTINATION ${_petrel_include_dir}/${_rel_dir}
            COMPONENT dev)
  endforeach()
endforeach()
# Headers that moved out of van/ (node start-up to node/, transport security
# to security/, the Postoffice, Customer and maps to cluster/) stay includable
# at their old paths: a one-line header there includes the new one, so
# programs written against earlier releases build.
foreach(_moved IN ITEMS node/node_runtime.h node/node_flags.h node/node_daemon.h
                        security/curve_keys.h security/authorized_keys.h
                        cluster/postoffice.h cluster/customer.h
                        cluster/simple_app.h cluster/key_range_map.h
                        cluster/replica_map.h cluster/map_hold.h
                        cluster/scheduler_watch.h)
  get_filename_component(_name ${_moved} NAME)
  set(_forward ${PROJECT_BINARY_DIR}/compat/van/${_name})
  file(WRITE ${_forward}
       "// Moved to ${_moved}; this path is kept for earlier programs.\n"
       "#include \"${_moved}\"\n")
  install(FILES ${_forward} DESTINATION ${_petrel_include_dir}/van COMPONENT dev)
endforeach()
# status_macros.h belongs to the header-only petrel_status_macros.
install(FILES ${PROJECT_SOURCE_DIR}/base/status_macros.h
        DESTINATION ${_petrel_include_dir}/base COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/base/build_info_values.h
        DESTINATION ${_petrel_include_dir}/base COMPONENT dev)
install(DIRECTORY ${PROJECT_BINARY_DIR}/proto/
        DESTINATION ${_petrel_include_dir}/proto COMPONENT dev
        FILES_MATCHING PATTERN "*.pb.h" PATTERN "CMakeFiles" EXCLUDE)

# find_package(Petrel): targets Petrel::petrel and Petrel::node_flags.
set(_petrel_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Petrel)
install(EXPORT PetrelTargets NAMESPACE Petrel::
        DESTINATION ${_petrel_cmake_dir} COMPONENT dev)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/PetrelConfig.cmake.in
  ${PROJECT_BINARY_DIR}/PetrelConfig.cmake
  INSTALL_DESTINATION ${_petrel_cmake_dir})
# Before 1.0 a minor version may change the API: 0.1 does not satisfy 0.2.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_petrel_compat SameMinorVersion)
else()
  set(_petrel_compat SameMajorVersion)
endif()
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/PetrelConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${_petrel_compat})
install(FILES ${PROJECT_BINARY_DIR}/PetrelConfig.cmake
              ${PROJECT_BINARY_DIR}/PetrelConfigVersion.cmake
        DESTINATION ${_petrel_cmake_dir} COMPONENT dev)

# pkg-config: one module, both archives (the node flags archive adds
# nothing to a program that does not use it). Dependencies go in Requires,
# not Requires.private: the archives need them at link time. civetweb
# (used directly by base/metrics_http_server.cc) has no pkg-config module,
# so its libraries are named in Libs.
file(RELATIVE_PATH PETREL_PC_TO_PREFIX
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" PETREL_PC_TO_PREFIX "${PETREL_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/petrel.pc.in
               ${PROJECT_BINARY_DIR}/petrel.pc @ONLY)
configure_file(${PROJECT_SOURCE_DIR}/cmake/petrel-pslite.pc.in
               ${PROJECT_BINARY_DIR}/petrel-pslite.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/petrel.pc
              ${PROJECT_BINARY_DIR}/petrel-pslite.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

install(FILES ${PROJECT_SOURCE_DIR}/README.md
              ${PROJECT_SOURCE_DIR}/docs/install.md
              ${PROJECT_SOURCE_DIR}/docs/configuration.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/cpp
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT dev)
# Job configs, and the service configuration as the package ships it (the
# system component installs the same files into etc/petrel).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/examples/
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/jobs COMPONENT runtime)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/etc/petrel/
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/etc COMPONENT runtime)

include(PetrelSystemFiles)

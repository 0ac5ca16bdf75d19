# The Debian package: `cpack -G DEB` in a configured and built tree writes
# petrel_<version>_<arch>.deb. One package holds every install component
# (runtime: binaries and docs; dev: library, headers, CMake and pkg-config
# files; system: systemd units and /etc/petrel; the Python module when it
# was built). deploy/debian/ holds its maintainer scripts: postinst makes
# the petrel system user; prerm stops the services on removal; postrm
# removes the user and its state on purge. Depends come from
# dpkg-shlibdeps (the shared libraries the binaries link) plus adduser.
set(CPACK_PACKAGE_NAME petrel)
set(CPACK_PACKAGE_VENDOR "Petrel")
set(CPACK_PACKAGE_CONTACT "Petrel maintainers <petrel@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Parameter server for distributed training (scheduler, server, worker)")
set(CPACK_PACKAGE_DESCRIPTION
    "Petrel is a parameter server in the style of PS-Lite: petrel-scheduler \
admits the nodes of a job, petrel-server holds sharded key-value \
parameters and workers push and pull them. This package holds the \
daemons and tools, systemd units for the scheduler and servers (configured \
in /etc/petrel), and the C++ client library with its headers, CMake \
package and pkg-config file.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_SOURCE_IGNORE_FILES "/build.*/" "/\\\\.git/")

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
# Unspecified: install() rules that name no component still reach the
# package.
set(CPACK_COMPONENTS_ALL runtime dev system python Unspecified)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# petrel-plot draws the progress CSV with matplotlib.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-matplotlib")
# The headers' dependencies, for programs built against the library.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "libzmq3-dev, libprotobuf-dev, prometheus-cpp-dev, libabsl-dev, libgoogle-glog-dev, libgflags-dev, pkg-config, python3-numpy")
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)

set(PETREL_SYSCONF_DIR /etc/petrel)
configure_file(${PROJECT_SOURCE_DIR}/deploy/debian/conffiles.in
               ${PROJECT_BINARY_DIR}/debian/conffiles @ONLY)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_BINARY_DIR}/debian/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)

# The "system" install component: the systemd units and the configuration
# they read. Where they go depends on the prefix the install is for, which
# is known only when installing (cmake --install --prefix, cpack), so
# cmake/PetrelInstallSystemFiles.cmake runs then:
#   prefix /usr (the Debian package):  /usr/lib/systemd/system/*.service,
#                                      /etc/petrel/*.conf
#   any other prefix P:                P/lib/systemd/system/*.service,
#                                      P/etc/petrel/*.conf
# (as GNUInstallDirs places sysconfdir), and the units' ExecStart and
# EnvironmentFile lines name P's binaries and configuration. An install
# into a private prefix never writes to /etc.
install(CODE "
  set(PETREL_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
  set(PETREL_BINARY_DIR \"${PROJECT_BINARY_DIR}\")
  set(PETREL_INSTALL_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(PETREL_INSTALL_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/PetrelInstallSystemFiles.cmake\")
" COMPONENT system)

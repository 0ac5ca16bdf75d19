# Runs at install time (see PetrelSystemFiles.cmake): configures the units
# of deploy/systemd/ for CMAKE_INSTALL_PREFIX and installs them with the
# example configuration of deploy/etc/petrel/. file(INSTALL) adds DESTDIR
# (cpack installs with DESTDIR set and the prefix /usr).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(PETREL_SYSCONF_DIR /etc/petrel)
else()
  set(PETREL_SYSCONF_DIR ${CMAKE_INSTALL_PREFIX}/etc/petrel)
endif()
set(PETREL_BIN_DIR ${CMAKE_INSTALL_PREFIX}/${PETREL_INSTALL_BINDIR})
set(PETREL_DOC_DIR ${CMAKE_INSTALL_PREFIX}/${PETREL_INSTALL_DOCDIR})
set(_unit_dir ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)

string(MD5 _key "${CMAKE_INSTALL_PREFIX}")
set(_staging ${PETREL_BINARY_DIR}/systemd-units/${_key})
set(_units)
foreach(unit petrel-scheduler.service petrel-server@.service
             petrel-worker@.service)
  configure_file(${PETREL_SOURCE_DIR}/deploy/systemd/${unit}.in
                 ${_staging}/${unit} @ONLY)
  list(APPEND _units ${_staging}/${unit})
endforeach()
file(INSTALL ${_units} DESTINATION ${_unit_dir}
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL ${PETREL_SOURCE_DIR}/deploy/etc/petrel/
     DESTINATION ${PETREL_SYSCONF_DIR}
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ
     FILES_MATCHING PATTERN "*.conf")

# Resolves PETREL_BUILD_PYTHON (AUTO|ON|OFF) into PETREL_HAVE_PYTHON: the
# `petrel` Python extension (python/) needs a Python 3 interpreter with its
# development files and pybind11 (Debian: python3-dev, python3-pybind11).
# Pass -DPython3_EXECUTABLE=/usr/bin/python3 to pick the interpreter whose
# packages (numpy, pytest, torch) the tests use; otherwise the first
# python3 on PATH is taken.
set(PETREL_HAVE_PYTHON OFF)
string(TOUPPER "${PETREL_BUILD_PYTHON}" _petrel_python_mode)
if(NOT _petrel_python_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "PETREL_BUILD_PYTHON must be AUTO, ON or OFF, not '${PETREL_BUILD_PYTHON}'")
endif()

if(_petrel_python_mode STREQUAL "OFF")
  set(_petrel_python_why "PETREL_BUILD_PYTHON=OFF")
else()
  find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
  if(Python3_FOUND)
    find_package(pybind11 CONFIG QUIET)
  endif()
  if(Python3_FOUND AND pybind11_FOUND)
    set(PETREL_HAVE_PYTHON ON)
    set(_petrel_python_why
        "Python ${Python3_VERSION} at ${Python3_EXECUTABLE}, pybind11 ${pybind11_VERSION}")
  else()
    if(NOT Python3_FOUND)
      set(_petrel_python_why "no Python 3 interpreter with development files (python3-dev)")
    else()
      set(_petrel_python_why "no pybind11 (python3-pybind11) for ${Python3_EXECUTABLE}")
    endif()
    if(_petrel_python_mode STREQUAL "ON")
      message(FATAL_ERROR "PETREL_BUILD_PYTHON=ON but ${_petrel_python_why}")
    endif()
  endif()
endif()

if(PETREL_HAVE_PYTHON)
  message(STATUS "Petrel Python: ON (${_petrel_python_why})")
else()
  message(STATUS "Petrel Python: OFF (${_petrel_python_why}; the python/ tests are skipped)")
endif()

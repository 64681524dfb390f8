# SPDX-License-Identifier: Apache-2.0
# FindHiredis — hiredis (Debian: libhiredis-dev).  Defines Hiredis::Hiredis.
find_path(Hiredis_INCLUDE_DIR hiredis/hiredis.h)
find_library(Hiredis_LIBRARY NAMES hiredis)
# Hiredis_SONAME_VERSION: what follows "libhiredis.so." in the soname of the version found (its headers'
# HIREDIS_SONAME; 0.14, 1.1.0), which is also its Debian runtime package's suffix (libhiredis0.14).
if(Hiredis_INCLUDE_DIR AND EXISTS "${Hiredis_INCLUDE_DIR}/hiredis/hiredis.h")
  file(STRINGS "${Hiredis_INCLUDE_DIR}/hiredis/hiredis.h" _kc_hiredis_soname REGEX "^#define HIREDIS_SONAME ")
  string(REGEX REPLACE "^#define HIREDIS_SONAME +([0-9.]+).*" "\\1" Hiredis_SONAME_VERSION "${_kc_hiredis_soname}")
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Hiredis REQUIRED_VARS Hiredis_LIBRARY Hiredis_INCLUDE_DIR)
if(Hiredis_FOUND AND NOT TARGET Hiredis::Hiredis)
  add_library(Hiredis::Hiredis UNKNOWN IMPORTED)
  set_target_properties(Hiredis::Hiredis PROPERTIES IMPORTED_LOCATION "${Hiredis_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${Hiredis_INCLUDE_DIR}")
endif()
mark_as_advanced(Hiredis_INCLUDE_DIR Hiredis_LIBRARY)

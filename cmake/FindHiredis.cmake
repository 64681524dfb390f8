# SPDX-License-Identifier: Apache-2.0
# FindHiredis — hiredis (Debian: libhiredis-dev).  Defines Hiredis::Hiredis.
find_path(Hiredis_INCLUDE_DIR hiredis/hiredis.h)
find_library(Hiredis_LIBRARY NAMES hiredis)
# Hiredis_SONAME_VERSION: what follows "libhiredis.so." in the soname of the version found, by the rule
# store/redis_lib.c follows: its headers' HIREDIS_SONAME (0.14, 1.1.0), else MAJOR.MINOR (before 0.14).
# When it is a plain version, it is also its Debian runtime package's suffix (libhiredis0.14).
if(Hiredis_INCLUDE_DIR AND EXISTS "${Hiredis_INCLUDE_DIR}/hiredis/hiredis.h")
  file(STRINGS "${Hiredis_INCLUDE_DIR}/hiredis/hiredis.h" _kc_hiredis_defs REGEX "^#define HIREDIS_(SONAME|MAJOR|MINOR) ")
  foreach(_kc_def IN LISTS _kc_hiredis_defs)
    if(_kc_def MATCHES "^#define HIREDIS_(SONAME|MAJOR|MINOR) +([^ \t]+)")
      set(_kc_hiredis_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  if(DEFINED _kc_hiredis_SONAME)
    set(Hiredis_SONAME_VERSION "${_kc_hiredis_SONAME}")
  elseif(DEFINED _kc_hiredis_MAJOR AND DEFINED _kc_hiredis_MINOR)
    set(Hiredis_SONAME_VERSION "${_kc_hiredis_MAJOR}.${_kc_hiredis_MINOR}")
  endif()
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Hiredis REQUIRED_VARS Hiredis_LIBRARY Hiredis_INCLUDE_DIR)
if(Hiredis_FOUND AND NOT TARGET Hiredis::Hiredis)
  add_library(Hiredis::Hiredis UNKNOWN IMPORTED)
  set_target_properties(Hiredis::Hiredis PROPERTIES IMPORTED_LOCATION "${Hiredis_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${Hiredis_INCLUDE_DIR}")
endif()
mark_as_advanced(Hiredis_INCLUDE_DIR Hiredis_LIBRARY)

# SPDX-License-Identifier: Apache-2.0
# FindCMocka — cmocka unit-test framework (Debian: libcmocka-dev).  Defines CMocka::CMocka.
find_path(CMocka_INCLUDE_DIR cmocka.h)
find_library(CMocka_LIBRARY NAMES cmocka)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CMocka REQUIRED_VARS CMocka_LIBRARY CMocka_INCLUDE_DIR)
if(CMocka_FOUND AND NOT TARGET CMocka::CMocka)
  add_library(CMocka::CMocka UNKNOWN IMPORTED)
  set_target_properties(CMocka::CMocka PROPERTIES IMPORTED_LOCATION "${CMocka_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${CMocka_INCLUDE_DIR}")
endif()
mark_as_advanced(CMocka_INCLUDE_DIR CMocka_LIBRARY)

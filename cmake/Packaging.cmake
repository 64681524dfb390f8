# SPDX-License-Identifier: Apache-2.0
# Packaging.cmake — CPack's Debian packages, one per install component (the top CMakeLists.txt and
# every install rule name theirs):
#   lib  -> libkcacheN    (N = the soname's number, SOVERSION = the major version): the shared library
#   dev  -> libkcache-dev  headers, libkcache.a, the .so link, the CMake package, kcache.pc,
#                          libkcache(3), the CUDA driver double; depends on libkcacheN of the same version
#   tool -> kcache         the kcache tool, kcache(1), bash and zsh completions; depends on libkcacheN of
#                          the same version, so the tool and the runtimes on a machine read and write
#                          the same formats (the tool itself links the library statically)
# Versions come from include/kcache/version.h (PROJECT_VERSION); the libraries' own dependencies
# from dpkg-shlibdeps.  Build them: configure with -DCMAKE_INSTALL_PREFIX=/usr (Debian's multiarch lib
# folder), build, then `cpack -G DEB` in the build folder (docs/packaging.md).  Each description's
# first line is the synopsis (no CPACK_PACKAGE_DESCRIPTION_SUMMARY, which CPack would put before it).
# Included once, last, by the top CMakeLists.txt; its install rules are the packages' own files
# (copyright, changelog) and the compression of kcache's manual pages, which must run after the rest.
set(KCACHE_PACKAGE_MAINTAINER "kcache maintainers <maintainers@kcache.invalid>"
    CACHE STRING "The Maintainer field of the .deb packages")
set(_kc_lib_pkg libkcache${PROJECT_VERSION_MAJOR})

# /usr/share/doc/PACKAGE/copyright (machine-readable) and changelog.gz in each package (Debian policy
# 12.5, 12.7): the changelog of a native package, pointing to the project's CHANGELOG.md.
string(TIMESTAMP _kc_year "%Y" UTC)
string(TIMESTAMP _kc_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(_kc_copyright "${CMAKE_CURRENT_BINARY_DIR}/copyright")
file(WRITE "${_kc_copyright}"
  "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
  "Upstream-Name: kcache\n\n"
  "Files: *\nCopyright: ${_kc_year} the kcache authors\nLicense: Apache-2.0\n"
  " On Debian systems, the full text of the Apache License, Version 2.0 can be found in\n"
  " /usr/share/common-licenses/Apache-2.0.\n")
foreach(_kc_pair lib:${_kc_lib_pkg} dev:libkcache-dev tool:kcache)
  string(REPLACE ":" ";" _kc_pair "${_kc_pair}")
  list(GET _kc_pair 0 _kc_comp)
  list(GET _kc_pair 1 _kc_pkg)
  set(_kc_changelog "${CMAKE_CURRENT_BINARY_DIR}/changelog-${_kc_pkg}")
  file(WRITE "${_kc_changelog}" "${_kc_pkg} (${PROJECT_VERSION}) unstable; urgency=medium\n\n"
    "  * kcache ${PROJECT_VERSION}: see CHANGELOG.md in the sources.\n\n"
    " -- ${KCACHE_PACKAGE_MAINTAINER}  ${_kc_date}\n")
  execute_process(COMMAND gzip -9nf "${_kc_changelog}") # -n: no name or time stamp inside
  install(FILES "${_kc_copyright}" DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_kc_pkg} COMPONENT ${_kc_comp})
  install(FILES "${_kc_changelog}.gz" DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${_kc_pkg}
          RENAME changelog.gz COMPONENT ${_kc_comp})
  # kcache's manual pages compressed (policy 12.1), whichever rule installed them: this one runs last.
  install(CODE "file(GLOB _kc_pages \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_MANDIR}/man*/*kcache*.[0-9]\")
    foreach(_kc_page IN LISTS _kc_pages)
      execute_process(COMMAND gzip -9nf \"\${_kc_page}\" COMMAND_ERROR_IS_FATAL ANY)
    endforeach()" COMPONENT ${_kc_comp})
endforeach()
# The ldconfig trigger of a package with a shared library (CPack's postinst and postrm call ldconfig
# too, which lintian only warns about).
file(WRITE "${CMAKE_CURRENT_BINARY_DIR}/triggers" "activate-noawait ldconfig\n")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kcache)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the kcache authors")
set(CPACK_PACKAGE_CONTACT "${KCACHE_PACKAGE_MAINTAINER}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_STRIP_FILES TRUE)
set(CPACK_COMPONENTS_ALL lib dev tool) # nothing else is packaged: the tests install nothing
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # NAME_VERSION_ARCH.deb
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_LIB_PACKAGE_NAME ${_kc_lib_pkg})
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_LIB_PACKAGE_CONTROL_EXTRA "${CMAKE_CURRENT_BINARY_DIR}/triggers")
# hiredis is opened by the first redis:// remote, not linked (store/redis_lib.c), so dpkg-shlibdeps does
# not see it: the runtime package of the version built against is recommended instead.
if(KCACHE_HAVE_REDIS AND Hiredis_SONAME_VERSION MATCHES "^[0-9.]+$")
  set(CPACK_DEBIAN_LIB_PACKAGE_RECOMMENDS "libhiredis${Hiredis_SONAME_VERSION}")
endif()
# The shlibs file of each package with a shared library (CPack has no per-package switch for it):
# libkcache0 and libkcache-dev (the driver double); CPack adds ldconfig to their postinst and postrm.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_COMPONENT_LIB_DESCRIPTION "cache of compiled GPU kernels (kcache) - shared library
libkcache keeps the results of NVRTC compiles and CUDA driver loads in a local
directory cache and an optional Redis tier, keyed by everything that changes
the compiled code.  This package holds the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libkcache-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_CONTROL_EXTRA "${CMAKE_CURRENT_BINARY_DIR}/triggers")
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${_kc_lib_pkg} (= ${PROJECT_VERSION})")
# Only a static link (kcache::kcache_static, pkg-config --static) needs these.
list(JOIN KCACHE_STATIC_DEBS ", " CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS)
set(CPACK_COMPONENT_DEV_DESCRIPTION "cache of compiled GPU kernels (kcache) - development files
Headers, the static library, the CMake package (find_package(kcache)), the
pkg-config file, libkcache(3) and the CUDA driver double for tests on machines
without a GPU.")

set(CPACK_DEBIAN_TOOL_PACKAGE_NAME kcache)
set(CPACK_DEBIAN_TOOL_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_TOOL_PACKAGE_DEPENDS "${_kc_lib_pkg} (= ${PROJECT_VERSION})")
set(CPACK_COMPONENT_TOOL_DESCRIPTION "cache of compiled GPU kernels (kcache) - command line tool
kcache shows, checks, prewarms, exports and imports kernel caches, with its
manual page kcache(1) and bash and zsh completions.")
include(CPack)

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/version.h — the version of the headers a program was compiled against.
 *
 * The one source of the version: the top CMakeLists.txt reads these three numbers to set the
 * project's version (the shared library's soname, the CMake package's and pkg-config's
 * versions), so they cannot drift apart.  A program compares what it was built with
 * (KC_VERSION_NUMBER, at compile time) with the library it runs against (kc_version_number(),
 * in kcache/common.h).  Versions 0.x promise nothing across minors; from 1.0 on, a minor adds and
 * never breaks (structs grow behind their version field and _INIT macros).
 */
#ifndef KCACHE_VERSION_H
#define KCACHE_VERSION_H

#define KC_VERSION_MAJOR 0
#define KC_VERSION_MINOR 1
#define KC_VERSION_PATCH 0

/** "MAJOR.MINOR.PATCH", as kc_version() returns it. */
#define KC_VERSION_STRING "0.1.0"

/** One comparable number: MAJOR * 10000 + MINOR * 100 + PATCH (0.1.0 is 100). */
#define KC_VERSION_NUMBER (KC_VERSION_MAJOR * 10000 + KC_VERSION_MINOR * 100 + KC_VERSION_PATCH)

/** Whether these headers are at least version major.minor.patch (for #if). */
#define KC_VERSION_AT_LEAST(major, minor, patch) (KC_VERSION_NUMBER >= (major)*10000 + (minor)*100 + (patch))

#endif

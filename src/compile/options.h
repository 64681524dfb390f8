/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compile/options.h — what compile/nvrtc.c asks of options.c beyond the public compile.h
 * functions (kc_options_normalize, kc_kernel_cacheable): the include check made before a
 * compile, and the reading of NVRTC's "cannot open source file" so that the error can say
 * how to provide the header.
 *
 * Callers: compile/nvrtc.c (kc_kernel_src_arrays_ok_: also graph).  Must not: load NVRTC.
 */
#ifndef KC_COMPILE_OPTIONS_H
#define KC_COMPILE_OPTIONS_H

#include <stddef.h>

#include "kcache/compile.h"

/**
 * KC_OK, or KC_ECOMPILE naming the header when the kernel's source or one of its listed
 * headers includes (or tests with __has_include) a file NVRTC would read from disk although
 * it is in no key: an absolute path that is not a listed header's name, or — for a kernel
 * with the toolkit's headers — a path with a ".." component, which could leave the
 * toolkit's include folder ([Note: what NVRTC may read] in options.c).
 */
int kc_options_check_includes(const kc_kernel_src *k);

/** KC_OK, or KC_EINVAL naming the field (`func` first): headers NULL with nheaders > 0, a header's
 *  name or source NULL, options NULL with noptions > 0, an option NULL.  Every public entry that
 *  takes a kc_kernel_src asks this before reading its arrays (callers: nvrtc.c, options.c, graph). */
int kc_kernel_src_arrays_ok_(const char *func, const kc_kernel_src *k);

/** 1 when k's texts (source, listed headers, options, entry name) may expand __BASE_FILE__ or
 *  __FILE_NAME__ — as written or pasted ([Note: cacheability]'s scan): a precompiled header made
 *  from another file would keep that file's name, so such a kernel gets none (pch.c). */
int kc_kernel_names_main_file(const kc_kernel_src *k);

/**
 * Whether NVRTC's log says a header could not be found ("could not open source file "X""
 * or "cannot open source file "X""): 1 with the header's name in `name` and the place that
 * includes it ("k.cu:3", "" when the log does not say) in `from`, else 0.
 */
int kc_options_missing_header(const char *log, char *name, size_t name_size, char *from, size_t from_size);

#endif

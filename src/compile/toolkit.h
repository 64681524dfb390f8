/*
 * compile/toolkit.h — the CUDA toolkit's headers for kernels that ask for them
 * (KC_KERNEL_TOOLKIT_HEADERS): where they are, what NVRTC is given to reach them, and the
 * digest that identifies them in the key.
 *
 * Callers: compile/nvrtc.c (the inputs of a compile), graph/graph_key.c (the digest), the
 * public kc_toolkit_* functions (compile.h).  Must not: load NVRTC.
 */
#ifndef KC_COMPILE_TOOLKIT_H
#define KC_COMPILE_TOOLKIT_H

#include "kcache/compile.h"

/** Longest program name kcache gives NVRTC (see kc_toolkit_inputs). */
#define KC_TOOLKIT_NAME_MAX 512

/** What a compile with the toolkit's headers adds to NVRTC's inputs. */
typedef struct kc_toolkit_inputs {
    char include[2][4096 + 3];    /**< "-I<toolkit include>", "-I<toolkit include>/cccl" */
    size_t ninclude;
    const kc_header_src *shims;   /**< the standard headers NVRTC lacks, in memory */
    size_t nshims;
    char program[KC_TOOLKIT_NAME_MAX]; /**< the program's name: "/dev/null/<file>" */
    char prefix[KC_TOOLKIT_NAME_MAX];  /**< put before the source: #line 1 "<file>" */
} kc_toolkit_inputs;

/**
 * Fill `in` for a kernel named `file` (its diagnostics name; NULL: "kernel.cu").
 * KC_ENONVRTC (with the reason) when the toolkit's headers are not found.
 *
 * [Note: toolkit includes] NVRTC is given -I for the toolkit's include folder and its cccl
 * folder, and NOT -no-source-include, because the toolkit's own headers include siblings
 * by quoted name (cooperative_groups/details/driver_abi.h: #include "info.h").  So that the
 * source's own folder is never searched — for a relative name that is the working
 * directory, whose files are in no key — the program is named "/dev/null/<file>" (a path
 * under a character device: nothing can ever be found there), and "#line 1 \"<file>\""
 * before the source keeps __FILE__ and diagnostics as the kernel's own name.
 */
int kc_toolkit_inputs_for(const char *file, kc_toolkit_inputs *in);

/**
 * The digest (32 hex) of the toolkit's headers as a kernel sees them: every regular file
 * under the include folder by relative path and contents, and kcache's in-memory standard
 * headers.  Memoised per process; with `memo_dir` (a folder kcache owns), also across
 * processes, under a signature of every file's size, times and inode, so that a toolkit
 * changed in place is hashed again and an unchanged one is not.  KC_ENONVRTC without one.
 */
int kc_toolkit_digest(const char *memo_dir, char out[33]);

/** The in-memory standard headers (stdint.h, type_traits, …): `*n` of them, static. */
const kc_header_src *kc_toolkit_shims(size_t *n);

#endif

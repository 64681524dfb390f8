/*
 * kcache/compile.h — compiling CUDA C++ kernels with NVRTC, opened at run time.
 *
 * NVRTC is found with dlopen (KCACHE_NVRTC, then libnvrtc.so.<major> on the loader's path,
 * then the CUDA Toolkit's own library folder), so one build of kcache runs on a CPU-only
 * build host and on any GPU host and links no CUDA library.  A kernel compiles for one
 * target: a cubin for an exact architecture ("sm_80", "sm_90", "sm_90a") or PTX for a
 * virtual one ("compute_80"), named as kcache/target.h parses them.  NVRTC's own cache
 * (12.9+) is turned off with -no-cache, so a miss is a real, measured compile.  Safe to
 * call from many threads at once.
 */
#ifndef KCACHE_COMPILE_H
#define KCACHE_COMPILE_H

#include "common.h"
#include "target.h" /* not used here: kc_target and kc_target_parse lived here before */

#ifdef __cplusplus
extern "C" {
#endif

/** A header passed in memory with a kernel: #include "name" finds it. Borrowed. */
typedef struct kc_header_src {
    const char *name;
    const char *source;
} kc_header_src;

/** One kernel to compile.  Everything is borrowed for the duration of the call. */
typedef struct kc_kernel_src {
    const char *file;               /**< Name used in diagnostics ("add.cu"); may be NULL. */
    const char *source;             /**< CUDA C++ source. */
    const char *name;               /**< Entry: an extern "C" name or a C++ name expression ("f<float>"). */
    const kc_header_src *headers;
    size_t nheaders;
    const char *const *options;     /**< NVRTC options, without any -arch. */
    size_t noptions;
    const char *include_digest;     /**< No longer accepted (must be NULL): kcache trusts no caller's digest of a folder. */
    unsigned flags;                 /**< KC_KERNEL_* */
} kc_kernel_src;

/**
 * The kernel may include the CUDA toolkit's own headers (cuda_fp16.h, cuda_bf16.h,
 * cooperative_groups.h, cuda/std/…, the math headers) and the few standard headers NVRTC
 * lacks (stdint.h, math.h, assert.h, type_traits, …, served by kcache from memory).  The
 * toolkit's include tree is identified by a digest of its contents, which joins the key.
 */
#define KC_KERNEL_TOOLKIT_HEADERS 0x1u

/**
 * The identity (32 hex) of this host's toolkit headers as KC_KERNEL_TOOLKIT_HEADERS kernels
 * see them: a digest of every file under the toolkit's include folder (KCACHE_CUDA_INCLUDE,
 * else the toolkit kcache was built with) and of kcache's in-memory standard headers.
 * Computed once per process.  KC_ENONVRTC when the toolkit's headers are not found.
 */
KC_API int kc_toolkit_headers_id(char out[33]);

/** A compiled program: one image holding one or more kernels. */
typedef struct kc_compiled {
    unsigned char *image;   /**< cubin (ELF) or NUL-terminated PTX. */
    size_t len;             /**< Image length (PTX: without the NUL). */
    char *lowered_name;     /**< The symbol of the first (or only) name; == lowered_names[0]. */
    char **lowered_names;   /**< The symbol of each name expression, in order. */
    size_t nnames;
    char *log;              /**< NVRTC's log (warnings); "" when empty. */
    double seconds;         /**< Time spent in nvrtcCompileProgram. */
} kc_compiled;

/** KC_OK when NVRTC can be loaded, else KC_ENONVRTC with the reason. */
KC_API int kc_nvrtc_available(void);

/**
 * The toolchain identity, "nvrtc MAJOR.MINOR (FILE)" with the library's file name (its
 * build), or "" when NVRTC is unavailable.  Static storage.
 */
KC_API const char *kc_nvrtc_toolchain(void);

/**
 * Normalise a kernel's options for the key and the compile: leading "--" becomes "-",
 * "-opt value" pairs become "-opt=value", surrounding space is dropped, exact duplicates
 * go.  Architecture options are refused (the target is chosen by kcache), and so is an
 * include folder on disk unless `include_digest` is given.  The result is one string,
 * options separated by '\n', freed with kc_free.
 */
KC_API int kc_options_normalize(const kc_kernel_src *k, char **out);

/**
 * Whether a kernel can be cached: 0 and a static reason when its source or headers use
 * __DATE__, __TIME__ or __TIMESTAMP__ (outside comments and strings), else 1.
 */
KC_API int kc_kernel_cacheable(const kc_kernel_src *k, const char **reason);

/**
 * Compile one kernel for `target`.  KC_ECOMPILE with NVRTC's log (file and line) in
 * kc_error_last() when the source is rejected; KC_ENONVRTC without NVRTC.
 * `*out` is the caller's, freed with kc_compiled_free.
 */
KC_API int kc_compile_kernel(const kc_kernel_src *k, const char *target, kc_compiled **out);

/**
 * Compile one source for `target` with several entries at once (one NVRTC program, one
 * image): `names` are extern "C" names or C++ name expressions; lowered_names[i] is the
 * symbol of names[i].  k->name is ignored.
 */
KC_API int kc_compile_names(const kc_kernel_src *k, const char *const *names, size_t nnames, const char *target,
                            kc_compiled **out);

/** Free a compiled kernel; accepts NULL. */
KC_API void kc_compiled_free(kc_compiled *c);

#ifdef __cplusplus
}
#endif
#endif

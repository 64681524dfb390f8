/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/compile.h — compiling CUDA C++ kernels with NVRTC, opened at run time.
 *
 * NVRTC is opened with dlopen, only when a compile needs it: the library file is found and
 * identified by its build-id without loading it (kc_toolchain_*, below), then exactly that
 * file is loaded, so one build of kcache runs on a CPU-only build host and on any GPU host,
 * links no CUDA library, and a cache hit never loads the compiler.  A kernel compiles for one
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

/** A header passed in memory with a kernel: #include "name" finds it. Borrowed.  A fixed pair: it
 *  never grows. */
typedef struct kc_header_src {
    const char *name;
    const char *source;
} kc_header_src;

/** Initialiser of a kc_header_src (both NULL). */
#define KC_HEADER_SRC_INIT \
    { NULL, NULL }

/** Version of kc_kernel_src this build understands; a field added later comes with a new version. */
#define KC_KERNEL_SRC_VERSION 1

/**
 * One kernel to compile.  Everything is borrowed for the duration of the call.  Initialise it
 * with KC_KERNEL_SRC_INIT (or set `version` to KC_KERNEL_SRC_VERSION) and then set the fields:
 * kcache reads only the fields of the caller's version, and refuses a version it does not know
 * (0 included: a struct never initialised) with KC_EVERSION ([Note: versioned structs] in
 * src/common/api.h).
 */
typedef struct kc_kernel_src {
    unsigned version;   /**< KC_KERNEL_SRC_VERSION. */
    const char *file;   /**< Name used in diagnostics ("add.cu"); may be NULL. */
    const char *source; /**< CUDA C++ source. */
    const char *name;   /**< Entry: an extern "C" name or a C++ name expression ("f<float>"). */
    const kc_header_src *headers;
    size_t nheaders;
    const char *const *options; /**< NVRTC options, without any -arch. */
    size_t noptions;
    const char *include_digest; /**< No longer accepted (must be NULL): kcache trusts no caller's digest of a folder. */
    unsigned flags;             /**< KC_KERNEL_* */
} kc_kernel_src;

/** Initialiser of a kc_kernel_src: this version, every field NULL or 0.  Complete (every field named),
 *  so that a C or C++ caller built with -Wextra -Werror compiles whatever fields are added later. */
#define KC_KERNEL_SRC_INIT \
    { KC_KERNEL_SRC_VERSION, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, 0u }

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
    unsigned char *image; /**< cubin (ELF) or NUL-terminated PTX. */
    size_t len;           /**< Image length (PTX: without the NUL). */
    char *lowered_name;   /**< The symbol of the first (or only) name; == lowered_names[0]. */
    char **lowered_names; /**< The symbol of each name expression, in order. */
    size_t nnames;
    char *log;      /**< NVRTC's log (warnings); "" when empty. */
    double seconds; /**< Time spent in nvrtcCompileProgram. */
} kc_compiled;

/** KC_OK when NVRTC can be loaded, else KC_ENONVRTC with the reason. */
KC_API int kc_nvrtc_available(void);

/**
 * NVRTC as loaded, for people: "nvrtc MAJOR.MINOR (ID, PATH)" with the version NVRTC
 * reports and its identity and file (kc_toolchain_local), or "" when NVRTC is unavailable.
 * Loads NVRTC.  Keys hold the identity alone (kc_toolchain_local).  Static storage.
 */
KC_API const char *kc_nvrtc_toolchain(void);

/**
 * Check a kernel's options and give their key form.  NVRTC is given the options exactly as
 * written (in order, repeats kept); the key form is the same list, one option per line
 * ('\n'-terminated), with only spellings NVRTC provably reads the same made one: each
 * option trimmed of surrounding white space, and "-opt" "value" joined as "-opt=value" for
 * options NVRTC reads that way (--maxrregcount, -Xptxas, -include, ...; not -std, -D, -U).
 * Dashes are kept as written: "--std=c++17" and "-std=c++17" are two keys.  Refused with the
 * reason (KC_EINVAL): the target (-arch, --gpu-architecture, -code: kcache picks it, it is
 * the variant); an include folder (-I in any form, --include-path); -include/--pre-include
 * of anything but a header given in memory in `headers` (NVRTC would look in the working
 * directory first); options that read or write files or make no cubin/PTX (-time=FILE,
 * --fdevice-time-trace, the -pch family, -dlto, --optix-ir, -fdevice-syntax-only, -Xptxas
 * --options-file/-o/--gpu-name); and any `include_digest`.  Options NVRTC itself rejects are
 * left to NVRTC.  Does not load NVRTC or read files.  `*out` is freed with kc_free.
 */
KC_API int kc_options_normalize(const kc_kernel_src *k, char **out);

/**
 * Whether a kernel can be cached: 0 and a static reason when its compile may differ from run
 * to run or may read a file kcache cannot name, else 1.  That is when its source, headers,
 * options or entry name expression use __DATE__, __TIME__ or __TIMESTAMP__ in code (seen
 * through line splices; comments, strings and raw strings skipped), or hold identifiers
 * that token pasting could join into one of them (CAT(__TI, ME__)), or include a file by a
 * computed name (#include MACRO, __has_include(MACRO)), by an absolute path, or — with the
 * toolkit's headers — by a path with "..".  Conservative: when in doubt, 0 (a bypass costs a
 * compile; a stale hit would be a wrong kernel).
 */
KC_API int kc_kernel_cacheable(const kc_kernel_src *k, const char **reason);

/**
 * Compile one kernel for `target`.  KC_ECOMPILE with NVRTC's log (file and line) in
 * kc_error_last() when the source is rejected; KC_ENONVRTC without NVRTC.
 * `*out` is the caller's, freed with kc_compiled_free; NULL on failure.
 */
KC_API int kc_compile_kernel(const kc_kernel_src *k, const char *target, kc_compiled **out);

/**
 * Compile one source for `target` with several entries at once (one NVRTC program, one
 * image): `names` are extern "C" names or C++ name expressions; lowered_names[i] is the
 * symbol of names[i].  k->name is ignored.  `*out` as for kc_compile_kernel.
 */
KC_API int kc_compile_names(const kc_kernel_src *k, const char *const *names, size_t nnames, const char *target,
                            kc_compiled **out);

/** Free a compiled kernel; accepts NULL. */
KC_API void kc_compiled_free(kc_compiled *c);

/* ---- the toolchain's identity, read from its file without loading it ---- */

/** Room for a toolchain identity and its NUL ("build-id:" and up to 128 hex digits). */
#define KC_TOOLCHAIN_ID_MAX 144

/** An NVRTC build, as identified from its library file (no dlopen). */
typedef struct kc_toolchain {
    /** What keys hold: "build-id:<hex>" (the ELF's GNU build-id note), or, for a library
     *  without one, "xxh3-128:<32 hex>" (the hash of all its bytes).  Never its name or size. */
    char id[KC_TOOLCHAIN_ID_MAX];
    char path[4096];  /**< The file (KCACHE_NVRTC, or the one the search found); for people and dlopen. */
    char version[32]; /**< The version its file name carries ("13", "13.0.88"); "" when none.  For people only. */
    unsigned long long dev, ino, size; /**< The file as it was identified (stat), for memos. */
    long long mtime_ns, ctime_ns;
} kc_toolchain;

/**
 * The path of the NVRTC library this host would compile with, found without opening it:
 * KCACHE_NVRTC when set (a path, or a bare file name searched as below; when it names no
 * file there is no NVRTC — no fallback), else libnvrtc.so.13, .so.12, .so in
 * LD_LIBRARY_PATH, the toolkit's library folder, /usr/local/cuda/lib64, /etc/ld.so.cache
 * and the standard library folders.  Found once per process.  KC_ENONVRTC with the reason.
 */
KC_API int kc_toolchain_locate(char *out, size_t cap);

/**
 * Identify the NVRTC library at `path` without loading it: its GNU build-id note, read with
 * a few bounds-checked preads, or XXH3-128 of its bytes when it has none (memoised per
 * process and file).  KC_ECORRUPT (with the reason) for a file that is not a well-formed
 * 64-bit ELF shared library of this machine; never crashes on a hostile file.
 */
KC_API int kc_toolchain_identify(const char *path, kc_toolchain *out);

/** kc_toolchain_locate + kc_toolchain_identify, once per process.  KC_ENONVRTC with the reason. */
KC_API int kc_toolchain_local(kc_toolchain *out);

/** KC_OK when `id` is a well-formed toolchain identity (as kc_toolchain.id), else KC_EINVAL saying what one is. */
KC_API int kc_toolchain_id_check(const char *id);

/** The toolchain string an entry's META records: "nvrtc <id> (<path>)", the path shortened to fit `cap`. */
KC_API int kc_toolchain_meta(const kc_toolchain *t, char *out, size_t cap);

/** The identity in a META toolchain string written by kc_toolchain_meta: KC_OK, or KC_MISS when it holds none. */
KC_API int kc_toolchain_id_of_meta(const char *meta, char out[KC_TOOLCHAIN_ID_MAX]);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compile/pch.h — NVRTC precompiled headers for the compiles of one process ([Note: precompiled
 * headers] in pch.c): which compile creates a header set's PCH, which use it, and where the files live.
 *
 * Callers: compile/nvrtc.c (around each NVRTC compile; kc_pch_expect_), prewarm/prewarm.c
 * (kc_pch_burst_, kc_pch_announce_), tests (kc_pch_stats_, kc_pch_test_set_, kc_pch_sweep_).  Must not: change
 * what a compile produces: a compile that cannot use a PCH exactly as planned is compiled again
 * without one.
 */
#ifndef KC_COMPILE_PCH_H
#define KC_COMPILE_PCH_H

#include <stddef.h>
#include <stdint.h>

/** What one compile does about a PCH. */
enum { KC_PCH_NONE = 0, KC_PCH_CREATE = 1, KC_PCH_USE = 2 };

/** A compile's plan (kc_pch_plan_), handed back to kc_pch_done_. */
typedef struct kc_pch_plan {
    int mode;            /**< KC_PCH_NONE, KC_PCH_CREATE or KC_PCH_USE */
    void *entry;         /**< the header set's record (pch.c's) */
    char *text;          /**< the program's text for this mode (owned): the header prefix, then a #line */
    const char *opts[4]; /**< the options to add: the PCH file, messages on, verbose off, #line warning off */
    size_t nopts;
    char opt[4200]; /**< "--create-pch=<path>" or "--use-pch=<path>" */
    uint64_t t0;    /**< when the compile began (for the log) */
} kc_pch_plan;

/** What the program is: its source, its name, its options and its in-memory headers. */
typedef struct kc_pch_program {
    const char *source;    /**< the kernel's source, as written */
    const char *program;   /**< the name NVRTC is given */
    const char *line_name; /**< the name the source's lines carry (#line), NULL: `program` */
    const char *const *argv;
    size_t argc;
    const char *const *hnames, *const *hsrcs;
    size_t nhdr;
    int off; /**< no PCH: the texts may name the main file or the time (kc_kernel_names_main_file) */
} kc_pch_program;

/** Called once by nvrtc.c with NVRTC's library handle: finds the PCH functions (NVRTC >= 12.8). */
void kc_pch_load_(void *nvrtc_lib);

/** Decide what the compile of `p` does about a PCH (every compile calls it, then kc_pch_done_). */
void kc_pch_plan_(const kc_pch_program *p, kc_pch_plan *plan);

/**
 * The compile planned is over: `ok` (NVRTC compiled it), its PCH creation status (NVRTC's
 * nvrtcGetPCHCreateStatus; with `prog` the program, for the heap it wanted), `log` its log, from
 * which the PCH message is removed in place.  1: the result stands; 0: compile again without a PCH
 * (the PCH was not used as planned, or the compile failed: the log of a compile without one is the
 * one kcache keeps).
 */
int kc_pch_done_(kc_pch_plan *plan, int ok, void *prog, char *log);

/**
 * A caller begins (1) or ends (0) a burst of compiles — a prewarm — whose compiles it can name
 * (kc_pch_announce_): while one runs, a header set announced thrice or more makes its PCH at its
 * first compile, one announced once or twice makes none; a set not announced makes its PCH at its second
 * compile, as outside a burst.  Nests; the counts go when the last burst ends.
 */
void kc_pch_burst_(int begin);

/** For tests: PCH files kept now, their bytes, created and used so far, and the folder ("" before one). */
typedef struct kc_pch_stats {
    int on; /**< NVRTC is loaded, has PCH, and the setting is on */
    size_t files;
    uint64_t bytes;
    uint64_t created, used, fallbacks, retired;
    char dir[4096];
} kc_pch_stats;
void kc_pch_stats_(kc_pch_stats *out);

/** For tests: PCH on or off (-1: as it was), and whether a header set's first compile makes its PCH
 *  (0: its second, as always outside tests); the previous on. */
int kc_pch_test_set_(int on, int first);

/** pch_off.c, for pch.c: 1 when option `o` keeps PCH off (as NVRTC reads it: trimmed). */
int kc_pch_option_refused_(const char *o);

/** pch_off.c, for pch.c (under its lock): 1 when no file of the -I folders in argv names the main
 *  file or its time (__BASE_FILE__, __FILE_NAME__, __TIMESTAMP__), so a PCH may be made with them. */
int kc_pch_tree_clean_(const char *const *argv, size_t argc);

/** The same walk, done (once per set of folders) where a toolkit watch begins, before any watch of
 *  the process runs; nothing when the `pch` setting is off (pch_off.c; toolkit_direct.c). */
void kc_pch_prescan_(const char *const *argv, size_t argc);

/** 1 when `parent` may hold the process's PCH folder, resolved into `out` (PATH_MAX bytes; as given
 *  when 0): it and every folder above it owned by root or this user, none writable by others unless
 *  its sticky bit is set (pch_off.c). */
int kc_pch_parent_ok_(const char *parent, char *out);

/** Remove this process's PCH folder now (at exit; tests).  Later compiles make a new one. */
void kc_pch_cleanup_(void);

/** pch_dir.c, for pch.c: the folder `dir` just made, open and flock'd for the process's life (the
 *  fd); -1 when it cannot be (the folder then gone, or a sweep's, which removes it). */
int kc_pch_dir_lock_(const char *dir);
/** pch_dir.c: remove the files of `dir` (never following a link), then the folder. */
void kc_pch_remove_dir_(const char *dir);
/** pch_dir.c (pch.c's dir_make; tests): remove this user's PCH folders under `parent` whose process
 *  is gone — the pid of the name not alive here, and the folder's lock free (its owner holds it). */
void kc_pch_sweep_(const char *parent);

/** A burst's caller names the compiles it will make (kc_pch_announce_). */
typedef void kc_pch_announcer(void *ctx);

/**
 * Within a burst (kc_pch_burst_): `fn(ctx)` names the compiles the burst expects, one
 * kc_compile_expect_ (units.h) per compile.  It runs once, at the first compile that plans after
 * this (never before: a burst that compiles nothing pays nothing, not even NVRTC's load), on that
 * compile's thread, outside pch.c's lock, its errors set aside; compiles planning meanwhile wait for
 * it.  `fn` NULL withdraws ctx's, waiting while it runs: call it before ctx is gone.  0 when
 * registered; -1 when KC_PCH_ANNOUNCERS_MAX are (its sets are then not announced).  pch_burst.c.
 */
#define KC_PCH_ANNOUNCERS_MAX 8
int kc_pch_announce_(kc_pch_announcer *fn, void *ctx);

/** pch_burst.c, for kc_pch_plan_: run the announcers not run yet, and wait for those running. */
void kc_pch_announce_run_(void);

/** One compile the burst expects, of program `p` (nvrtc.c's kc_compile_expect_ makes it as its
 *  compile would): its header set's count (pch.c's material, compared whole), kept until the last
 *  burst ends; nothing outside a burst or for a program that gets no PCH. */
void kc_pch_expect_(const kc_pch_program *p);

#endif

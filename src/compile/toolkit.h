/* SPDX-License-Identifier: Apache-2.0 */
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
    char include[2][4096 + 3]; /**< "-I<toolkit include>", "-I<toolkit include>/cccl" */
    size_t ninclude;
    const kc_header_src *shims; /**< the standard headers NVRTC lacks, in memory */
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
 * changed in place is hashed again and an unchanged one is not.  The memo is read there when
 * present, and written (the folder created) only with `write_memo`: a read-only cache passes 0
 * and writes nothing, its processes hash when there is no memo.  KC_ENONVRTC without one.
 */
int kc_toolkit_digest(const char *memo_dir, int write_memo, char out[33]);

/** The memo file's reader (kc_toolkit_digest reads "<memo_dir>/<xxh64(root)>.toolkit" with it, once
 *  per process): 1 with the digest in `out` when `path` is a memo of the walk whose signature is
 *  `sig` ("kcache-toolkit 1\nsig <16 hex>\ndigest <32 hex>"), else 0.  Exposed for fuzz_toolkit. */
int kc_toolkit_memo_read_(const char *path, uint64_t sig, char out[33]);

/** 1 with the digest in `out` (may be NULL) when this process has verified it (kc_toolkit_digest). */
int kc_toolkit_digest_known(char out[33]);

/**
 * 1 when every file of the tree is still as this process's walk saw it (a walk again, ~2,000
 * stats), or when this process walked none; 0 when one changed.  [Note: compiled after a
 * change] A process keeps its digest, but a header edited or a toolkit upgraded in place after
 * its walk is what its next compile reads: that compile's units and entry would carry new bytes
 * under the old digest — to every host still on the old toolkit, through a remote or a bundle.
 * So a compile of a toolkit kernel asks this before storing (graph/unitstore.c), and stores
 * nothing when the tree moved (the next process walks and keys it afresh).
 */
int kc_toolkit_unchanged(void);

/** 1 when the toolkit's include folder is here (as this process first found it), 0 on a driver-only host. */
int kc_toolkit_present(void);

/** Whole walks of the toolkit's tree this process made (for tests of the direct mode). */
int kc_toolkit_walks_(void);

/** Direct manifests this process asked kc_toolkit_direct for (for tests of the lookups' memo). */
int kc_toolkit_direct_reads_(void);

/*
 * [Note: toolkit direct mode] Verifying the digest costs a stat of every file of the tree
 * (~2,000 for CUDA 13; ~7 ms of system calls on a small VM) in every process, while a kernel
 * reads few of them (a bf16 kernel 38, cooperative groups with libcu++ 367).  As ccache's
 * direct mode does, a compile records what it read, and a later process checks only that:
 *  - the compile runs under an inotify watch of every folder of the tree (IN_OPEN): every file
 *    opened there, by NVRTC or anyone else (a superset is harmless), is a read — of this process
 *    alone where fanotify can tell ([Note: only our own reads] in toolkit_fan.c); a queue
 *    overflow, a folder removed, or a file that the verifying walk did not see means the reads
 *    are not known whole, and nothing is recorded; nor in a tree with a link to a file (inotify
 *    reports an open under the folder of the file reached, which may be outside the tree) or a
 *    dangling link (its target may appear outside the tree, where no folder's stat shows it);
 *  - the manifest (<toolkit memo folder>/direct-<key of the graph without the toolkit>.<variant>:
 *    the files read depend on the target, __CUDA_ARCH__ selecting headers) holds
 *    the digest the compile's key used, the tree's root, the in-memory headers' signature, the
 *    stat signature of EVERY folder (a name added or removed anywhere changes its folder's:
 *    what NVRTC looked for and did not find, or found later in the search, it would still
 *    find where it did) and of every file read, as the walk that verified the digest saw them
 *    and still unchanged after the compile;
 *  - a lookup (graph/graph_key.c, kc_graph_key_lookup_) whose manifest for the variant it wants
 *    still matches every signature uses its digest without walking: NVRTC would read the very same bytes now, so
 *    the entry under that key is what it would compile.  A file no kernel of the graph reads
 *    may have changed meanwhile — the key then names the tree as it was, and is still right
 *    for this graph.  Anything else — no manifest, one signature changed, a manifest cut
 *    short — is the whole walk, as before.
 *  - a miss under a vouched digest, or a hit of another variant (kc_graph_get's fallbacks), is
 *    confirmed by the whole walk first, before a remote is asked or a miss counted (graph/lookup.c): an entry is only ever written under a verified digest, so a
 *    tree changed where this graph does not read never puts a stale name on a new compile.
 * A compile that used a precompiled header (compile/pch.c) read its headers from the PCH file, not
 * the tree: its watch takes them from the PCH's creation ([Note: a PCH's reads]).
 * Manifests are written only by compiles on this host; entries imported or fetched come
 * without one (their first process walks).  A read-only cache (KC_OPEN_READONLY, KC_OPEN_INSPECT,
 * a directory that refuses writes) reads the manifests and the digest memo as any cache does, and
 * writes neither: it starts no watch, learns nothing from an entry, and without a memo or manifest
 * each of its processes walks (kc_cache_toolkit_dir_ with `write`, graph/graph_key.c).
 */

/** Begin watching the tree for a compile: *out NULL (nothing recorded later) when the digest
 *  was not verified by a walk in this process, or inotify is unavailable. */
typedef struct kc_toolkit_watch kc_toolkit_watch;
void kc_toolkit_watch_begin(kc_toolkit_watch **out);

/** End the watch (NULL: nothing); when `record` (every unit of the graph compiled under it),
 *  write the direct manifest `memo_dir`/`name`, and give in *reads (NULL when not known whole or
 *  too long; free()) the reads as the graph's entry carries them.  Never fails: a manifest not
 *  written costs a walk. */
void kc_toolkit_watch_end(kc_toolkit_watch *w, const char *memo_dir, const char *name, int record, char **reads);

/*
 * [Note: a PCH's reads] A compile that uses a precompiled header (compile/pch.c) reads the headers
 * of its prefix from the PCH file, not from the tree: its watch sees none of them.  They are the
 * files the PCH's creating compile read.  A compile runs on the compile pool's threads, under the
 * watch of the graph it is for: the thread's current watch, set by kc_toolkit_watch_begin and
 * handed by kc_units_compile to its jobs.  When a creation succeeds, the reads its watch has seen
 * so far — the watch began before the compile, so they hold every file it read; anything else
 * opened in the tree meanwhile too, which is harmless — are kept by the PCH file's name
 * (kc_toolkit_pch_made_; pch.c never names two files alike in a process).  A compile whose use of
 * the file NVRTC confirmed adds them to its own watch's (kc_toolkit_pch_used_): its manifest and
 * its entry's carried reads list them.  When they are not known — the PCH made under no watch, or
 * while its watch's reads were not known whole, or forgotten (more than KC_TK_PCH_MAX made since) —
 * the using watch records nothing.  A use on a thread without a watch cannot be credited: every
 * watch running then records nothing (a count of such uses, compared at each watch's end).
 */
/** This thread's current watch (NULL: none). */
kc_toolkit_watch *kc_toolkit_watch_current_(void);
/** 1 when `w` counts this process's opens only ([Note: only our own reads] in toolkit_fan.c), for the tests. */
int kc_toolkit_watch_filtered_(const kc_toolkit_watch *w);
/** Make `w` (may be NULL) this thread's current watch; the one it was (units.c, around a pool job). */
kc_toolkit_watch *kc_toolkit_watch_adopt_(kc_toolkit_watch *w);
/** The compile that made the PCH file `pch` succeeded, on this thread: keep its watch's reads so far. */
void kc_toolkit_pch_made_(const char *pch);
/** NVRTC confirmed that a compile on this thread used the PCH file `pch`: credit its reads to the
 *  thread's watch (or, unknown, stop that watch's manifest; no watch: stop every watch running). */
void kc_toolkit_pch_used_(const char *pch);

/*
 * [Note: toolkit reads travel] An entry compiled here carries its reads (ORIGIN "toolkit_reads":
 * the digest, the tree's file count, the indices of the files read in the tree sorted by
 * relative path).  The same digest is the same tree — every relative path and every byte — so
 * NVRTC reads the same files for the same key anywhere: a host that fetched or imported the
 * entry, and found it under a digest its own walk verified, writes its own manifest from them
 * with its own stat signatures (kc_toolkit_direct_from_reads), and its next processes need no
 * walk.  A value that is not of this very tree (another digest or file count, an index out of
 * range, malformed) writes nothing.  The value is as trusted as the entry that carries it: it
 * travels inside the bytes a signature or MAC covers.
 */
void kc_toolkit_direct_from_reads(const char *memo_dir, const char *name, const char *reads);

/** 1 with the digest in `out` when the direct manifest `memo_dir`/`name` vouches for it; 0 otherwise. */
int kc_toolkit_direct(const char *memo_dir, const char *name, char out[33]);

/** The in-memory standard headers (stdint.h, type_traits, …): `*n` of them, static. */
const kc_header_src *kc_toolkit_shims(size_t *n);
/** For tests: serve `v` (n of them; static) instead of the built-in standard headers, NULL to restore. */
void kc_toolkit_shims_set_(const kc_header_src *v, size_t n);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * toolkit_impl.h — what the toolkit's files share: toolkit.c (where the headers are, the walk,
 * the digest and its memo) and toolkit_direct.c (the direct mode).  Only they include it.
 *
 * The one idea: one process-wide picture of the toolkit (the verifying walk, its root and
 * digest, the direct mode's root), owned by toolkit.c and read by the direct mode under the
 * same locks.  The short names are the files' own; the symbols carry the kc_tk_ prefix.
 */
#ifndef KC_COMPILE_TOOLKIT_IMPL_H
#define KC_COMPILE_TOOLKIT_IMPL_H

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#define KC_TK_MEMO_VERSION "kcache-toolkit 1"

typedef struct tfile {
    char *rel;
    struct stat st;
} tfile;

typedef struct tlist {
    tfile *v;
    size_t n, cap;
} tlist;

/* The tree: its regular files and its folders (the root as "."), each with its stat. */
typedef struct walk {
    tfile *v; /* the files */
    size_t n, cap;
    tlist dirs;
    size_t unseen; /* links to files, dangling links: a read through one the watch or a folder's stat would miss */
} walk;

/* ---- toolkit.c ---- */
#define memo_digest kc_tk_memo_digest_
#define memo_root kc_tk_memo_root_
#define memo_walk kc_tk_memo_walk_
#define memo_walk_began kc_tk_memo_walk_began_
#define direct_mu kc_tk_direct_mu_
#define direct_root kc_tk_direct_root_
#define by_rel kc_tk_by_rel_
#define stat_fields kc_tk_stat_fields_
#define signature kc_tk_signature_
#define walk_kept kc_tk_walk_kept_
#define direct_root_known kc_tk_direct_root_known_
extern char memo_digest[33];       /* the digest of memo_root's tree, once known */
extern char memo_root[PATH_MAX];   /* the include root the digest is of */
extern walk memo_walk;             /* the verifying walk, kept: the direct mode records from it */
extern int64_t memo_walk_began;    /* CLOCK_REALTIME, as file times: when the verifying walk began */
extern pthread_mutex_t direct_mu;  /* guards direct_root */
extern char direct_root[PATH_MAX]; /* the include root the direct mode reads */
/** qsort order of tfiles by relative path. */
int by_rel(const void *a, const void *b);
/** The fields of a stat a signature is made of. */
void stat_fields(const struct stat *st, int64_t f[8]);
/** The signature of a walk of `root`: every file's and folder's stat_fields, and the shims. */
uint64_t signature(const char *root, const walk *w);
/** 1 when this process's walk is kept (its digest verified): memo_walk, memo_root, memo_digest and
 *  memo_walk_began never change once set, so a caller told 1 reads them without the lock. */
int walk_kept(void);
/** Whether the include folder is known: direct_root, as this process first found it (never changes once set). */
int direct_root_known(void);

/* ---- toolkit_direct.c ---- */
#define shims_sig kc_tk_shims_sig_
/** The XXH3-64 of the shims in use (names and bytes): a memo or manifest made under others vouches for nothing. */
uint64_t shims_sig(void);

#endif

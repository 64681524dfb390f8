/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compile/pch_off.c — what keeps a compile from a PCH besides its own texts: an option whose bytes
 * differ with one, include folders holding a header that names the main file or its time
 * (__BASE_FILE__, __FILE_NAME__, __TIMESTAMP__), or a parent folder where another user could
 * replace the process's PCH folder (and so the bytes NVRTC reads as a PCH).
 *
 * The one idea: a PCH keeps what its headers expanded to when it was made, so one made for a.cu
 * and used by b.cu would give b the name "a.cu" if a header expanded __BASE_FILE__; headers in
 * memory are scanned by cacheable.c (kc_kernel_names_main_file), the toolkit's on disk here, once
 * per process for a set of folders, and only when a PCH is about to be made.
 *
 * Callers: compile/pch.c (plan_pch; decide, under its lock).  Must not: follow a link, or say yes when a
 * folder cannot be read (when in doubt, no PCH).
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/internal.h"
#include "../config/config.h"
#include "pch.h"

/* Options that keep PCH off: NVRTC's own PCH options, a pre-included file (before the prefix), and
 * those whose bytes differed ([Note: precompiled headers]). */
static int option_space(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }
/* Whether the option's own name (before any '=') says "pch": NVRTC's PCH options (--pch, --create-pch,
 * --use-pch, --pch-dir, …), however spelled.  A folder or a macro glued to -I, -D or -U is no name: a
 * toolkit under /opt/epoch/ keeps its PCH. */
static int names_pch(const char *o) {
    static const char *const operand[] = {"-I", "-D", "-U"};
    for (size_t i = 0; i < KC_ARRAY_LEN(operand); i++)
        if (!strncmp(o, operand[i], 2)) return 0;
    const char *eq = strchr(o, '=');
    size_t n = eq ? (size_t)(eq - o) : strlen(o);
    for (size_t i = 0; i + 3 <= n; i++)
        if (!strncasecmp(o + i, "pch", 3)) return 1;
    return 0;
}

int kc_pch_option_refused_(const char *o) {
    static const char *const off[] = {"-G", "--device-debug", "-dopt", "--dopt", "-include", "--pre-include"};
    while (option_space((unsigned char)*o)) o++; /* as NVRTC reads it (options.c trims the same) */
    if (names_pch(o)) return 1;
    size_t n = strlen(o);
    while (n && option_space((unsigned char)o[n - 1])) n--;
    for (size_t i = 0; i < KC_ARRAY_LEN(off); i++) {
        size_t l = strlen(off[i]);
        if (n >= l && !strncmp(o, off[i], l) && (n == l || o[l] == '=')) return 1;
    }
    return 0;
}

static int tree_named; /* a file of the tree walked names the main file */
static int tree_file(const char *path, const struct stat *st, int type, struct FTW *f) {
    (void)f;
    if (type == FTW_SL || type == FTW_SLN || type == FTW_DNR || type == FTW_NS) { /* not read: in doubt, none */
        kc_log(KC_LOG_COMPILE, "pch: %s is a link or cannot be read: no PCH for its kernels", path);
        return tree_named = 1;
    }
    if (type != FTW_F || !S_ISREG(st->st_mode)) return 0;
    FILE *fp = fopen(path, "rbe");
    if (!fp) return tree_named = 1; /* unreadable: when in doubt, none */
    static const char *const named[] = {"__BASE_FILE__", "__TIMESTAMP__", "__FILE_NAME__"};
    char buf[65536 + 16];
    size_t keep = 0, n;
    while (!tree_named && (n = fread(buf + keep, 1, sizeof buf - 16 - keep, fp)) > 0) {
        n += keep;
        for (size_t i = 0; i < KC_ARRAY_LEN(named); i++)
            if (memmem(buf, n, named[i], strlen(named[i]))) tree_named = 1;
        keep = n < 15 ? n : 15; /* a name across two reads */
        memmove(buf, buf + n - keep, keep);
    }
    fclose(fp);
    if (tree_named) kc_log(KC_LOG_COMPILE, "pch: %s names the main file or its time: no PCH for its kernels", path);
    return tree_named;
}

/* Whether a PCH may be made with p's include folders (under pch.c's lock): no file of them names the
 * main file (__BASE_FILE__, __FILE_NAME__) or its time (__TIMESTAMP__) — a PCH would keep its maker's.
 * Walked once per process for a set of folders (CUDA 13.0's: none, 0.2 s). */
static int tree_clean(const char *const *argv, size_t argc) {
    static char done[8192];
    static int clean;
    char dirs[8192] = "";
    size_t n = 0;
    for (size_t i = 0; i < argc; i++)
        if (!strncmp(argv[i], "-I", 2) && n < sizeof dirs)
            n += (size_t)snprintf(dirs + n, sizeof dirs - n, "%s\n", argv[i] + 2);
    if (n == 0) return 1;
    if (n >= sizeof dirs - 1) return 0;
    if (strcmp(done, dirs) != 0) {
        tree_named = 0;
        for (char *d = dirs, *nl; !tree_named && (nl = strchr(d, '\n')); d = nl + 1) {
            *nl = '\0';
            if (nftw(d, tree_file, 16, FTW_PHYS) != 0) tree_named = 1; /* unreadable: when in doubt, none */
            *nl = '\n';
        }
        clean = !tree_named;
        memcpy(done, dirs, sizeof done);
    }
    return clean;
}

static pthread_mutex_t walk_mu = PTHREAD_MUTEX_INITIALIZER;

int kc_pch_tree_clean_(const char *const *argv, size_t argc) {
    pthread_mutex_lock(&walk_mu);
    int clean = tree_clean(argv, argc);
    pthread_mutex_unlock(&walk_mu);
    return clean;
}

/* The walk's opens are seen by every toolkit watch running then (a superset of a compile's reads:
 * harmless, but a direct manifest of every file of the tree, checked by every later process).  So
 * a watch's beginning walks first (compile/toolkit_direct.c), while no watch runs: a later
 * creation's check finds it done. */
void kc_pch_prescan_(const char *const *argv, size_t argc) {
    if (kc_config_process()->v.pch) (void)kc_pch_tree_clean_(argv, argc);
}

/* The parent of the process's PCH folder, resolved into `out` (PATH_MAX bytes; the path as given when
 * 0): it and every folder above it owned by root or this user, none writable by others unless its
 * sticky bit is set (as /tmp).  There no other user can rename, remove or replace the folder that
 * mkdtemp makes (mode 0700), nor re-point a link on the way to it.  0 (errno EACCES) otherwise. */
int kc_pch_parent_ok_(const char *parent, char *out) {
    char path[PATH_MAX];
    int ok = realpath(parent, path) != NULL && path[0] == '/';
    if (ok) memcpy(out, path, sizeof path);
    for (size_t n = ok ? strlen(path) : 0; ok;) { /* "/a/b", then "/a", then "/" */
        struct stat st;
        ok = lstat(n ? path : "/", &st) == 0 && S_ISDIR(st.st_mode) && (st.st_uid == 0 || st.st_uid == getuid()) &&
             (!(st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_mode & S_ISVTX));
        if (n == 0) break;
        *strrchr(path, '/') = '\0';
        n = strlen(path);
    }
    if (!ok) {
        snprintf(out, PATH_MAX, "%s", parent);
        errno = EACCES;
    }
    return ok;
}

/*
 * store/safedir.c — is a cache directory safe to run code from?  ([Note: safe directories])
 * Only local.c uses this file, when it opens a directory.
 *
 * The one idea: whoever can write the directory, or swap it or one of its ancestors, can
 * run code on every GPU host that uses it, so the directory and its whole path are checked
 * once, at open, by owner and mode, and symbolic links on the way are refused.
 *
 * Must not: change anything on disk, or follow a link it has not checked.
 */
#include "local_impl.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/internal.h"

/*
 * [Note: safe directories] Entries hold code that will run on a GPU, so whoever can write
 * the cache directory, or swap it, can run code in every process that uses it.  The cache
 * directory must be a real directory (not a symbolic link) owned by us and writable by no
 * one else.  Each of its ancestors must be owned by us or by root and writable by no one
 * else — unless sticky, as /tmp is, where others cannot rename what is ours.  A symbolic
 * link among the ancestors is refused — it may be pointed elsewhere, and a path through it is
 * not the directory the caller named — except a link root owns directly under / (system
 * layout such as /home → /data/home or /lib → usr/lib, which only root could change); the
 * path such a link leads to is then checked the same way.
 * KC_OPEN_ALLOW_UNSAFE_DIR (KCACHE_ALLOW_UNSAFE_DIR=1, kcache --allow-unsafe-dir) skips all
 * of it, for a caller who knows better (a cache shared through a group, say).
 */
#define ALLOW_HINT "use a directory only you can write to, or allow it explicitly (KCACHE_ALLOW_UNSAFE_DIR=1)"

static int check_ancestor(const char *path, const struct stat *st) {
    uid_t me = geteuid();
    if (!S_ISDIR(st->st_mode)) return kc_err(KC_EIO, "'%s' is not a directory", path);
    if (st->st_uid != me && st->st_uid != 0)
        return kc_err(KC_EPERM,
                      "parent directory '%s' of the cache is owned by uid %u, who could replace the cache; %s", path,
                      (unsigned)st->st_uid, ALLOW_HINT);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
        return kc_err(KC_EPERM,
                      "parent directory '%s' of the cache is writable by group or others (mode %03o), who "
                      "could replace the cache; %s",
                      path, (unsigned)(st->st_mode & 0777), ALLOW_HINT);
    return KC_OK;
}

/* Check every ancestor of the absolute path `abs` (not `abs` itself); *crossed is set when a
 * system link (root's, directly under /) was followed. */
static int check_ancestors(const char *abs, bool *crossed) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", abs);
    char *last = strrchr(p, '/');
    for (char *slash = last; slash; slash = slash == p ? NULL : memrchr(p, '/', (size_t)(slash - p))) {
        char keep = *slash;
        const char *dir = "/";
        if (slash != p) {
            *slash = '\0';
            dir = p;
        }
        struct stat st;
        int rc = KC_OK;
        if (lstat(dir, &st) != 0) {
            rc = kc_local_err_errno_(errno, 0, "checking parent directory '%s' of the cache", dir);
        } else if (S_ISLNK(st.st_mode)) {
            const char *sl = strrchr(dir, '/');
            if (st.st_uid != 0 || sl != dir) { /* only root's links directly under / */
                char real[PATH_MAX];
                rc = kc_err(
                    KC_EPERM,
                    "parent '%s' of the cache directory is a symbolic link (to '%s'), which its owner "
                    "could point elsewhere; use the real path, or allow it explicitly (KCACHE_ALLOW_UNSAFE_DIR=1)",
                    dir, realpath(dir, real) ? real : "?");
            } else if (crossed) {
                *crossed = true;
            }
        } else {
            rc = check_ancestor(dir, &st);
        }
        if (slash != p) *slash = keep;
        if (rc) return rc;
    }
    return KC_OK;
}

int kc_local_dir_check_(const char *root) {
    struct stat st;
    if (lstat(root, &st) != 0) return kc_local_err_errno_(errno, 0, "checking cache directory '%s'", root);
    if (S_ISLNK(st.st_mode))
        return kc_err(KC_EPERM,
                      "cache directory '%s' is a symbolic link; refusing it "
                      "(use the real path, or allow it explicitly: KCACHE_ALLOW_UNSAFE_DIR=1)",
                      root);
    if (!S_ISDIR(st.st_mode)) return kc_err(KC_EIO, "'%s' is not a directory", root);
    if (st.st_uid != geteuid())
        return kc_err(KC_EPERM, "cache directory '%s' is owned by uid %u, not by us (uid %u); %s", root,
                      (unsigned)st.st_uid, (unsigned)geteuid(), ALLOW_HINT);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return kc_err(KC_EPERM, "cache directory '%s' is writable by group or others (mode %03o); %s", root,
                      (unsigned)(st.st_mode & 0777), ALLOW_HINT);
    char abs[PATH_MAX];
    if (root[0] == '/') {
        snprintf(abs, sizeof abs, "%s", root);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) return kc_local_err_errno_(errno, 0, "resolving cache directory '%s'", root);
        if (snprintf(abs, sizeof abs, "%s/%s", cwd, root) >= (int)sizeof abs)
            return kc_err(KC_EINVAL, "cache directory path is too long");
    }
    bool crossed = false;
    int rc = check_ancestors(abs, &crossed);
    if (rc == KC_OK && crossed) { /* where the root-owned links lead must be safe too */
        char real[PATH_MAX];
        if (!realpath(root, real)) return kc_local_err_errno_(errno, 0, "resolving cache directory '%s'", root);
        rc = check_ancestors(real, NULL);
    }
    return rc;
}

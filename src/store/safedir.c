/* SPDX-License-Identifier: Apache-2.0 */
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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
 *
 * [Note: a reader of another's cache] A process that only reads (KC_OPEN_READONLY,
 * KC_OPEN_INSPECT, or a directory that refuses it writes) runs what the directory holds but
 * writes nothing there, so for it the danger is a directory others can write, not one another
 * user owns: a cache prewarmed by root into a container image and read by the service's own
 * user.  Who the owner may be depends on how the reader came to read: one that asked to
 * (KC_OPEN_READONLY, KCACHE_READONLY=1, KC_OPEN_INSPECT) accepts a cache directory owned by
 * anyone — it named the directory and trusts its owner; one that merely found the directory
 * refusing it writes accepts one owned by root only — another ordinary user's directory
 * (made in /tmp, say, for everyone who points KCACHE_DIR there) is refused as it always was,
 * and the message says how to read it deliberately.  Then, on every other rule above: the
 * directory's owner joins us and root among the owners a parent may have (it could swap the
 * cache, and it can write it already); no parent may be writable by group or others, sticky
 * or not (in /tmp anyone could have made the name the reader was given); and v1/ and each
 * folder directly in it (the shards, quarantine/, toolkits/, profiles/) must be real folders
 * owned by that owner or root and writable by no one else either — what a writer of its own
 * cache makes itself (0700) is checked when someone else made it.  Entry files are not
 * walked (an open must not read the whole cache): each is checked when read (local.c), and
 * one writable by group or others, or owned by neither the cache's owner nor root, is not
 * used — unusable, a miss, moved nowhere; `chmod -R go-w` when the image is built covers
 * them, and a MAC key or a keyring vouches for their bytes.  A writer keeps the rule that the
 * directory is its own; our own directory keeps the rules above (a sticky parent is fine).
 */
#define ALLOW_HINT "use a directory only you can write to, or allow it explicitly (KCACHE_ALLOW_UNSAFE_DIR=1)"
#define READER_HINT                                                                                                 \
    "to read a cache another user prepared (a container image's), open it read-only (KCACHE_READONLY=1): a reader " \
    "accepts it when no one but its owner can write it; to write here, use a directory of your own, or allow it "   \
    "explicitly (KCACHE_ALLOW_UNSAFE_DIR=1)"

/* `owner`: the cache directory's owner, who may own a parent too (a reader of another's cache), or our uid. */
static int check_ancestor(const char *path, const struct stat *st, uid_t owner) {
    uid_t me = geteuid();
    if (!S_ISDIR(st->st_mode)) return kc_err(KC_EIO, "'%s' is not a directory", path);
    if (st->st_uid != me && st->st_uid != 0 && st->st_uid != owner)
        return kc_err(KC_EPERM,
                      "parent directory '%s' of the cache is owned by uid %u, who could replace the cache (a parent "
                      "must be owned by root, by us or by the cache's owner); %s",
                      path, (unsigned)st->st_uid, ALLOW_HINT);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && owner != me) /* [Note: a reader of another's cache] */
        return kc_err(KC_EPERM,
                      "parent directory '%s' of the cache is writable by group or others (mode %04o), who could have "
                      "made or replaced uid %u's cache there (sticky or not); a reader accepts another user's cache "
                      "only under folders no one else can write (such as /opt): move it there, or %s",
                      path, (unsigned)(st->st_mode & 07777), (unsigned)owner, ALLOW_HINT);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
        return kc_err(KC_EPERM,
                      "parent directory '%s' of the cache is writable by group or others (mode %03o), who "
                      "could replace the cache; %s",
                      path, (unsigned)(st->st_mode & 0777), ALLOW_HINT);
    return KC_OK;
}

/* Check every ancestor of the absolute path `abs` (not `abs` itself); *crossed is set when a
 * system link (root's, directly under /) was followed. */
static int check_ancestors(const char *abs, uid_t owner, bool *crossed) {
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
            rc = check_ancestor(dir, &st, owner);
        }
        if (slash != p) *slash = keep;
        if (rc) return rc;
    }
    return KC_OK;
}

/* A folder of another's cache ([Note: a reader of another's cache]): a real folder, owned by the cache's
 * owner or root, writable by no one else. */
static int check_inner(const char *path, const struct stat *st, uid_t owner) {
    if (S_ISLNK(st->st_mode) || !S_ISDIR(st->st_mode))
        return kc_err(KC_EPERM,
                      "'%s' in the cache is not a real folder (a symbolic link or a file); refusing the cache", path);
    if (st->st_uid != owner && st->st_uid != 0)
        return kc_err(KC_EPERM,
                      "'%s' in the cache is owned by uid %u, neither the cache's owner (uid %u) nor root, who could "
                      "plant entries this process runs; chown -R the cache to one owner",
                      path, (unsigned)st->st_uid, (unsigned)owner);
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return kc_err(KC_EPERM,
                      "'%s' in the cache is writable by group or others (mode %03o), who could plant entries this "
                      "process runs; chmod -R go-w the cache (as an image's build does), or %s",
                      path, (unsigned)(st->st_mode & 0777), ALLOW_HINT);
    return KC_OK;
}

/* v1/ and every folder directly in it, when someone else owns the cache. */
static int check_inside(const char *root, uid_t owner) {
    char v1[PATH_MAX];
    if (snprintf(v1, sizeof v1, "%s/v1", root) >= (int)sizeof v1) return kc_err(KC_EINVAL, "cache path is too long");
    struct stat st;
    if (lstat(v1, &st) != 0) return errno == ENOENT ? KC_OK : kc_local_err_errno_(errno, 0, "checking '%s'", v1);
    int rc = check_inner(v1, &st, owner);
    DIR *d = rc == KC_OK ? opendir(v1) : NULL;
    if (rc == KC_OK && !d && errno == EACCES)
        return kc_err(KC_EIO,
                      "cannot read '%s' of uid %u's cache (permission denied): its owner must let others read it "
                      "(chmod -R a+rX,go-w, as an image's build does)",
                      v1, (unsigned)owner);
    if (rc == KC_OK && !d) return kc_local_err_errno_(errno, 0, "reading directory '%s'", v1);
    struct dirent *de;
    while (rc == KC_OK && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue; /* gone: nothing to trust */
        if (!S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) continue;                 /* a file: not walked */
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", v1, de->d_name);
        rc = check_inner(p, &st, owner);
    }
    if (d) closedir(d);
    return rc;
}

/* The cache directory itself: a real directory, ours (a writer) or anyone's (a reader), writable by its owner only. */
static int check_root(const char *root, const struct stat *st, kc_dir_opener who) {
    if (S_ISLNK(st->st_mode))
        return kc_err(KC_EPERM,
                      "cache directory '%s' is a symbolic link; refusing it "
                      "(use the real path, or allow it explicitly: KCACHE_ALLOW_UNSAFE_DIR=1)",
                      root);
    if (!S_ISDIR(st->st_mode)) return kc_err(KC_EIO, "'%s' is not a directory", root);
    if (st->st_uid != geteuid() && who == KC_DIR_WRITER)
        return kc_err(KC_EPERM, "cache directory '%s' is owned by uid %u, not by us (uid %u); %s", root,
                      (unsigned)st->st_uid, (unsigned)geteuid(), READER_HINT);
    if (st->st_uid != geteuid() && st->st_uid != 0 && who == KC_DIR_FOUND_READER)
        return kc_err(KC_EPERM,
                      "cache directory '%s' is owned by uid %u, neither us (uid %u) nor root, and refuses our writes; "
                      "we read another user's cache only when asked to: if you trust uid %u, read it deliberately "
                      "(KCACHE_READONLY=1); otherwise use a directory of your own",
                      root, (unsigned)st->st_uid, (unsigned)geteuid(), (unsigned)st->st_uid);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && st->st_uid != geteuid())
        return kc_err(KC_EPERM,
                      "cache directory '%s' (owned by uid %u) is writable by group or others (mode %03o), who could "
                      "plant entries this process runs; a reader accepts another user's cache only when no one but "
                      "its owner can write it: chmod -R go-w it (as an image's build does), or %s",
                      root, (unsigned)st->st_uid, (unsigned)(st->st_mode & 0777), ALLOW_HINT);
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return kc_err(KC_EPERM, "cache directory '%s' is writable by group or others (mode %03o); %s", root,
                      (unsigned)(st->st_mode & 0777), ALLOW_HINT);
    return KC_OK;
}

int kc_local_dir_check_(const char *root, kc_dir_opener who) {
    struct stat st;
    if (lstat(root, &st) != 0) return kc_local_err_errno_(errno, 0, "checking cache directory '%s'", root);
    int rc = check_root(root, &st, who);
    if (rc) return rc;
    uid_t owner = st.st_uid; /* us, or (a reader) whoever prepared the cache */
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
    rc = check_ancestors(abs, owner, &crossed);
    if (rc == KC_OK && crossed) { /* where the root-owned links lead must be safe too */
        char real[PATH_MAX];
        if (!realpath(root, real)) return kc_local_err_errno_(errno, 0, "resolving cache directory '%s'", root);
        rc = check_ancestors(real, owner, NULL);
    }
    if (rc == KC_OK && owner != geteuid()) rc = check_inside(root, owner); /* [Note: a reader of another's cache] */
    return rc;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/local_hit.c — a local hit's read (kc_local_get, kc_local_get_into, kc_local_read), and what
 * it does without a system call of its own: the LRU clock (a hit's file gets a fresh time when its
 * time is older than TOUCH_AFTER_S, and the handle remembers for how long none is due) and the
 * cache's v1/ folder held open for its reads.
 *
 * The one idea: what a hit checks once per TOUCH_AFTER_S per handle, not per hit — a file's
 * time, and that the folder held open is still the path's; the read itself is one open, one read
 * and one close, into the caller's buffer when the entry fits there.
 *
 * Must not: write anything but a file's time and the folder's descriptor; close a descriptor
 * another thread may still use; let the memo or the folder be more than a hint (a wrong answer
 * there costs a stat, a refresh or a read under the path, never a byte of any entry).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fs.h"
#include "../common/internal.h"
#include "local_impl.h"

/*
 * [Note: the touch memo] The LRU clock needs a hit's file time (its fstat), and the hit itself
 * needs none ([Note: the reader without fstat] in common/fs.c).  After a read that took the stat,
 * no refresh is due until that time plus TOUCH_AFTER_S (or, when this read refreshed it, until now
 * plus that): until then a read of the same name through this handle takes no stat, and reads
 * straight into a buffer of the size the stat gave (one read, no copy; a file that grew since
 * costs a stat).  A read that refreshes nothing (a read-only handle; verify, export) remembers
 * the size for the window, not the time: a hit after it still takes the stat its refresh needs.
 * One slot per name's hash, the last one wins; a collision or a torn slot (relaxed atomics, no
 * lock) only asks for a stat that was not needed, skips a refresh within the window, or gives a
 * size that costs a stat — never a byte: the read's bytes are the file's.  The cleaner orders by
 * seconds anyway.  Another process's hit refreshes the file itself; a file replaced in the window
 * has the newer time.  Another user's cache, read with a stat for every file, never asks.
 */
/* A store name is its key's hex, a dot and a variant (kc_store_name_check passed): the key's first 64 bits
 * as they are, mixed with the variant's bytes. */
static uint64_t name_hash(const char *name) {
    uint64_t a, b;
    memcpy(&a, name, 8), memcpy(&b, name + 8, 8);
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ b;
    for (const char *v = name + KC_KEY_HEX_LEN; *v; v++) h = (h ^ (unsigned char)*v) * 0x100000001B3ull;
    return h ? h : 1;
}

size_t kc_local_memo_(kc_local *l, const char *name, time_t now, bool touch, bool *fresh) {
    uint64_t h = name_hash(name);
    size_t i = (size_t)(h % TOUCH_MEMO);
    *fresh = false;
    if (__atomic_load_n(&l->touched[i].name, __ATOMIC_RELAXED) != h) return 0;
    int64_t until = __atomic_load_n(&l->touched[i].until, __ATOMIC_RELAXED);
    size_t size = __atomic_load_n(&l->touched[i].size, __ATOMIC_RELAXED);
    int timed = __atomic_load_n(&l->touched[i].timed, __ATOMIC_RELAXED);
    *fresh = (int64_t)now <= until && until <= (int64_t)now + TOUCH_AFTER_S && /* the clock stepped back: ask */
             (timed || !touch); /* a read that refreshes needs the time a read that did not never looked at */
    return *fresh ? size : 0;
}

void kc_local_memo_note_(kc_local *l, const char *path, const char *name, const struct stat *st, time_t now,
                         bool touch) {
    time_t at = touch ? st->st_mtime : now; /* not touched: only the size is remembered, for the window */
    if (at + TOUCH_AFTER_S < now || at > now + TOUCH_AFTER_S) {
        /* refresh the hit's time, a time in the future too (the clock stepped back: local_gc.c
         * orders it before every sane time); a vanished file is fine */
        if (utimensat(AT_FDCWD, path, NULL, 0) != 0) {
            if (errno != ENOENT) kc_log(KC_LOG_STORE, "touch %s: %s", path, strerror(errno));
            return;
        }
        at = now;
    }
    uint64_t h = name_hash(name);
    size_t i = (size_t)(h % TOUCH_MEMO);
    __atomic_store_n(&l->touched[i].name, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->touched[i].until, (int64_t)at + TOUCH_AFTER_S, __ATOMIC_RELAXED);
    __atomic_store_n(&l->touched[i].size, (size_t)st->st_size, __ATOMIC_RELAXED);
    __atomic_store_n(&l->touched[i].timed, touch ? 1 : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&l->touched[i].name, h, __ATOMIC_RELAXED);
}

/*
 * [Note: the folder held open] A hit opens its files by their names under v1/ held open: two
 * names to look up, where the full path walks every folder above the cache too (~0.3 µs an open
 * here).  Which file a name is does not change (the key is in the name, the bytes are checked),
 * but the folder at the path can: moved aside, removed, replaced by a copy or by another mount.
 * So the descriptor is checked against the path (dev and inode of both) once per TOUCH_AFTER_S
 * per handle, and at once before this handle quarantines, removes or clears, and reopened when
 * they differ; until then a name absent under the held folder is looked for under the path
 * (kc_fs_read_file_at: a miss costs a second open), and a name present in both is read from the
 * held one — a good entry, for at most that window.  A quarantine that finds the held folder was
 * not the path's moves nothing: the corrupt bytes may have come from the old folder, and the next
 * lookup reads the path's.  Writes, removals and the cleaner always use paths.  A descriptor
 * replaced is closed only by kc_local_free (another thread may be in an openat with it); after
 * KC_V1_OLD replacements the handle reads by paths.  A host that closes descriptors it did not
 * open (a fork that closes all, then reuses the number) breaks the handle's reads into errors,
 * as it would break any library's open files.
 */
int kc_local_v1_(kc_local *l, time_t now, bool force, bool *stale) {
    if (stale) *stale = false;
    int fd = __atomic_load_n(&l->v1fd, __ATOMIC_ACQUIRE);
    int64_t at = __atomic_load_n(&l->v1_checked, __ATOMIC_RELAXED);
    if (!force && (int64_t)now >= at && (int64_t)now - at < TOUCH_AFTER_S) return fd;
    pthread_mutex_lock(&l->v1_mu);
    fd = l->v1fd;
    struct stat held, here;
    bool same = fd >= 0 && fstat(fd, &held) == 0 && lstat(l->v1, &here) == 0 && held.st_dev == here.st_dev &&
                held.st_ino == here.st_ino;
    if (!same && !l->v1_gave_up) {
        int was = fd;
        if (stale) *stale = was >= 0;
        if (was >= 0) l->v1_old[l->nv1_old++] = was; /* another thread may be in an openat with it */
        l->v1_gave_up = l->nv1_old == KC_V1_OLD;
        fd = l->v1_gave_up ? -1 : open(l->v1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (was >= 0 || fd >= 0) /* a v1/ still absent is read by its path, unsaid */
            kc_log(KC_LOG_STORE, "%s is not the folder held open: %s", l->v1,
                   l->v1_gave_up ? "read by its path from now on"
                   : fd >= 0     ? "reopened"
                                 : "read by its path");
        __atomic_store_n(&l->v1fd, fd, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&l->v1_checked, (int64_t)now, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&l->v1_mu);
    return fd;
}

/* ---- the read ---- */

/* An entry file of another user's cache ([Note: a reader of another's cache] in safedir.c) that
 * someone else could have written is not used: unusable, as a file that is not a regular one is. */
static int foreign_file_check(const kc_local *l, const char *path, const struct stat *st, const void *lent, void **out,
                              size_t *len) {
    const char *why = (st->st_mode & (S_IWGRP | S_IWOTH))         ? "is writable by group or others"
                      : st->st_uid != l->owner && st->st_uid != 0 ? "is owned by neither the cache's owner nor root"
                                                                  : NULL;
    if (!why) return KC_OK;
    kc_log(KC_LOG_STORE, "%s %s (mode %03o, uid %u): not used (chmod -R go-w the cache)", path, why,
           (unsigned)(st->st_mode & 0777), (unsigned)st->st_uid);
    if (*out != lent) free(*out); /* read with a stat, it never is the lent buffer; but never free that */
    *out = NULL;
    *len = 0;
    return kc_err(KC_ECORRUPT, "entry '%s' of uid %u's cache %s (mode %03o, uid %u); not used", path,
                  (unsigned)l->owner, why, (unsigned)(st->st_mode & 0777), (unsigned)st->st_uid);
}

/* `name`'s bytes into *out: `lent` (lent_cap bytes, may be NULL) when they fit there, else a buffer to free. */
static int local_read(kc_local *l, const char *name, void *lent, size_t lent_cap, void **out, size_t *len, bool use) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    char path[PATH_MAX];
    kc_local_path(l, name, path, sizeof path);
    time_t now = kc_local_now_(); /* the coarse clock: the seconds the LRU compares, without a fine read per hit */
    bool fresh, touch = use && !l->readonly;
    size_t hint = kc_local_memo_(l, name, now, touch, &fresh); /* [Note: the touch memo] */
    hint = hint <= TOUCH_HINT_MAX ? hint : 0;                  /* a torn slot's size never makes a big buffer */
    bool need_st = l->foreign || !fresh;
    struct stat st; /* [Note: the reader without fstat] in common/fs.c: a stat only when one is used */
    int at = kc_local_v1_(l, now, false, NULL); /* [Note: the folder held open] */
    at = at >= 0 ? at : AT_FDCWD;
    kc_fs_read_how how = {KC_ENTRY_MAX_BYTES, hint, lent, lent_cap};
    rc = kc_fs_read_file_at(at, at == AT_FDCWD ? path : path + strlen(l->v1) + 1, path, &how, out, len,
                            need_st ? &st : NULL);
    if (rc == KC_OK && l->foreign) rc = foreign_file_check(l, path, &st, lent, out, len);
    if (rc == KC_OK && need_st) kc_local_memo_note_(l, path, name, &st, now, touch);
    if (!use) return rc;
    kc_local_maybe_flush_(l);
    return rc;
}

int kc_local_get(kc_local *l, const char *name, void **out, size_t *len) {
    return local_read(l, name, NULL, 0, out, len, true);
}
int kc_local_get_into(kc_local *l, const char *name, void *buf, size_t cap, void **out, size_t *len) {
    return local_read(l, name, buf, cap, out, len, true);
}
int kc_local_read(kc_local *l, const char *name, void **out, size_t *len) {
    return local_read(l, name, NULL, 0, out, len, false);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/local_touch.c — the LRU clock of the local store's hits: a hit's file gets a fresh time
 * when its time is older than TOUCH_AFTER_S, and the process remembers for how long none is due.
 *
 * The one idea: the time of a file is read once per TOUCH_AFTER_S per process, not per hit.
 *
 * Must not: read or write anything but a file's time; be more than a hint (a wrong answer here
 * costs one stat or one refresh, never a byte of any entry).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "../common/internal.h"
#include "local_impl.h"

/*
 * [Note: the touch memo] The LRU clock needs a hit's file time (its fstat), and the hit itself
 * needs none ([Note: the reader without fstat] in common/fs.c).  After a hit that read the time,
 * no refresh is due until that time plus TOUCH_AFTER_S (or, when this hit refreshed it, until now
 * plus that): until then a hit of the same name in this process reads no time.  One slot per
 * name's hash, the last one wins; a collision or a torn slot (relaxed atomics, no lock) only asks
 * for a stat that was not needed or skips a refresh within the window, and the cleaner orders by
 * seconds anyway.  Another process's hit refreshes the file itself; a file replaced in the window
 * has the newer time.  A cache read with a stat for every file (another user's) never asks.
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

bool kc_local_touch_needs_stat_(kc_local *l, const char *name, time_t now) {
    uint64_t h = name_hash(name);
    size_t i = (size_t)(h % TOUCH_MEMO);
    if (__atomic_load_n(&l->touched[i].name, __ATOMIC_RELAXED) != h) return true;
    int64_t until = __atomic_load_n(&l->touched[i].until, __ATOMIC_RELAXED);
    return (int64_t)now > until || until > (int64_t)now + TOUCH_AFTER_S; /* the clock stepped back: ask */
}

void kc_local_touch_(kc_local *l, const char *path, const char *name, const struct stat *st, time_t now) {
    time_t at = st->st_mtime;
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
    __atomic_store_n(&l->touched[i].name, h, __ATOMIC_RELAXED);
}

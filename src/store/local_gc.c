/*
 * store/local_gc.c — the local store's cleaner: gc (evict the least recently used down to a
 * size, collect stale temporary and lock files, recount every shard) and clear.  Only the
 * local store uses it: kc_local_gc and kc_local_clear, and an automatic cleanup after a put.
 *
 * The one idea: one cleaner at a time (an flock on <dir>/v1/gc.lock), and no file is evicted
 * on a stale judgement — an entry rewritten since the scan is no longer least recently used
 * and stays.  A gc recounts sizes from the directory, the truth the stats files approximate.
 *
 * A size limit of 0 means "no limit", the one meaning everywhere (KCACHE_MAX_SIZE=0, `gc
 * --max-size 0`): no automatic cleanup after a put, and a gc evicts nothing — it still collects
 * stale temporaries and recounts.  0 never means "evict everything"; `kcache clear` does that.
 * kc_local_gc's max_size 0 asks for the store's own limit, so a store without one evicts nothing.
 *
 * A temporary file is another process's write in flight until it is TEMP_STALE_S old by its
 * mtime: gc and clear remove only the stale ones, so a put racing them never loses its file.
 *
 * Times in the future (the clock stepped back since an entry was used) are not "most recently
 * used": an entry used since then has a sane time (a hit refreshes a future time too, local.c),
 * so gc orders a future time as older than every sane one (the furthest future first) and the
 * just-used entries stay.
 *
 * The quarantine is bounded (kc_local_quarantine_bound_): at most QUARANTINE_MAX_FILES files and
 * a QUARANTINE_SHARE-th of the size limit, the oldest removed first — checked after each
 * quarantine and by every gc, so it never grows outside the limit.
 *
 * Must not: treat a file vanishing under it as an error, remove a lock file someone holds, or
 * remove a fresh temporary file.
 */
#include "local_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fs.h"
#include "../common/internal.h"

typedef struct gc_item {
    int64_t mtime_ns; /* the file's time, to see a rewrite since the scan */
    int64_t order_ns; /* its LRU order: the time, or before every sane time when in the future */
    uint64_t size;
    uint8_t shard;
    char file[KC_NAME_MAX + 8];
} gc_item;

typedef struct gc_ctx {
    gc_item *items;
    size_t n, cap;
    kc_local_sizes per[KC_SHARDS];
    uint64_t temp_removed;
    int64_t now_s, now_ns;
    int oom;
} gc_ctx;

/* The LRU order of a file's time: itself when not in the future; else before every sane time,
 * the furthest future first (a clock stepped back: such an entry has not been used since). */
static int64_t lru_order(int64_t mtime_ns, int64_t now_ns) {
    return mtime_ns <= now_ns ? mtime_ns : INT64_MIN + (INT64_MAX - mtime_ns) / 2;
}

/* Whether a temporary file is an orphan rather than a write in flight: old by its mtime.  The
 * one rule gc and clear share. */
static int temp_is_stale(const struct stat *st, int64_t now_s) {
    return now_s - (int64_t)st->st_mtime > TEMP_STALE_S;
}

static int gc_file(int shard, const char *dir, const char *file, const struct stat *st, void *ctx) {
    gc_ctx *g = ctx;
    char name[KC_NAME_MAX + 1];
    if (strncmp(file, ".lock.", 6) == 0) {
        if (g->now_s - (int64_t)st->st_mtime > TEMP_STALE_S) {
            char path[PATH_MAX + 256];
            snprintf(path, sizeof path, "%s/%s", dir, file);
            int fd = kc_sys_open(path, O_RDWR | O_NOFOLLOW, 0);
            if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) kc_sys_unlink(path); /* nobody holds it */
            if (fd >= 0) close(fd);
        }
        return 0;
    }
    if (kc_fs_is_temp_name(file)) {
        if (temp_is_stale(st, g->now_s)) {
            char path[PATH_MAX + 256];
            snprintf(path, sizeof path, "%s/%s", dir, file);
            if (kc_sys_unlink(path) == 0) g->temp_removed++;
        }
        return 0;
    }
    if (!kc_local_entry_file_name_(file, name)) return 0;
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 1024;
        gc_item *p = kc_realloc(g->items, cap * sizeof *p);
        if (!p) return g->oom = 1, 1;
        g->items = p;
        g->cap = cap;
    }
    gc_item *it = &g->items[g->n++];
    it->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    it->order_ns = lru_order(it->mtime_ns, g->now_ns);
    it->size = (uint64_t)st->st_size;
    it->shard = (uint8_t)shard;
    snprintf(it->file, sizeof it->file, "%s", file);
    g->per[shard].bytes += st->st_size;
    g->per[shard].entries++;
    return 0;
}

static int by_mtime(const void *a, const void *b) {
    const gc_item *x = a, *y = b;
    return x->order_ns < y->order_ns ? -1 : x->order_ns > y->order_ns;
}

typedef struct q_item {
    int64_t order_ns;
    uint64_t size;
    char file[256];
} q_item;

static int q_by_time(const void *a, const void *b) {
    const q_item *x = a, *y = b;
    return x->order_ns < y->order_ns ? -1 : x->order_ns > y->order_ns;
}

void kc_local_quarantine_bound_(kc_local *l) {
    if (l->readonly) return;
    uint64_t max_bytes = l->max_size ? l->max_size / QUARANTINE_SHARE : UINT64_MAX;
    char q[PATH_MAX], p[PATH_MAX + 256];
    snprintf(q, sizeof q, "%s/quarantine", l->v1);
    DIR *d = kc_fs_opendir_nofollow(q); /* [Note: no links inside] (local.c) */
    if (!d) return;
    q_item *items = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    int64_t now_ns = (int64_t)kc_now_ns();
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof items->file) continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        if (n == cap) {
            q_item *r = kc_realloc(items, (cap = cap ? cap * 2 : 64) * sizeof *r);
            if (!r) break; /* out of memory: bound what was listed */
            items = r;
        }
        items[n].order_ns = lru_order((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec, now_ns);
        items[n].size = (uint64_t)st.st_size;
        snprintf(items[n].file, sizeof items[n].file, "%s", de->d_name);
        total += items[n++].size;
    }
    closedir(d);
    if (n > QUARANTINE_MAX_FILES || total > max_bytes) {
        qsort(items, n, sizeof *items, q_by_time);
        for (size_t i = 0; i < n && (n - i > QUARANTINE_MAX_FILES || total > max_bytes); i++) {
            snprintf(p, sizeof p, "%s/%s", q, items[i].file);
            if (kc_sys_unlink(p) == 0 || errno == ENOENT) total -= items[i].size;
            kc_log(KC_LOG_STORE, "quarantine full: removed %s", items[i].file);
        }
    }
    free(items);
}

int kc_local_gc(kc_local *l, uint64_t max_size, kc_gc_report *out) {
    kc_gc_report rep;
    memset(&rep, 0, sizeof rep);
    if (l->readonly) return kc_err(KC_EREADONLY, "the cache '%s' is read-only", l->root);
    if (max_size == 0) max_size = l->max_size;
    if (max_size == 0) max_size = UINT64_MAX; /* no limit: evict nothing (see the top of this file) */
    char lock[PATH_MAX];
    snprintf(lock, sizeof lock, "%s/gc.lock", l->v1);
    int rc0 = kc_fs_real_dir(l->v1); /* [Note: no links inside] (local.c): no lock file beyond a linked v1/ */
    if (rc0) return rc0;
    int lfd = kc_sys_open(lock, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
    if (lfd < 0) return kc_err_errno(errno, "opening '%s'", lock);
    if (flock(lfd, LOCK_EX | LOCK_NB) != 0) {
        close(lfd);
        return kc_err(KC_EBUSY, "another process is cleaning '%s'", l->root);
    }
    gc_ctx *g = kc_calloc(1, sizeof *g);
    if (!g) {
        close(lfd);
        return kc_err(KC_ENOMEM, "gc: out of memory");
    }
    g->now_ns = (int64_t)kc_now_ns();
    g->now_s = g->now_ns / 1000000000;
    kc_local_quarantine_bound_(l);
    int rc = kc_local_walk_shards_(l, gc_file, g);
    if (g->oom) rc = kc_err(KC_ENOMEM, "gc: out of memory");
    if (rc == KC_OK) {
        uint64_t total = 0;
        for (size_t i = 0; i < g->n; i++) total += g->items[i].size;
        rep.entries_before = g->n;
        rep.bytes_before = total;
        rep.temp_removed = g->temp_removed;
        uint64_t failed = 0;
        int first_errno = 0;
        char first_path[PATH_MAX + 256] = "";
        if (total > max_size) {
            qsort(g->items, g->n, sizeof *g->items, by_mtime);
            char path[PATH_MAX + 256];
            for (size_t i = 0; i < g->n && total > max_size; i++) {
                gc_item *it = &g->items[i];
                snprintf(path, sizeof path, "%s/%02x/%s", l->v1, it->shard, it->file);
                struct stat st;
                /* Skip one rewritten since the scan: it is no longer least recently used. */
                if (lstat(path, &st) != 0) {
                    total -= it->size;
                    g->per[it->shard].bytes -= (int64_t)it->size;
                    g->per[it->shard].entries--;
                    continue;
                }
                if ((int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec != it->mtime_ns) continue;
                if (kc_sys_unlink(path) != 0) {
                    if (errno != ENOENT) {
                        kc_log(KC_LOG_STORE, "evicting %s: %s", path, strerror(errno));
                        if (failed++ == 0) {
                            first_errno = errno;
                            snprintf(first_path, sizeof first_path, "%s", path);
                        }
                        continue; /* the next least recently used goes instead */
                    }
                } else {
                    rep.evicted++;
                    kc_local_count(l, it->shard, KC_STAT_EVICTIONS, 1);
                }
                total -= it->size;
                g->per[it->shard].bytes -= (int64_t)it->size;
                g->per[it->shard].entries--;
            }
        }
        rep.bytes_after = total;
        rep.entries_after = rep.entries_before;
        for (int s = 0; s < KC_SHARDS; s++) {
            /* Our own unflushed size deltas are already in what we just counted. */
            __atomic_store_n(&l->delta[s][KC_STAT_BYTES], 0, __ATOMIC_RELAXED);
            __atomic_store_n(&l->delta[s][KC_STAT_ENTRIES], 0, __ATOMIC_RELAXED);
            int64_t v[KC_STATS_SLOTS]; /* rewrite (under the lock) only the shards whose sizes drifted */
            kc_local_stats_read_(l, s, v);
            if (v[KC_STAT_BYTES] != g->per[s].bytes || v[KC_STAT_ENTRIES] != g->per[s].entries)
                kc_local_stats_update_(l, s, kc_local_set_sizes_, &g->per[s]);
        }
        uint64_t e = 0;
        for (int s = 0; s < KC_SHARDS; s++) e += (uint64_t)g->per[s].entries;
        rep.entries_after = e;
        kc_local_flush(l);
        if (total > max_size && failed)
            rc = kc_err_errno(first_errno, "gc: %llu entries could not be evicted, %llu bytes stay over the limit of %llu "
                              "(first: removing '%s')", (unsigned long long)failed,
                              (unsigned long long)(total - max_size), (unsigned long long)max_size, first_path);
        kc_log(KC_LOG_STORE, "gc: %llu entries, %llu → %llu bytes, %llu evicted, %llu temp files",
               (unsigned long long)rep.entries_before, (unsigned long long)rep.bytes_before,
               (unsigned long long)rep.bytes_after, (unsigned long long)rep.evicted,
               (unsigned long long)rep.temp_removed);
    }
    free(g->items);
    free(g);
    close(lfd);
    if (out) *out = rep;
    return rc;
}

static int clear_file(int shard, const char *dir, const char *file, const struct stat *st, void *ctx) {
    (void)shard;
    const int64_t *now_s = ctx;
    char name[KC_NAME_MAX + 1], path[PATH_MAX + 256];
    if (kc_fs_is_temp_name(file)) {
        if (!temp_is_stale(st, *now_s)) return 0; /* another process's put in flight: its rename must not fail */
    } else if (!kc_local_entry_file_name_(file, name)) {
        return 0;
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (kc_sys_unlink(path) != 0 && errno != ENOENT) return kc_err_errno(errno, "removing '%s'", path);
    return 0;
}

int kc_local_clear(kc_local *l) {
    if (l->readonly) return kc_err(KC_EREADONLY, "the cache '%s' is read-only", l->root);
    int64_t now_s = (int64_t)(kc_now_ns() / 1000000000ull);
    int rc = kc_local_walk_shards_(l, clear_file, &now_s);
    if (rc) return rc;
    char q[PATH_MAX], p[PATH_MAX + 256];
    snprintf(q, sizeof q, "%s/quarantine", l->v1);
    DIR *d = kc_fs_opendir_nofollow(q); /* [Note: no links inside] (local.c) */
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.') continue;
            snprintf(p, sizeof p, "%s/%s", q, de->d_name);
            kc_sys_unlink(p);
        }
        closedir(d);
    }
    kc_local_sizes zero = {0, 0};
    for (int s = 0; s < KC_SHARDS; s++) {
        __atomic_store_n(&l->delta[s][KC_STAT_BYTES], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&l->delta[s][KC_STAT_ENTRIES], 0, __ATOMIC_RELAXED);
        kc_local_stats_update_(l, s, kc_local_set_sizes_, &zero);
    }
    return KC_OK;
}

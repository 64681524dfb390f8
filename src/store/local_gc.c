/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/local_gc.c — the local store's cleaner: gc (evict the least recently used down to a
 * size, sweep what no graph can use, collect stale temporary and lock files, recount every
 * shard) and clear.  Only the local store uses it: kc_local_gc (the explicit gc: kc_cache_gc,
 * `kcache gc`), kc_local_gc_lru_ (the automatic cleanup after a put) and kc_local_clear.
 *
 * The one idea: one cleaner at a time (an flock on <dir>/v1/gc.lock), and no file is removed
 * on a stale judgement — an entry rewritten or used since the scan stays.  A gc recounts sizes
 * from the directory, the truth the stats files approximate.
 *
 * Two levels ([Note: two levels] in kcache/entry.h).  Images are LRU items like graph entries
 * (a graph hit refreshes its images' times, so an image is never older than its latest user);
 * evicting an image makes its graphs misses, noticed at their next lookup (the unit is compiled
 * and its image stored again).  The automatic cleanup is LRU only: it reads no object.  The
 * explicit gc also marks and sweeps: it reads every object's format version (an image's header
 * only) and every graph entry's and unit record's references through the entry part
 * (kc_entry_decode_as, kc_entry_images, kc_unit_entry_read: the store never learns what a graph
 * is), and removes (a) images nothing refers to (orphans), (b) unit records and (c) graph
 * entries one of whose images is gone (dangling: evicted ones included, so an explicit gc never
 * leaves a graph pointing at nothing), (d) objects of another format version (stale; never
 * quarantined); the LRU eviction holds what is not garbage to the limit.  A sweep removes graph
 * entries first, unit records next, images last: no reader finds a graph whose image the sweep
 * took while the graph stays.  Writers store image -> unit record -> graph entry, so an image
 * younger than ORPHAN_GRACE_S is never an orphan, a referrer is removed only if its image is
 * still absent just before, a dangling referrer still marks its images (until the next gc), and
 * no orphan is swept when a referrer could not be read.  An undecodable object is left (verify
 * or the next read quarantines it), counted as corrupt: present, and referring to nothing.
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
 * Site profiles (<dir>/v1/profiles) are LRU items too, by their file time, counted in the bytes
 * of a shard but not in its entries ([Note: profiles in the size] in local_profiles.c): a gc
 * evicts them with the entries under the limit, and its stale temporaries and unheld old lock
 * files there are collected like a shard's.  Nothing refers to a profile: the sweep never takes one.
 *
 * Must not: treat a file vanishing under it as an error, remove a lock file someone holds, or
 * remove a fresh temporary file.
 *
 * Files: this one holds the scan, the LRU eviction, the quarantine's bound, the run and clear;
 * local_sweep.c the mark-and-sweep of an explicit gc; local_gc.h what the two share.
 */
#include "local_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fs.h"
#include "../common/internal.h"
#include "kcache/entry.h"
#include "local_gc.h"


/* The LRU order of a file's time: itself when not in the future; else before every sane time,
 * the furthest future first (a clock stepped back: such an entry has not been used since). */
static int64_t lru_order(int64_t mtime_ns, int64_t now_ns) {
    return mtime_ns <= now_ns ? mtime_ns : INT64_MIN + (INT64_MAX - mtime_ns) / 2;
}

/* Whether a temporary file is an orphan rather than a write in flight: old by its mtime.  The
 * one rule gc and clear share. */
static int temp_is_stale(const struct stat *st, int64_t now_s) { return now_s - (int64_t)st->st_mtime > TEMP_STALE_S; }

static int object_kind(const char *name) {
    const char *variant = name + KC_KEY_HEX_LEN + 1;
    return strcmp(variant, KC_VARIANT_IMAGE) == 0  ? OBJ_IMAGE
           : strcmp(variant, KC_VARIANT_UNIT) == 0 ? OBJ_UNIT
                                                   : OBJ_GRAPH;
}

/* A lock file or a temporary: removed when stale (a lock file only when nobody holds it).  1 when
 * `file` is one of those (handled), 0 when it is not. */
static int gc_lock_or_temp(gc_ctx *g, const char *dir, const char *file, const struct stat *st, int lock) {
    char path[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (lock) {
        if (g->now_s - (int64_t)st->st_mtime > TEMP_STALE_S) {
            int fd = kc_sys_open(path, O_RDWR | O_NOFOLLOW, 0);
            if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0) kc_sys_unlink(path); /* nobody holds it */
            if (fd >= 0) close(fd);
        }
        return 1;
    }
    if (!kc_fs_is_temp_name(file)) return 0;
    if (temp_is_stale(st, g->now_s) && kc_sys_unlink(path) == 0) g->temp_removed++;
    return 1;
}

/* One more item of the scan, counted in its shard's sizes. */
static int gc_add(gc_ctx *g, int shard, int kind, const char *file, const struct stat *st) {
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 1024;
        gc_item *p = kc_realloc(g->items, cap * sizeof *p);
        if (!p) return g->oom = 1, 1;
        g->items = p;
        g->cap = cap;
    }
    gc_item *it = &g->items[g->n++];
    memset(it, 0, sizeof *it);
    it->mtime_ns = mtime_ns_of(st);
    it->order_ns = lru_order(it->mtime_ns, g->now_ns);
    it->size = (uint64_t)st->st_size;
    it->shard = (uint8_t)shard;
    it->kind = (uint8_t)kind;
    it->state = ST_OPAQUE;
    snprintf(it->file, sizeof it->file, "%s", file);
    g->per[shard].bytes += st->st_size;
    if (kind != OBJ_PROFILE) g->per[shard].entries++;
    return 0;
}

static int gc_file(int shard, const char *dir, const char *file, const struct stat *st, void *ctx) {
    gc_ctx *g = ctx;
    char name[KC_NAME_MAX + 1];
    if (gc_lock_or_temp(g, dir, file, st, strncmp(file, ".lock.", 6) == 0)) return 0;
    if (!kc_local_entry_file_name_(file, name)) return 0;
    return gc_add(g, shard, object_kind(name), file, st);
}

/* The profiles folder: profiles are items; its stripe locks (".lock.xx"), the per-profile lock
 * files of older versions ("<16 hex>.profile.lock") and its temporaries are collected when stale. */
static int gc_profile_file(int shard, const char *dir, const char *file, const struct stat *st, void *ctx) {
    gc_ctx *g = ctx;
    size_t n = strlen(file);
    int lock = strncmp(file, ".lock.", 6) == 0 || (n == 29 && strcmp(file + 24, ".lock") == 0);
    if (gc_lock_or_temp(g, dir, file, st, lock)) return 0;
    return shard < 0 ? 0 : gc_add(g, shard, OBJ_PROFILE, file, st);
}

void kc_local_gc_item_path_(const kc_local *l, const gc_item *it, char *out, size_t cap) {
    if (it->kind == OBJ_PROFILE) snprintf(out, cap, "%s/profiles/%s", l->v1, it->file);
    else snprintf(out, cap, "%s/%02x/%s", l->v1, it->shard, it->file);
}

/* An object that left the directory (vanished, evicted, swept) leaves the recount too. */
void kc_local_gc_drop_(gc_ctx *g, gc_item *it, uint8_t state) {
    g->per[it->shard].bytes -= (int64_t)it->size;
    if (it->kind != OBJ_PROFILE) g->per[it->shard].entries--;
    it->state = state;
}

/*
 * [Note: parallel removals] A removal waits on the file system (on ext4, about 0.4-1 ms an
 * unlink on a busy disk): a gc that halved 10^5 entries one unlink at a time spent 49 s waiting,
 * 5 s working.  So a gc's removals run on up to GC_THREADS threads: the eviction takes the next
 * victims in LRU order — as many as bring the total to the limit if each removal succeeds — and
 * removes them together; what could not be removed (rewritten or used since the scan, or a failed
 * unlink) is made up by the next victims in order, so the set removed is the one the serial loop
 * removed.  The sweep removes each kind together (graph entries, then unit records, then images:
 * one kind is done before the next starts, as [Note: two levels] needs).  A thread only checks and
 * removes one file (lstat, unlink) and writes its item's result; the cleaner's accounting (drop,
 * counters, the report, messages) is done after, on the calling thread, in order.  Fewer than
 * PAR_MIN removals, or threads that cannot be started, run on the calling thread alone.
 */
#define GC_THREADS 8
#define PAR_MIN 64

typedef struct par_job {
    size_t n, next;
    void (*fn)(void *ctx, size_t i);
    void *ctx;
} par_job;

static void *par_worker(void *p) {
    par_job *j = p;
    for (size_t i; (i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->n;) j->fn(j->ctx, i);
    return NULL;
}

/* fn(ctx, i) for every i < n, on up to GC_THREADS threads; returns when all are done. */
void kc_local_gc_par_for_(size_t n, void (*fn)(void *ctx, size_t i), void *ctx) {
    par_job j = {n, 0, fn, ctx};
    pthread_t t[GC_THREADS - 1];
    int started = 0, want = n < PAR_MIN ? 0 : GC_THREADS - 1;
    while (started < want && pthread_create(&t[started], NULL, par_worker, &j) == 0) started++;
    par_worker(&j);
    for (int k = 0; k < started; k++) pthread_join(t[k], NULL);
}


/* ---- LRU eviction ---- */

static int by_order(const void *a, const void *b) {
    const gc_item *x = *(gc_item *const *)a, *y = *(gc_item *const *)b;
    return x->order_ns < y->order_ns ? -1 : x->order_ns > y->order_ns;
}

/* Evict v[i] unless it was rewritten or used since the scan; runs on a removal thread. */
static void evict_one(void *ctx, size_t i) {
    removal *x = ctx;
    gc_item *it = x->v[i];
    char path[PATH_MAX + 256];
    item_path(x->l, it, path, sizeof path);
    struct stat st;
    if (lstat(path, &st) != 0) { /* gone already */
        x->res[i] = R_GONE;
        return;
    }
    /* Skip one rewritten since the scan: it is no longer least recently used. */
    if (mtime_ns_of(&st) != it->mtime_ns) {
        x->res[i] = R_STAYS;
        return;
    }
    if (kc_sys_unlink(path) != 0) {
        x->res[i] = errno == ENOENT ? R_GONE : R_FAILED;
        x->err[i] = errno;
        return;
    }
    x->res[i] = R_REMOVED;
}

/* Evict every object the sweep keeps whose file time is before `cutoff_ns` (not used since; a
 * time in the future is not judged by age), as evict_lru does ([Note: parallel removals]); one
 * that cannot be removed is logged and left to the size limit. */
static int evict_aged(kc_local *l, gc_ctx *g, int64_t cutoff_ns, kc_gc_report *rep) {
    gc_item **v = kc_malloc((g->n ? g->n : 1) * sizeof *v);
    removal x = {l, g, v, kc_malloc(g->n ? g->n : 1), kc_malloc((g->n ? g->n : 1) * sizeof *x.err)};
    if (!v || !x.res || !x.err) {
        free(v), free(x.res), free(x.err);
        return kc_err(KC_ENOMEM, "gc: out of memory");
    }
    size_t m = 0;
    for (size_t i = 0; i < g->n; i++) {
        gc_item *it = &g->items[i];
        if (present(it) && it->garbage == G_NONE && it->mtime_ns < cutoff_ns && it->mtime_ns <= g->now_ns) v[m++] = it;
    }
    par_for(m, evict_one, &x);
    char path[PATH_MAX + 256];
    for (size_t k = 0; k < m; k++) {
        if (x.res[k] == R_FAILED) {
            item_path(l, v[k], path, sizeof path);
            kc_log(KC_LOG_STORE, "evicting %s (unused since before the age limit): %s", path, strerror(x.err[k]));
        } else if (x.res[k] == R_GONE) {
            drop(g, v[k], ST_GONE);
        } else if (x.res[k] == R_REMOVED) {
            rep->evicted++;
            kc_local_count(l, v[k]->shard, KC_STAT_EVICTIONS, 1);
            drop(g, v[k], ST_EVICTED);
        }
    }
    free(v), free(x.res), free(x.err);
    return KC_OK;
}

/* Evict the least recently used of the objects the sweep keeps until they hold at most
 * `max_size` bytes; *total: their bytes, before and after.  An error only when some could not
 * be removed and the directory stays over the limit.  Victims are removed in rounds on several
 * threads ([Note: parallel removals]). */
static int evict_lru(kc_local *l, gc_ctx *g, uint64_t max_size, uint64_t *total, kc_gc_report *rep) {
    uint64_t t = 0;
    size_t m = 0;
    gc_item **order = kc_malloc((g->n ? g->n : 1) * sizeof *order);
    removal x = {l, g, NULL, kc_malloc(g->n ? g->n : 1), kc_malloc((g->n ? g->n : 1) * sizeof *x.err)};
    if (!order || !x.res || !x.err) {
        free(order), free(x.res), free(x.err);
        return kc_err(KC_ENOMEM, "gc: out of memory");
    }
    for (size_t i = 0; i < g->n; i++)
        if (present(&g->items[i]) && g->items[i].garbage == G_NONE) order[m++] = &g->items[i], t += g->items[i].size;
    if (t > max_size) qsort(order, m, sizeof *order, by_order);
    uint64_t failed = 0;
    int first_errno = 0;
    char first_path[PATH_MAX + 256] = "", path[PATH_MAX + 256];
    for (size_t i = 0; i < m && t > max_size;) {
        /* This round's victims: the next in order that bring the total to the limit if all go. */
        size_t end = i;
        for (uint64_t left = t; end < m && left > max_size; end++) left -= order[end]->size;
        x.v = order + i;
        par_for(end - i, evict_one, &x);
        for (size_t k = 0; k < end - i; k++) {
            gc_item *it = x.v[k];
            if (x.res[k] == R_STAYS) continue;
            if (x.res[k] == R_FAILED) {
                item_path(l, it, path, sizeof path);
                kc_log(KC_LOG_STORE, "evicting %s: %s", path, strerror(x.err[k]));
                if (failed++ == 0) {
                    first_errno = x.err[k];
                    snprintf(first_path, sizeof first_path, "%s", path);
                }
                continue; /* the next least recently used goes instead */
            }
            if (x.res[k] == R_GONE) {
                drop(g, it, ST_GONE);
            } else {
                rep->evicted++;
                kc_local_count(l, it->shard, KC_STAT_EVICTIONS, 1);
                drop(g, it, ST_EVICTED);
            }
            t -= it->size;
        }
        i = end;
    }
    free(order);
    free(x.res);
    free(x.err);
    *total = t;
    if (t > max_size && failed)
        return kc_local_err_errno_(first_errno, 1,
                                   "gc: %llu entries could not be evicted, %llu bytes stay over the limit of %llu "
                                   "(first: removing '%s')",
                                   (unsigned long long)failed, (unsigned long long)(t - max_size),
                                   (unsigned long long)max_size, first_path);
    return KC_OK;
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
    DIR *d = kc_fs_opendir_nofollow(q); /* [Note: no links inside] (local_layout.c) */
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
        items[n].order_ns = lru_order(mtime_ns_of(&st), now_ns);
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

/* Write the recount: only the shards whose sizes drifted are rewritten (under their lock). */
static void recount(kc_local *l, gc_ctx *g) {
    for (int s = 0; s < KC_SHARDS; s++) {
        /* Our own unflushed size deltas are already in what we just counted. */
        __atomic_store_n(&l->delta[s][KC_STAT_BYTES], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&l->delta[s][KC_STAT_ENTRIES], 0, __ATOMIC_RELAXED);
        int64_t v[KC_STATS_SLOTS];
        kc_local_stats_read_(l, s, v);
        if (v[KC_STAT_BYTES] != g->per[s].bytes || v[KC_STAT_ENTRIES] != g->per[s].entries)
            kc_local_stats_update_(l, s, g->per[s].entries != 0 || g->per[s].bytes != 0, kc_local_set_sizes_,
                                   &g->per[s]);
    }
    kc_local_flush(l);
}

/* One gc: `sweep` adds the mark-and-sweep (the explicit gc); without it, LRU only (the
 * automatic cleanup after a put, which must stay cheap: it reads no object). */
static int gc_run(kc_local *l, uint64_t max_size, uint64_t older_than_s, int sweep_too, kc_gc_report *out) {
    kc_gc_report rep;
    memset(&rep, 0, sizeof rep);
    if (out) *out = rep;
    if (l->readonly) return kc_err(KC_EREADONLY, "the cache '%s' is read-only", l->root);
    if (max_size == 0) max_size = l->max_size;
    if (max_size == 0) max_size = UINT64_MAX; /* no limit: evict nothing (see the top of this file) */
    char lock[PATH_MAX];
    snprintf(lock, sizeof lock, "%s/gc.lock", l->v1);
    int rc = kc_fs_real_dir(l->v1); /* [Note: no links inside] (local_layout.c): no lock file beyond a linked v1/ */
    if (rc) return rc;
    int lfd = kc_sys_open(lock, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
    if (lfd < 0) return kc_local_err_errno_(errno, 1, "opening '%s'", lock);
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
    rc = kc_local_walk_shards_(l, gc_file, g);
    if (rc == KC_OK && !g->oom) rc = kc_local_walk_profiles_(l, gc_profile_file, g);
    if (g->oom) rc = kc_err(KC_ENOMEM, "gc: out of memory");
    if (rc == KC_OK) {
        for (size_t i = 0; i < g->n; i++) {
            rep.bytes_before += g->items[i].size;
            *(g->items[i].kind == OBJ_PROFILE ? &rep.profiles_before : &rep.entries_before) += 1;
        }
        rep.temp_removed = g->temp_removed;
        if (sweep_too && (rc = read_objects(l, g, &rep)) == KC_OK) mark(g); /* garbage is not counted as kept */
        uint64_t kept = 0;
        if (rc == KC_OK && older_than_s)
            rc = evict_aged(l, g,
                            older_than_s >= (uint64_t)(g->now_ns / 1000000000)
                                ? INT64_MIN
                                : g->now_ns - (int64_t)older_than_s * 1000000000,
                            &rep);
        if (rc == KC_OK) rc = evict_lru(l, g, max_size, &kept, &rep);
        if (rc != KC_ENOMEM && sweep_too) {
            mark(g); /* again: what refers to an evicted image dangles, what only evicted ones used is an orphan */
            int src = sweep(l, g, &rep);
            if (rc == KC_OK) rc = src;
        }
        for (int s = 0; s < KC_SHARDS; s++) {
            rep.entries_after += (uint64_t)g->per[s].entries;
            rep.bytes_after += (uint64_t)g->per[s].bytes;
        }
        for (size_t i = 0; i < g->n; i++)
            rep.profiles_after += g->items[i].kind == OBJ_PROFILE && present(&g->items[i]);
        if (rc != KC_ENOMEM) recount(l, g);
        typedef unsigned long long ull;
        kc_log(KC_LOG_STORE,
               "gc: %llu entries, %llu → %llu bytes, %llu evicted, %llu temp files, %llu stale, %llu "
               "dangling, %llu orphans removed, %llu corrupt left",
               (ull)rep.entries_before, (ull)rep.bytes_before, (ull)rep.bytes_after, (ull)rep.evicted,
               (ull)rep.temp_removed, (ull)rep.stale_removed, (ull)rep.dangling_removed, (ull)rep.orphans_removed,
               (ull)rep.corrupt);
    }
    free(g->items);
    free(g->refs);
    free(g->images);
    free(g);
    close(lfd);
    if (out) *out = rep;
    return rc;
}

int kc_local_gc(kc_local *l, uint64_t max_size, kc_gc_report *out) { return gc_run(l, max_size, 0, 1, out); }

int kc_local_gc_aged(kc_local *l, uint64_t max_size, uint64_t older_than_s, kc_gc_report *out) {
    return gc_run(l, max_size, older_than_s, 1, out);
}

int kc_local_gc_lru_(kc_local *l, uint64_t max_size, kc_gc_report *out) { return gc_run(l, max_size, 0, 0, out); }

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
    if (kc_sys_unlink(path) != 0 && errno != ENOENT) return kc_local_err_errno_(errno, 1, "removing '%s'", path);
    return 0;
}

int kc_local_clear(kc_local *l) {
    if (l->readonly) return kc_err(KC_EREADONLY, "the cache '%s' is read-only", l->root);
    kc_local_v1_(l, kc_local_now_(), true, NULL); /* this handle's next hit reads what it cleared */
    int64_t now_s = (int64_t)(kc_now_ns() / 1000000000ull);
    int rc = kc_local_walk_shards_(l, clear_file, &now_s);
    if (rc) return rc;
    char q[PATH_MAX], p[PATH_MAX + 256];
    snprintf(q, sizeof q, "%s/quarantine", l->v1);
    DIR *d = kc_fs_opendir_nofollow(q); /* [Note: no links inside] (local_layout.c) */
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
        kc_local_stats_update_(l, s, false, kc_local_set_sizes_, &zero);
    }
    return KC_OK;
}

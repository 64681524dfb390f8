/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/local_gc.h — what the local store's cleaner shares between its two files: local_gc.c
 * (the scan, the LRU eviction, the run) and local_sweep.c (the mark-and-sweep of an explicit gc).
 *
 * The one idea: one picture of the directory (gc_ctx: every object with its time, size, kind,
 * state and references) that the scan fills, the sweep judges and the eviction trims, and that
 * the recount is made from.  Only local_gc.c and local_sweep.c include it.
 */
#ifndef KC_STORE_LOCAL_GC_H
#define KC_STORE_LOCAL_GC_H

#include <stdint.h>
#include <sys/stat.h>

#include "local_impl.h"

/* What an object is, by its name's variant ([Note: two levels] in kcache/entry.h); the sweep
 * removes them in this order. */
enum {
    OBJ_GRAPH,
    OBJ_UNIT,
    OBJ_IMAGE,
    OBJ_PROFILE
}; /* a site profile: an LRU item only ([Note: profiles in the size]) */

/* What gc knows of an object: LIVE, of this format (a referrer's references read); OPAQUE, not
 * read (the LRU-only cleanup), undecodable or unreadable — present, refers to nothing known;
 * STALE, of another format version; EVICTED by this gc's LRU; GONE, swept or vanished. */
enum { ST_LIVE, ST_OPAQUE, ST_STALE, ST_EVICTED, ST_GONE };

/* Why the sweep removes an object. */
enum { G_NONE, G_STALE, G_DANGLING, G_ORPHAN };

typedef struct gc_ref {
    kc_key id;    /* the image referred to */
    int32_t item; /* its item, or -1: absent at the scan */
} gc_ref;

typedef struct gc_item {
    int64_t mtime_ns; /* the file's time, to see a rewrite or a use since the scan */
    int64_t order_ns; /* its LRU order: the time, or before every sane time when in the future */
    uint64_t size;
    uint32_t ref0, nrefs; /* its references: refs[ref0, ref0 + nrefs) */
    uint8_t shard, kind, state, garbage, marked;
    char file[KC_NAME_MAX + 8];
} gc_item;

typedef struct gc_ctx {
    gc_item *items;
    size_t n, cap;
    gc_ref *refs;
    size_t nref, refcap;
    gc_item **images; /* the image items, by name */
    size_t nimages;
    kc_local_sizes per[KC_SHARDS];
    uint64_t temp_removed;
    int64_t now_s, now_ns;
    int oom;
    int refs_unknown; /* a referrer could not be read: its images might look orphaned, so none is swept */
} gc_ctx;

static inline int64_t mtime_ns_of(const struct stat *st) {
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* Present in the directory: live, or read as nothing known. */
static inline int present(const gc_item *it) { return it->state == ST_LIVE || it->state == ST_OPAQUE; }

/* What a removal found; its errno when it failed. */
enum { R_REMOVED, R_GONE, R_STAYS, R_FAILED };

typedef struct removal {
    kc_local *l;
    gc_ctx *g;   /* read only while removals run */
    gc_item **v; /* the items to remove */
    uint8_t *res;
    int *err;
} removal;

/* ---- local_gc.c ---- */

/** The path of an object.  Callers: local_gc.c, local_sweep.c. */
void kc_local_gc_item_path_(const kc_local *l, const gc_item *it, char *out, size_t cap);
/** An object that left the directory (vanished, evicted, swept) leaves the recount too.  Callers: both. */
void kc_local_gc_drop_(gc_ctx *g, gc_item *it, uint8_t state);
/** fn(ctx, i) for every i < n on up to GC_THREADS threads ([Note: parallel removals]).  Callers: both. */
void kc_local_gc_par_for_(size_t n, void (*fn)(void *ctx, size_t i), void *ctx);
#define item_path kc_local_gc_item_path_
#define drop kc_local_gc_drop_
#define par_for kc_local_gc_par_for_

/* ---- local_sweep.c (callers: local_gc.c's gc_run) ---- */

/** Read every graph entry's and unit record's references and every object's format version. */
int kc_local_gc_read_objects_(const kc_local *l, gc_ctx *g, kc_gc_report *rep);
/** Mark what live referrers use; judge the garbage (stale, dangling, orphan). */
void kc_local_gc_mark_(gc_ctx *g);
/** Remove the garbage: graph entries first, then unit records, then images. */
int kc_local_gc_sweep_(kc_local *l, gc_ctx *g, kc_gc_report *rep);
#define read_objects kc_local_gc_read_objects_
#define mark kc_local_gc_mark_
#define sweep kc_local_gc_sweep_

#endif

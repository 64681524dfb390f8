/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/local_backend.c — the local directory seen through the backend interface (kcache/sys/store.h):
 * its table of functions, which the tiers call like any other back end's, and its walk as store items.
 *
 * The one idea: the local store's own calls (local.c) do the work; each slot here is one call of
 * them, so the tiers never know which back end is the local one but by its KC_TIER_LOCAL flag.
 * Callers: cache/cache.c (kc_local_backend, to add the directory as the first tier), gc and the
 * CLI's listings (kc_local_iterate).  Must not: add behaviour of its own (a slot is a forward).
 */
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "local_impl.h"

typedef struct iter_ctx {
    kc_store_iter_cb cb;
    void *ctx;
} iter_ctx;

static int iter_file(int shard, const char *dir, const char *file, const struct stat *st, void *ctx) {
    (void)shard;
    iter_ctx *ic = ctx;
    char name[KC_NAME_MAX + 1], path[PATH_MAX + 256];
    if (!kc_local_entry_file_name_(file, name)) return 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    kc_store_item it = {name, (uint64_t)st->st_size, (int64_t)st->st_mtime, path};
    return ic->cb(&it, ic->ctx);
}

int kc_local_iterate(kc_local *l, kc_store_iter_cb cb, void *ctx) {
    iter_ctx ic = {cb, ctx};
    return kc_local_walk_shards_(l, iter_file, &ic);
}

/* ---- as a backend table ---- */

static int be_get(kc_store_backend *b, const char *n, void **o, size_t *len) { return kc_local_get(b->ctx, n, o, len); }
static int be_get_into(kc_store_backend *b, const char *n, void *buf, size_t cap, void **o, size_t *len) {
    return kc_local_get_into(b->ctx, n, buf, cap, o, len);
}
static int be_peek(kc_store_backend *b, const char *n, void **o, size_t *len) {
    return kc_local_read(b->ctx, n, o, len);
}
static int be_put(kc_store_backend *b, const char *n, const void *d, size_t len) {
    return kc_local_put(b->ctx, n, d, len);
}
static int be_put_foreign(kc_store_backend *b, const char *n, const void *d, size_t len) {
    return kc_local_put_foreign(b->ctx, n, d, len);
}
static int be_put_origin(kc_store_backend *b, const char *n, const void *d, size_t len, const char *origin) {
    return kc_local_put_origin(b->ctx, n, d, len, origin);
}
static int be_is_own(kc_store_backend *b, const char *n) { return kc_local_is_own(b->ctx, n); }
static int be_exists(kc_store_backend *b, const char *n) { return kc_local_exists(b->ctx, n); }
static int be_remove(kc_store_backend *b, const char *n) { return kc_local_remove(b->ctx, n); }
static int be_iterate(kc_store_backend *b, kc_store_iter_cb cb, void *ctx) { return kc_local_iterate(b->ctx, cb, ctx); }
static int be_quarantine(kc_store_backend *b, const char *n) { return kc_local_quarantine(b->ctx, n); }
static void be_free(kc_store_backend *b) { kc_local_free(b->ctx); }

kc_store_backend *kc_local_backend(kc_local *l) {
    l->backend.get = be_get;
    l->backend.put = be_put;
    l->backend.put_foreign = be_put_foreign;
    l->backend.is_own = be_is_own;
    l->backend.exists = be_exists;
    l->backend.remove = be_remove;
    l->backend.touch = NULL;
    l->backend.iterate = be_iterate;
    l->backend.quarantine = be_quarantine;
    l->backend.free = be_free;
    l->backend.get_first = NULL;
    l->backend.peek = be_peek;
    l->backend.state = NULL;
    l->backend.get_many = NULL;
    l->backend.put_origin = be_put_origin;
    l->backend.get_into = be_get_into;
    return &l->backend;
}

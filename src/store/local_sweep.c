/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/local_sweep.c — the mark-and-sweep of an explicit gc ([Note: two levels] in
 * kcache/entry.h; the rules are at the top of local_gc.c): read every object's format version
 * and every referrer's references, mark what a live referrer uses, and remove the garbage —
 * stale objects, dangling referrers, orphan images — graph entries first, images last.
 *
 * The one idea: the store never learns what a graph is: references come through the entry part
 * (kc_entry_decode_as, kc_entry_images, kc_unit_entry_read), and nothing is removed on a stale
 * judgement (a file rewritten or used since the scan, or whose missing image came back, stays).
 * Callers: local_gc.c's gc_run only (through local_gc.h).  Must not: sweep an orphan when some
 * referrer could not be read, or sweep a site profile.
 */
#include "local_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fs.h"
#include "../common/internal.h"
#include "kcache/entry.h"
#include "local_gc.h"

#define ORPHAN_GRACE_S TEMP_STALE_S /* an image younger than this may be a write in flight: never an orphan */
#define HEADER_PEEK 96              /* an object's fixed header: what kc_entry_peek_version reads */

static int image_by_name(const void *a, const void *b) {
    return strncmp((*(gc_item *const *)a)->file, (*(gc_item *const *)b)->file, KC_KEY_HEX_LEN);
}

static int image_by_hex(const void *hex, const void *b) {
    return strncmp(hex, (*(gc_item *const *)b)->file, KC_KEY_HEX_LEN);
}

/* The item of image `id` as the scan found it, or -1. */
static int32_t find_image(const gc_ctx *g, const kc_key *id) {
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(id, hex);
    gc_item *const *p = g->nimages ? bsearch(hex, g->images, g->nimages, sizeof *g->images, image_by_hex) : NULL;
    return p ? (int32_t)(*p - g->items) : -1;
}

static int index_images(gc_ctx *g) {
    g->images = kc_malloc((g->n ? g->n : 1) * sizeof *g->images);
    if (!g->images) return kc_err(KC_ENOMEM, "gc: out of memory");
    for (size_t i = 0; i < g->n; i++)
        if (g->items[i].kind == OBJ_IMAGE) g->images[g->nimages++] = &g->items[i];
    qsort(g->images, g->nimages, sizeof *g->images, image_by_name);
    return KC_OK;
}

static int add_refs(gc_ctx *g, gc_item *it, const kc_image_ref *refs, size_t n) {
    if (n > UINT32_MAX - g->nref) return kc_err(KC_ENOMEM, "gc: too many references");
    if (n > g->refcap - g->nref) {
        size_t cap = g->refcap ? g->refcap : 1024;
        while (n > cap - g->nref) cap *= 2;
        gc_ref *p = kc_realloc(g->refs, cap * sizeof *p);
        if (!p) return kc_err(KC_ENOMEM, "gc: out of memory");
        g->refs = p;
        g->refcap = cap;
    }
    it->ref0 = (uint32_t)g->nref;
    it->nrefs = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        g->refs[g->nref].id = refs[i].id;
        g->refs[g->nref++].item = find_image(g, &refs[i].id);
    }
    return KC_OK;
}

/* A graph entry's or unit record's references, read through the entry part (the store never
 * learns what a graph is).  A graph entry without IMAGES refers to nothing. */
static int read_refs(gc_ctx *g, gc_item *it, const kc_entry *e) {
    if (it->kind == OBJ_UNIT) {
        kc_image_ref ref;
        int rc = kc_unit_entry_read(e, &ref, NULL, 0, NULL);
        return rc ? rc : add_refs(g, it, &ref, 1);
    }
    kc_image_ref *refs = NULL;
    size_t n = 0;
    int rc = kc_entry_images(e, &refs, &n);
    if (rc == KC_OK) rc = add_refs(g, it, refs, n);
    else if (rc == KC_MISS) rc = KC_OK;
    free(refs);
    return rc;
}

/* Read an image's fixed header only (its bytes are verify's and the reader's to check); one
 * read of a regular file's first bytes is whole. */
static int read_header(const char *path, uint8_t *h, size_t *len) {
    int fd = kc_sys_open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
    if (fd < 0) return errno == ENOENT ? KC_MISS : KC_EIO;
    ssize_t r = kc_fs_fd_is_regular(fd) ? kc_sys_read(fd, h, HEADER_PEEK) : -1;
    close(fd);
    *len = r > 0 ? (size_t)r : 0;
    return r < 0 ? KC_EIO : KC_OK;
}

/* Read what gc must know of an object: its format version and, for a graph entry or unit
 * record of this format, the images it refers to.  KC_ENOMEM stops the gc; anything else
 * found is a state. */
static int read_object(const kc_local *l, gc_ctx *g, gc_item *it, kc_gc_report *rep) {
    char path[PATH_MAX + 256];
    item_path(l, it, path, sizeof path);
    if (it->kind == OBJ_IMAGE) {
        uint8_t h[HEADER_PEEK];
        size_t n;
        int rc = read_header(path, h, &n);
        if (rc == KC_MISS) return drop(g, it, ST_GONE), KC_OK;
        int v = rc ? -1 : kc_entry_peek_version(h, n);
        if (rc == KC_OK && v < 0) rep->corrupt++;
        it->state = v < 0 ? ST_OPAQUE : v != KC_ENTRY_FORMAT_VERSION ? ST_STALE : ST_LIVE;
        return KC_OK;
    }
    void *data = NULL;
    size_t len = 0;
    int rc = kc_fs_read_file(path, KC_ENTRY_MAX_BYTES, &data, &len, NULL);
    if (rc == KC_MISS) return drop(g, it, ST_GONE), KC_OK;
    if (rc == KC_ENOMEM) return rc;
    if (rc) { /* unreadable now (an I/O error): what it refers to is unknown */
        rep->corrupt += rc == KC_ECORRUPT;
        g->refs_unknown |= rc != KC_ECORRUPT;
        return KC_OK; /* ST_OPAQUE */
    }
    int v = kc_entry_peek_version(data, len);
    if (v >= 0 && v != KC_ENTRY_FORMAT_VERSION) {
        free(data);
        return it->state = ST_STALE, KC_OK;
    }
    char name[KC_NAME_MAX + 1], hex[KC_KEY_HEX_LEN + 1];
    kc_local_entry_file_name_(it->file, name);
    memcpy(hex, name, KC_KEY_HEX_LEN);
    hex[KC_KEY_HEX_LEN] = '\0';
    kc_key key;
    kc_entry *e = NULL;
    rc = kc_key_from_hex(&key, hex);
    if (rc == KC_OK) rc = kc_entry_decode_as(&e, data, len, &key, name + KC_KEY_HEX_LEN + 1);
    free(data);
    if (rc == KC_OK) rc = read_refs(g, it, e);
    kc_entry_free(e);
    if (rc == KC_ENOMEM) return rc;
    if (rc) kc_log(KC_LOG_STORE, "gc: %s is corrupt (left for verify or a read): %s", name, kc_error_last()->message);
    rep->corrupt += rc != KC_OK;
    it->state = rc ? ST_OPAQUE : ST_LIVE;
    return KC_OK;
}


/* Mark every image a live referrer refers to; one whose image is not present is dangling.  Garbage:
 * stale objects, dangling referrers, images of this format unmarked and older than the grace. */
void kc_local_gc_mark_(gc_ctx *g) {
    for (size_t i = 0; i < g->n; i++) g->items[i].marked = 0, g->items[i].garbage = G_NONE;
    for (size_t i = 0; i < g->n; i++) {
        gc_item *it = &g->items[i];
        if (it->state == ST_STALE) it->garbage = G_STALE;
        if (it->kind == OBJ_IMAGE || it->state != ST_LIVE) continue;
        const gc_ref *r = g->refs + it->ref0;
        int whole = 1;
        for (uint32_t k = 0; k < it->nrefs; k++)
            if (r[k].item < 0 || !present(&g->items[r[k].item])) whole = 0;
        if (!whole) it->garbage = G_DANGLING;
        for (uint32_t k = 0; k < it->nrefs; k++) /* a dangling one too: it may stay (sweep_one) */
            if (r[k].item >= 0) g->items[r[k].item].marked = 1;
    }
    if (g->refs_unknown) return;
    for (size_t i = 0; i < g->n; i++) {
        gc_item *it = &g->items[i];
        if (it->kind == OBJ_IMAGE && it->state == ST_LIVE && !it->marked &&
            g->now_s - it->mtime_ns / 1000000000 > ORPHAN_GRACE_S)
            it->garbage = G_ORPHAN;
    }
}

/* Remove garbage item v[i] unless it was rewritten or used since the scan, or (dangling) an image
 * it lacked was stored since; runs on a removal thread ([Note: parallel removals]). */
static void sweep_one(void *ctx, size_t i) {
    removal *x = ctx;
    gc_item *it = x->v[i];
    char path[PATH_MAX + 256];
    item_path(x->l, it, path, sizeof path);
    struct stat st;
    x->res[i] = R_STAYS;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) x->res[i] = R_GONE;
        return;
    }
    if (mtime_ns_of(&st) != it->mtime_ns) return; /* rewritten or used since the scan: it stays */
    for (uint32_t k = 0; it->garbage == G_DANGLING && k < it->nrefs; k++) {
        const gc_ref *r = &x->g->refs[it->ref0 + k];
        char name[KC_NAME_MAX + 1], img[PATH_MAX];
        if (r->item >= 0) continue; /* seen by the scan, and stale, evicted or vanished since */
        kc_store_name(&r->id, KC_VARIANT_IMAGE, name);
        kc_local_path(x->l, name, img, sizeof img);
        if (lstat(img, &st) == 0) return; /* its image was stored since the scan: not dangling */
    }
    if (kc_sys_unlink(path) != 0) {
        x->res[i] = errno == ENOENT ? R_GONE : R_FAILED;
        x->err[i] = errno;
        return;
    }
    x->res[i] = R_REMOVED;
}

/* Remove the garbage: graph entries first, then unit records, then images, each kind done before
 * the next starts, so no reader finds a graph whose image the sweep took while the graph stays. */
int kc_local_gc_sweep_(kc_local *l, gc_ctx *g, kc_gc_report *rep) {
    removal x = {l, g, kc_malloc((g->n ? g->n : 1) * sizeof *x.v), kc_malloc(g->n ? g->n : 1),
                 kc_malloc((g->n ? g->n : 1) * sizeof *x.err)};
    int rc = x.v && x.res && x.err ? KC_OK : kc_err(KC_ENOMEM, "gc: out of memory");
    for (int kind = OBJ_GRAPH; rc == KC_OK && kind <= OBJ_IMAGE; kind++) {
        size_t m = 0;
        for (size_t i = 0; i < g->n; i++) {
            gc_item *it = &g->items[i];
            if (it->kind == kind && it->garbage != G_NONE && (it->state == ST_LIVE || it->state == ST_STALE))
                x.v[m++] = it;
        }
        par_for(m, sweep_one, &x);
        for (size_t i = 0; i < m; i++) {
            gc_item *it = x.v[i];
            if (x.res[i] == R_GONE) drop(g, it, ST_GONE);
            if (x.res[i] == R_FAILED) {
                char path[PATH_MAX + 256];
                item_path(l, it, path, sizeof path);
                kc_log(KC_LOG_STORE, "gc: removing %s: %s", path, strerror(x.err[i]));
            }
            if (x.res[i] != R_REMOVED) continue;
            drop(g, it, ST_GONE);
            if (it->garbage == G_STALE) rep->stale_removed++;
            else if (it->garbage == G_DANGLING) rep->dangling_removed++;
            else rep->orphans_removed++;
        }
    }
    free(x.v);
    free(x.res);
    free(x.err);
    return rc;
}

/* Read every graph entry's and unit record's references and every object's format version. */
int kc_local_gc_read_objects_(const kc_local *l, gc_ctx *g, kc_gc_report *rep) {
    int rc = index_images(g);
    for (size_t i = 0; rc == KC_OK && i < g->n; i++)
        if (g->items[i].kind != OBJ_PROFILE)
            rc = read_object(l, g, &g->items[i], rep); /* a profile refers to nothing */
    return rc == KC_ENOMEM ? kc_err(KC_ENOMEM, "gc: out of memory") : rc;
}

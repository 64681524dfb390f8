/* SPDX-License-Identifier: Apache-2.0 */
/*
 * local_batch.c — many puts into the local directory made durable by a few syncs of the file
 * system ([Note: batched puts]): every temporary written, one sync, then group by group the
 * renames and one sync.
 *
 * The one idea: no referrer is renamed before the images it needs are durable under their
 * names, and nothing is renamed after a failed sync.
 * Callers: bundle import (bundle/bundle.c) through local.h.  Must not: sync per object, or leave
 * a temporary behind when the process itself fails.
 */
#include "local_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fs.h"
#include "../common/internal.h"

/*
 * [Note: batched puts] An import made each object durable on its own, as kc_local_put does
 * (fsync the file, rename, fsync the folder): two syncs per object, nearly all of an import's
 * time (300 entries: 0.5-1.7 s on ext4).  A batch writes every object to its temporary file
 * first, with no sync, then commits: one syncfs() makes every temporary's bytes durable; then,
 * group by group (a fence ends a group: an import fences after its images), the group's renames
 * and one syncfs() that makes those names durable before the next group's first rename.  An
 * import is three syncs whatever its size, and reports success only after the last.  What a
 * crash leaves, at any instant (a killed process or a lost machine): each object's old file or
 * its new one, whole (its bytes were durable before its name appeared, and a rename is atomic);
 * no referrer whose images are not durable under their names (the fence's sync comes before the
 * first referrer is renamed: POSIX orders no two renames, so one sync between the levels is
 * what [Note: two levels] needs, not one per object); and at worst temporary files, named as
 * every put's (".tmp.*"), which gc collects once stale (a failure inside the process removes
 * them at once).  Objects keep [Note: provenance]: each put says its mode (and origin record).
 * The price: syncfs() writes back everything dirty on the cache's file system, other programs'
 * files too, so on a busy disk a commit may wait for them; never less safe.  A failed sync
 * fails the commit (syncfs reports writeback errors since Linux 5.8): nothing is renamed after it.
 */
typedef struct batch_item {
    char name[KC_NAME_MAX + 1];
    char tmp[KC_NAME_MAX + 80]; /* the temporary's file name, in the object's shard */
    uint32_t group;
    uint8_t renamed;
} batch_item;

struct kc_local_batch {
    kc_local *l;
    batch_item *v;
    size_t n, cap;
    uint32_t group;
};

static void batch_tmp_path(const kc_local *l, const batch_item *it, char *out, size_t cap) {
    snprintf(out, cap, "%s/%.2s/%s", l->v1, it->name, it->tmp);
}

int kc_local_batch_begin(kc_local *l, kc_local_batch **out) {
    *out = NULL;
    if (l->readonly) return kc_err(KC_EREADONLY, "the cache '%s' is read-only", l->root);
    kc_local_batch *b = kc_calloc(1, sizeof *b);
    if (!b) return kc_err(KC_ENOMEM, "out of memory");
    b->l = l;
    *out = b;
    return KC_OK;
}

int kc_local_batch_put(kc_local_batch *b, const char *name, const void *data, size_t len, unsigned mode,
                       const char *origin) {
    static unsigned long seq;
    kc_local *l = b->l;
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        batch_item *p = kc_realloc(b->v, cap * sizeof *p);
        if (!p) return kc_err(KC_ENOMEM, "out of memory");
        b->v = p;
        b->cap = cap;
    }
    batch_item *it = &b->v[b->n];
    memset(it, 0, sizeof *it);
    snprintf(it->name, sizeof it->name, "%s", name);
    snprintf(it->tmp, sizeof it->tmp, ".tmp.%s" ENTRY_SUFFIX ".%ld.b%lx.%lx", name, (long)getpid(),
             __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED), (unsigned long)(kc_mono_ns() & 0xffffffu));
    it->group = b->group;
    char dir[PATH_MAX], tmp[PATH_MAX + 256];
    snprintf(dir, sizeof dir, "%s/%.2s", l->v1, name);
    batch_tmp_path(l, it, tmp, sizeof tmp);
    if ((rc = kc_local_real_shard_(l, name)) == KC_OK) { /* [Note: no links inside] */
        int fd = kc_sys_open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
        if (fd < 0) {
            rc = kc_err_errno(errno, "creating '%s'", tmp);
        } else {
            rc = kc_fs_write_all(fd, data, len, tmp);
            if (rc == KC_OK && origin) kc_local_origin_set_(fd, tmp, origin); /* [Note: provenance record] */
            if (rc == KC_OK && mode != 0600 && fchmod(fd, (mode_t)mode) != 0)
                rc = kc_err_errno(errno, "chmod of '%s'", tmp);
            if (close(fd) != 0 && rc == KC_OK) rc = kc_err_errno(errno, "closing '%s'", tmp);
            if (rc != KC_OK) unlink(tmp); /* not a fault point: cleanup must not be made to fail */
        }
        rc = kc_local_write_status_(rc, dir);
    }
    if (rc != KC_OK) {
        kc_local_count(l, kc_store_name_shard(name), KC_STAT_STORE_ERRORS, 1);
        return rc;
    }
    b->n++;
    return KC_OK;
}

void kc_local_batch_fence(kc_local_batch *b) {
    if (b && b->n && b->v[b->n - 1].group == b->group) b->group++;
}

/* Remove what was not renamed, and the batch. */
static void batch_free(kc_local_batch *b) {
    char tmp[PATH_MAX + 256];
    for (size_t i = 0; i < b->n; i++) {
        if (b->v[i].renamed) continue;
        batch_tmp_path(b->l, &b->v[i], tmp, sizeof tmp);
        unlink(tmp); /* not a fault point */
    }
    free(b->v);
    free(b);
}

void kc_local_batch_abort(kc_local_batch *b) {
    if (b) batch_free(b);
}

static int batch_sync(kc_local *l, int fd) {
    if (kc_sys_syncfs(fd) == 0) return KC_OK;
    return kc_local_err_errno_(errno, 1, "syncing the file system of '%s'", l->v1);
}

/* Rename one temporary over its name, counted as a put; *added: the bytes it adds. */
static int batch_rename(kc_local *l, batch_item *it, int64_t *added) {
    char path[PATH_MAX], tmp[PATH_MAX + 256], dir[PATH_MAX];
    kc_local_path(l, it->name, path, sizeof path);
    batch_tmp_path(l, it, tmp, sizeof tmp);
    int shard = kc_store_name_shard(it->name);
    struct stat old, st;
    bool had = lstat(path, &old) == 0;
    if (lstat(tmp, &st) != 0 || kc_sys_rename(tmp, path) != 0) {
        snprintf(dir, sizeof dir, "%s/%.2s", l->v1, it->name);
        kc_local_count(l, shard, KC_STAT_STORE_ERRORS, 1);
        return kc_local_write_status_(kc_err_errno(errno, "renaming '%s' to '%s'", tmp, path), dir);
    }
    it->renamed = 1;
    int64_t d = (int64_t)st.st_size - (had ? (int64_t)old.st_size : 0);
    kc_local_count(l, shard, KC_STAT_PUTS, 1);
    kc_local_count(l, shard, KC_STAT_BYTES, d);
    if (!had) kc_local_count(l, shard, KC_STAT_ENTRIES, 1);
    *added += d;
    return KC_OK;
}

int kc_local_batch_commit(kc_local_batch *b, size_t *renamed) {
    if (renamed) *renamed = 0;
    if (!b) return KC_OK;
    kc_local *l = b->l;
    int rc = KC_OK;
    size_t done = 0;
    int64_t added = 0;
    if (b->n) {
        int fd = open(l->v1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        rc = fd < 0 ? kc_local_err_errno_(errno, 0, "opening '%s'", l->v1)
                    : batch_sync(l, fd); /* every temporary's bytes */
        for (size_t i = 0; rc == KC_OK && i < b->n;) {
            uint32_t group = b->v[i].group;
            for (; rc == KC_OK && i < b->n && b->v[i].group == group; i++)
                if ((rc = batch_rename(l, &b->v[i], &added)) == KC_OK) done++;
            if (rc == KC_OK) rc = batch_sync(l, fd); /* the group's names, before the next group's first */
        }
        if (fd >= 0) close(fd);
    }
    batch_free(b);
    if (done) kc_local_flush(l);
    if (done && rc == KC_OK)
        kc_local_maybe_cleanup_(l, added); /* after a failure its messages would replace the error's */
    if (renamed) *renamed = done;
    return rc;
}

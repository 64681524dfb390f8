/* SPDX-License-Identifier: Apache-2.0 */
/*
 * local.c — the local directory store: atomic puts, read()-only gets, per-shard counters
 * shared by every process, and approximate-LRU eviction by one cleaner at a time.  This
 * file holds open, put/remove, quarantine, compile locks and iteration; the reads (get) are in
 * local_hit.c, the backend table in local_backend.c, the counters in local_stats.c, the cleaner
 * in local_gc.c, the directory check in safedir.c, the folders in local_layout.c, the provenance
 * record in local_provenance.c, batched puts in local_batch.c (local_impl.h says what they share).
 * The front door and the tiers use it through local.h.
 *
 * The one idea: the file system is the only shared state.  An entry becomes visible by a
 * rename (see common/fs.h), so any number of processes can put and get the same names at
 * once; a hit refreshes the file's mtime, which is the LRU clock; counters live in memory
 * per shard and are added into the shard's stats file under flock now and then, so a hit
 * costs no extra write.  Sizes in the stats files are approximate between two gcs — a gc
 * recounts them exactly from the directory.
 *
 * Must not: interpret entry bytes (the front door validates them), mmap, or treat a file
 * vanishing under it (a concurrent gc or clear) as an error.
 */
#include "local_impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "../common/fs.h"
#include "../common/internal.h"

/* ---- status codes ---- */

/*
 * [Note: store status codes]
 * KC_EPERM is a safety refusal (an unsafe directory, a path escape; a bad MAC or signature is
 * KC_EUNTRUSTED): a caller may
 * stop trusting the cache on it.  A directory that merely refuses writes — mode 0500, a
 * read-only mount, KCACHE_READONLY — is not that: its writes fail with KC_EREADONLY, and a
 * failure that is not read-only-ness is KC_EIO.  common/error.c maps EROFS to KC_EREADONLY and
 * EACCES/EPERM to KC_EIO for everyone (it cannot tell a write from a read); the store maps errno
 * itself (kc_local_err_errno_) and makes what common/fs.c returns for a write in a directory
 * that refuses writes KC_EREADONLY (kc_local_write_status_).  A directory found
 * unwritable at open is opened read-only: its lookups still count, in memory
 * (local_stats.c), and kc_cache_mode says KC_CACHE_READONLY.
 */

int kc_local_err_errno_(int err, int writing, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (err == EROFS || (err == EACCES && writing))
        return kc_err(KC_EREADONLY, "%s: %s (the directory refuses writes)", what, strerror(err));
    if (err == EACCES || err == EPERM) return kc_err(KC_EIO, "%s: %s", what, strerror(err));
    return kc_err_errno(err, "%s", what);
}

/* Whether `dir` refuses writes to us (mode, ACL, a read-only mount); root passes mode bits. */
static bool dir_refuses_writes(const char *dir) {
    return faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0 && (errno == EACCES || errno == EROFS);
}

int kc_local_write_status_(int rc, const char *dir) {
    if (rc != KC_EPERM && rc != KC_EIO && rc != KC_EREADONLY) return rc;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", kc_error_last()->message);
    if (dir_refuses_writes(dir)) return kc_err(KC_EREADONLY, "%s (the directory refuses writes)", msg);
    return kc_err(KC_EIO, "%s", msg);
}

/* ---- names and paths ---- */

const char *kc_local_root(const kc_local *l) { return l->root; }

bool kc_local_readonly(const kc_local *l, bool *found) {
    if (found) *found = l->found_readonly;
    return l->readonly;
}

void kc_local_path(const kc_local *l, const char *name, char *out, size_t cap) {
    /* "<v1>/<2 hex>/<name>.kce" by copies where it fits (every lookup builds two), else snprintf's truncation */
    size_t dl = strlen(l->v1), nl = strlen(name), sl = sizeof ENTRY_SUFFIX - 1;
    if (nl < 2 || dl + 4 + nl + sl >= cap) {
        snprintf(out, cap, "%s/%.2s/%s" ENTRY_SUFFIX, l->v1, name, name);
        return;
    }
    char *p = out;
    memcpy(p, l->v1, dl), p += dl, *p++ = '/';
    memcpy(p, name, 2), p += 2, *p++ = '/';
    memcpy(p, name, nl), p += nl;
    memcpy(p, ENTRY_SUFFIX, sl + 1);
}

static void shard_dir(const kc_local *l, int shard, char *out, size_t cap) {
    snprintf(out, cap, "%s/%02x", l->v1, shard);
}

/* ---- open / free ---- */

/* A directory that refuses writes is a read-only cache ([Note: store status codes]). */
static void notice_readonly(kc_local *l) {
    struct stat st;
    bool have_v1 = lstat(l->v1, &st) == 0;
    if (dir_refuses_writes(have_v1 ? l->v1 : l->root)) {
        l->readonly = l->found_readonly = true;
        kc_log(KC_LOG_STORE, "%s refuses writes: opened read-only (counts are kept in this process)",
               have_v1 ? l->v1 : l->root);
    }
}

/* Another user's directory that refuses us writes: we can only read it, so we open it as a reader
 * ([Note: a reader of another's cache] in safedir.c), not refuse it as a writer. */
static bool foreign_unwritable(const char *root, const struct stat *st) {
    return S_ISDIR(st->st_mode) && st->st_uid != geteuid() && dir_refuses_writes(root);
}

int kc_local_open(kc_local **out, const char *dir, uint64_t max_size, unsigned flags) {
    *out = NULL;
    if (!dir || !*dir) return kc_err(KC_EINVAL, "cache directory is empty");
    if (strlen(dir) > PATH_MAX - 128) return kc_err(KC_EINVAL, "cache directory path is too long");
    kc_local *l = kc_calloc(1, sizeof *l);
    if (!l) return kc_err(KC_ENOMEM, "opening cache: out of memory");
    snprintf(l->root, sizeof l->root, "%s", dir);
    size_t n = strlen(l->root);
    while (n > 1 && l->root[n - 1] == '/') l->root[--n] = '\0';
    snprintf(l->v1, sizeof l->v1, "%s/v1", l->root);
    l->max_size = max_size;
    l->readonly = (flags & KC_OPEN_READONLY) != 0;
    pthread_mutex_init(&l->flush_mu, NULL);
    l->last_flush_ns = kc_mono_ns();
    int rc = KC_OK;
    struct stat st;
    bool exists = lstat(l->root, &st) == 0;
    if (!exists && !l->readonly) rc = kc_local_write_status_(kc_fs_mkdirs(l->root, 0700), l->root);
    if (exists && !l->readonly && foreign_unwritable(l->root, &st)) { /* [Note: a reader of another's cache] */
        l->readonly = l->found_readonly = true;
        kc_log(KC_LOG_STORE, "%s is uid %u's and refuses our writes: opened read-only", l->root, (unsigned)st.st_uid);
    }
    if (rc == KC_OK && (exists || !l->readonly) && !(flags & KC_OPEN_ALLOW_UNSAFE_DIR))
        rc = kc_local_dir_check_(l->root, l->found_readonly ? KC_DIR_FOUND_READER
                                          : l->readonly     ? KC_DIR_READER
                                                            : KC_DIR_WRITER); /* [Note: safe directories] (safedir.c) */
    if (rc == KC_OK && exists && !(flags & KC_OPEN_ALLOW_UNSAFE_DIR)) {   /* a group's shared cache: as asked */
        l->owner = st.st_uid;
        l->foreign = st.st_uid != geteuid();
    }
    if (rc == KC_OK && !l->readonly && exists) notice_readonly(l);
    if (rc == KC_OK && !l->readonly) /* no memo where others may write: [Note: the layout vouched] */
        rc = kc_local_make_layout_(l, !(flags & KC_OPEN_ALLOW_UNSAFE_DIR) && !l->foreign);
    if (rc != KC_OK) {
        kc_err_prefix(rc, "opening cache directory '%s'", l->root);
        pthread_mutex_destroy(&l->flush_mu);
        free(l);
        return rc;
    }
    l->v1fd = open(l->v1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC); /* [Note: the folder held open] */
    l->v1_checked = (int64_t)kc_local_now_();
    pthread_mutex_init(&l->v1_mu, NULL);
    l->backend.version = KC_STORE_BACKEND_VERSION;
    l->backend.name = "local";
    l->backend.ctx = l;
    *out = l;
    return KC_OK;
}

void kc_local_set_max_size(kc_local *l, uint64_t max_size) {
    if (l) l->max_size = max_size;
}

void kc_local_free(kc_local *l) {
    if (!l) return;
    kc_local_flush(l);
    if (l->v1fd >= 0) close(l->v1fd);
    for (size_t i = 0; i < l->nv1_old; i++) close(l->v1_old[i]);
    pthread_mutex_destroy(&l->v1_mu);
    pthread_mutex_destroy(&l->flush_mu);
    free(l);
}

/* ---- get / put / remove ---- */

void kc_local_maybe_cleanup_(kc_local *l, int64_t added) {
    if (l->max_size == 0) return;
    uint64_t now = kc_mono_ns();
    int64_t total;
    if (now - __atomic_load_n(&l->approx_at_ns, __ATOMIC_RELAXED) > FLUSH_INTERVAL_NS) {
        kc_stats s;
        kc_local_stats(l, &s);
        total = (int64_t)s.v[KC_STAT_BYTES];
        __atomic_store_n(&l->approx_bytes, total, __ATOMIC_RELAXED);
        __atomic_store_n(&l->approx_at_ns, now, __ATOMIC_RELAXED);
    } else {
        total = __atomic_add_fetch(&l->approx_bytes, added, __ATOMIC_RELAXED);
    }
    if (total > (int64_t)l->max_size) {
        kc_gc_report r;
        int rc = kc_local_gc_lru_(l, (uint64_t)((double)l->max_size * AUTO_GC_TARGET), &r); /* LRU only: cheap */
        if (rc == KC_OK) {
            __atomic_store_n(&l->approx_bytes, (int64_t)r.bytes_after, __ATOMIC_RELAXED);
            __atomic_store_n(&l->approx_at_ns, kc_mono_ns(), __ATOMIC_RELAXED);
        } else if (rc != KC_EBUSY) {
            kc_log(KC_LOG_STORE, "automatic cleanup: %s", kc_error_last()->message);
        }
    }
}

/*
 * [Note: provenance] A local file says where its bytes came from by its mode: 0600 — written
 * by this cache's own compile (kc_local_put); 0400 — fetched from a remote or imported from a
 * bundle (kc_local_put_foreign).  Publishing may seal (MAC) only the first kind: an entry that
 * arrived without a MAC under the current key keeps no better trust than it arrived with, so a
 * forged entry fetched before a fleet rolled its key out is never laundered into a sealed one
 * (src/store/tiers.c, kc_tiers_publish).  The mode travels with the rename; a replaced file
 * takes the new writer's mode.  A cache directory is its owner's only (safedir.c), so the mode
 * is as trustworthy as the bytes beside it.
 */
static int local_put(kc_local *l, const char *name, const void *data, size_t len, unsigned mode, const char *origin);

int kc_local_put(kc_local *l, const char *name, const void *data, size_t len) {
    return local_put(l, name, data, len, 0600, "compiled");
}

int kc_local_put_foreign(kc_local *l, const char *name, const void *data, size_t len) {
    return local_put(l, name, data, len, 0400, NULL);
}

int kc_local_put_origin(kc_local *l, const char *name, const void *data, size_t len, const char *origin) {
    return local_put(l, name, data, len, 0400, origin);
}

/* kc_fs_write_atomic_mode with the provenance record set on the temporary file before its fsync
 * ([Note: provenance record]); `origin` NULL: none. */
static int write_entry(const char *path, const void *data, size_t len, unsigned mode, const char *origin) {
    static unsigned long seq;
    char tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    unsigned long s = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
    int n = snprintf(tmp, sizeof tmp, "%.*s/.tmp.%s.%ld.%lx.%lx", (int)(slash - path), path, slash + 1, (long)getpid(),
                     s, (unsigned long)(kc_mono_ns() & 0xffffffu));
    if (n < 0 || (size_t)n >= sizeof tmp) return kc_err(KC_EINVAL, "path too long: '%s'", path);
    int fd = kc_sys_open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return kc_err_errno(errno, "creating '%s'", tmp);
    int rc = kc_fs_write_all(fd, data, len, tmp);
    if (rc == KC_OK && origin) kc_local_origin_set_(fd, tmp, origin);
    if (rc == KC_OK && mode != 0600 && fchmod(fd, (mode_t)mode) != 0) rc = kc_err_errno(errno, "chmod of '%s'", tmp);
    if (rc == KC_OK && kc_sys_fsync(fd) != 0) rc = kc_err_errno(errno, "fsync of '%s'", tmp);
    if (close(fd) != 0 && rc == KC_OK) rc = kc_err_errno(errno, "closing '%s'", tmp);
    if (rc == KC_OK && kc_sys_rename(tmp, path) != 0) rc = kc_err_errno(errno, "renaming '%s' to '%s'", tmp, path);
    if (rc != KC_OK) {
        unlink(tmp); /* not a fault point: cleanup must not be made to fail */
        return rc;
    }
    if ((rc = kc_fs_fsync_parent(path)) != KC_OK) kc_log(KC_LOG_STORE, "%s", kc_error_last()->message);
    return KC_OK;
}

static int local_put(kc_local *l, const char *name, const void *data, size_t len, unsigned mode, const char *origin) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    int shard = kc_store_name_shard(name);
    if (l->readonly) {
        kc_local_count(l, shard, KC_STAT_READONLY_SKIPS, 1);
        return kc_err(KC_EREADONLY, "the cache '%s' is read-only", l->root);
    }
    char path[PATH_MAX];
    kc_local_path(l, name, path, sizeof path);
    struct stat old;
    bool had = lstat(path, &old) == 0;
    rc = kc_local_real_shard_(l, name); /* [Note: no links inside] */
    if (rc == KC_OK) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%.2s", l->v1, name);
        rc = kc_local_write_status_(write_entry(path, data, len, mode, origin), dir);
    }
    if (rc != KC_OK) {
        kc_local_count(l, shard, KC_STAT_STORE_ERRORS, 1);
        return rc;
    }
    int64_t added = (int64_t)len - (had ? (int64_t)old.st_size : 0);
    kc_local_count(l, shard, KC_STAT_PUTS, 1);
    kc_local_count(l, shard, KC_STAT_BYTES, added);
    if (!had) kc_local_count(l, shard, KC_STAT_ENTRIES, 1);
    kc_local_flush(l);
    kc_local_maybe_cleanup_(l, added);
    return KC_OK;
}

int kc_local_exists(kc_local *l, const char *name) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    char path[PATH_MAX];
    kc_local_path(l, name, path, sizeof path);
    return access(path, F_OK) == 0 ? 1 : 0;
}

/* Remove a file we counted; adjust the counters by what was there. */
static int remove_counted(kc_local *l, const char *name, const char *path, kc_stat why) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? KC_MISS : kc_local_err_errno_(errno, 0, "stat '%s'", path);
    if (kc_sys_unlink(path) != 0) {
        if (errno == ENOENT) return KC_MISS;
        return kc_local_err_errno_(errno, 1, "removing '%s'", path);
    }
    int shard = kc_store_name_shard(name);
    kc_local_count(l, shard, KC_STAT_BYTES, -(int64_t)st.st_size);
    kc_local_count(l, shard, KC_STAT_ENTRIES, -1);
    if ((int)why >= 0) kc_local_count(l, shard, why, 1);
    return KC_OK;
}

int kc_local_remove(kc_local *l, const char *name) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    if (l->readonly) return kc_err(KC_EREADONLY, "the cache '%s' is read-only", l->root);
    kc_local_v1_(l, kc_local_now_(), true, NULL); /* this handle's next hit reads where it removed */
    char path[PATH_MAX];
    kc_local_path(l, name, path, sizeof path);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%.2s", l->v1, name);
    if ((rc = kc_local_real_sub_dir_(l, dir))) return rc; /* a missing shard holds nothing to remove: not made */
    return remove_counted(l, name, path, (kc_stat)-1);
}

int kc_local_quarantine(kc_local *l, const char *name) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    int shard = kc_store_name_shard(name);
    kc_local_count(l, shard, KC_STAT_CORRUPT, 1);
    if (l->readonly) return KC_OK;
    bool stale;
    kc_local_v1_(l, kc_local_now_(), true, &stale);
    if (stale) { /* [Note: the folder held open]: the bytes may have been the old folder's */
        kc_log(KC_LOG_STORE, "%s: read from a folder no longer at %s; nothing quarantined", name, l->v1);
        return KC_OK;
    }
    char path[PATH_MAX], dest[PATH_MAX + 64];
    kc_local_path(l, name, path, sizeof path);
    snprintf(dest, sizeof dest, "%s/quarantine/%s" ENTRY_SUFFIX ".%llu", l->v1, name, (unsigned long long)kc_now_ns());
    struct stat st;
    if (lstat(path, &st) != 0) return KC_OK; /* already gone (another process quarantined it) */
    if ((rc = kc_local_real_shard_(l, name)) || (rc = kc_local_make_sub_(l, "quarantine"))) return rc;
    if (kc_sys_rename(path, dest) != 0) {
        if (errno == ENOENT) return KC_OK;
        kc_log(KC_LOG_STORE, "quarantine %s: %s; removing it", path, strerror(errno));
        if (kc_sys_unlink(path) != 0 && errno != ENOENT)
            return kc_local_err_errno_(errno, 1, "removing corrupt entry '%s'", path);
    }
    kc_local_count(l, shard, KC_STAT_BYTES, -(int64_t)st.st_size);
    kc_local_count(l, shard, KC_STAT_ENTRIES, -1);
    kc_log(KC_LOG_STORE, "quarantined %s", name);
    kc_local_quarantine_bound_(l); /* never outside the limit (local_gc.c) */
    return KC_OK;
}

/* ---- compile locks ([Note: single-flight] in graph/lookup.c) ---- */

int kc_local_trylock(kc_local *l, const char *name, int *fd_out, char *path, size_t cap) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    snprintf(path, cap, "%s/%.2s/.lock.%s", l->v1, name, name);
    if ((rc = kc_local_real_shard_(l, name))) return rc;
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = kc_sys_open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0600);
        if (fd < 0) return kc_local_err_errno_(errno, 1, "opening lock '%s'", path);
        if (!kc_fs_fd_is_regular(fd)) {
            close(fd);
            return kc_err(KC_EIO, "lock '%s' is not a regular file", path);
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            close(fd);
            if (e == EWOULDBLOCK) return KC_EBUSY;
            return kc_local_err_errno_(e, 1, "locking '%s'", path);
        }
        /* The holder before us may have removed the file after we opened it: then our lock
         * is on an orphan inode and means nothing.  Make sure we hold the file at the path. */
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
            *fd_out = fd;
            return KC_OK;
        }
        close(fd);
    }
    return KC_EBUSY;
}

void kc_local_unlock(int fd, const char *path) {
    if (fd < 0) return;
    /* While still holding it: a waiter that opened it re-checks the inode.  If this fails the
     * file stays, unlocked and harmless, until a gc collects it. */
    kc_sys_unlink(path);
    close(fd);
}

/* ---- iteration ---- */

bool kc_local_entry_file_name_(const char *f, char name[KC_NAME_MAX + 1]) {
    size_t n = strlen(f), sl = strlen(ENTRY_SUFFIX);
    if (n <= sl || n - sl > KC_NAME_MAX || strcmp(f + n - sl, ENTRY_SUFFIX) != 0) return false;
    memcpy(name, f, n - sl);
    name[n - sl] = '\0';
    return kc_store_name_check(name) == KC_OK;
}

int kc_local_walk_shards_(kc_local *l, kc_local_file_cb cb, void *ctx) {
    char dir[PATH_MAX], path[PATH_MAX + 256];
    struct stat vst;
    if (lstat(l->v1, &vst) == 0 && !S_ISDIR(vst.st_mode)) return kc_fs_real_dir(l->v1); /* [Note: no links inside] */
    for (int s = 0; s < KC_SHARDS; s++) {
        shard_dir(l, s, dir, sizeof dir);
        DIR *d = kc_fs_opendir_nofollow(dir);
        if (!d) {
            int e = errno;
            if (e == ENOENT) continue;
            if (e == ELOOP || e == ENOTDIR) { /* a link or a file in a shard's place: never followed */
                kc_log(KC_LOG_STORE, "skipping '%s': not a directory (a symbolic link is never followed)", dir);
                continue;
            }
            errno = e;
            return kc_local_err_errno_(errno, 0, "reading directory '%s'", dir);
        }
        struct dirent *de;
        int rc = 0;
        while (rc == 0 && (de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.' && !kc_fs_is_temp_name(de->d_name) && strncmp(de->d_name, ".lock.", 6) != 0)
                continue;
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
            if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
            rc = cb(s, dir, de->d_name, &st, ctx);
        }
        closedir(d);
        if (rc) return rc;
    }
    return 0;
}

/*
 * local.c — the local directory store: atomic puts, read()-only gets, per-shard counters
 * shared by every process, and approximate-LRU eviction by one cleaner at a time.
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
#include "local.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "../common/fs.h"
#include "../common/internal.h"

#define STATS_MAGIC "KCSTATS1"
#define STATS_SLOTS 32 /* room in the file for future counters */
#define STATS_FILE_SIZE (8 + 4 + 4 + 8 * STATS_SLOTS + 8)
#define FLUSH_INTERVAL_NS 1000000000ull
#define TOUCH_AFTER_S 2          /* refresh mtime on a hit when older than this */
#define TEMP_STALE_S 3600        /* temp files older than this are orphans */
#define AUTO_GC_TARGET 0.9       /* an automatic cleanup evicts down to 90% of the limit */
#define ENTRY_SUFFIX ".kce"

struct kc_local {
    char root[PATH_MAX];   /* <dir> */
    char v1[PATH_MAX];     /* <dir>/v1 */
    uint64_t max_size;
    bool readonly;
    int64_t delta[KC_SHARDS][KC_STAT_COUNT]; /* unflushed counts; atomics */
    uint8_t dirty[KC_SHARDS];
    uint64_t last_flush_ns;
    pthread_mutex_t flush_mu;
    int64_t approx_bytes;      /* total bytes, refreshed from the stats files */
    uint64_t approx_at_ns;
    kc_store_backend backend;
};

/* ---- names and paths ---- */

const char *kc_local_root(const kc_local *l) { return l->root; }

void kc_local_path(const kc_local *l, const char *name, char *out, size_t cap) {
    snprintf(out, cap, "%s/%.2s/%s" ENTRY_SUFFIX, l->v1, name, name);
}

int kc_local_profile_dir(const kc_local *l, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/profiles", l->v1);
    if (n < 0 || (size_t)n >= cap) return kc_err(KC_EINVAL, "the profile folder of '%s' does not fit in %zu bytes", l->root, cap);
    return KC_OK;
}

static void shard_dir(const kc_local *l, int shard, char *out, size_t cap) {
    snprintf(out, cap, "%s/%02x", l->v1, shard);
}

/* ---- directory safety ---- */

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
 */
#define ALLOW_HINT "use a directory only you can write to, or allow it explicitly (KCACHE_ALLOW_UNSAFE_DIR=1)"

static int check_ancestor(const char *path, const struct stat *st) {
    uid_t me = geteuid();
    if (!S_ISDIR(st->st_mode)) return kc_err(KC_EIO, "'%s' is not a directory", path);
    if (st->st_uid != me && st->st_uid != 0)
        return kc_err(KC_EPERM, "parent directory '%s' of the cache is owned by uid %u, who could replace the cache; %s",
                      path, (unsigned)st->st_uid, ALLOW_HINT);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
        return kc_err(KC_EPERM, "parent directory '%s' of the cache is writable by group or others (mode %03o), who "
                      "could replace the cache; %s", path, (unsigned)(st->st_mode & 0777), ALLOW_HINT);
    return KC_OK;
}

/* Check every ancestor of the absolute path `abs` (not `abs` itself); *crossed is set when a
 * system link (root's, directly under /) was followed. */
static int check_ancestors(const char *abs, bool *crossed) {
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
            rc = kc_err_errno(errno, "checking parent directory '%s' of the cache", dir);
        } else if (S_ISLNK(st.st_mode)) {
            const char *sl = strrchr(dir, '/');
            if (st.st_uid != 0 || sl != dir) { /* only root's links directly under / */
                char real[PATH_MAX];
                rc = kc_err(KC_EPERM, "parent '%s' of the cache directory is a symbolic link (to '%s'), which its owner "
                            "could point elsewhere; use the real path, or allow it explicitly (KCACHE_ALLOW_UNSAFE_DIR=1)",
                            dir, realpath(dir, real) ? real : "?");
            } else if (crossed) {
                *crossed = true;
            }
        } else {
            rc = check_ancestor(dir, &st);
        }
        if (slash != p) *slash = keep;
        if (rc) return rc;
    }
    return KC_OK;
}

static int check_dir_safe(const char *root) {
    struct stat st;
    if (lstat(root, &st) != 0) return kc_err_errno(errno, "checking cache directory '%s'", root);
    if (S_ISLNK(st.st_mode))
        return kc_err(KC_EPERM, "cache directory '%s' is a symbolic link; refusing it "
                      "(use the real path, or allow it explicitly: KCACHE_ALLOW_UNSAFE_DIR=1)", root);
    if (!S_ISDIR(st.st_mode)) return kc_err(KC_EIO, "'%s' is not a directory", root);
    if (st.st_uid != geteuid())
        return kc_err(KC_EPERM, "cache directory '%s' is owned by uid %u, not by us (uid %u); %s", root,
                      (unsigned)st.st_uid, (unsigned)geteuid(), ALLOW_HINT);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return kc_err(KC_EPERM, "cache directory '%s' is writable by group or others (mode %03o); %s", root,
                      (unsigned)(st.st_mode & 0777), ALLOW_HINT);
    char abs[PATH_MAX];
    if (root[0] == '/') {
        snprintf(abs, sizeof abs, "%s", root);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) return kc_err_errno(errno, "resolving cache directory '%s'", root);
        if (snprintf(abs, sizeof abs, "%s/%s", cwd, root) >= (int)sizeof abs)
            return kc_err(KC_EINVAL, "cache directory path is too long");
    }
    bool crossed = false;
    int rc = check_ancestors(abs, &crossed);
    if (rc == KC_OK && crossed) { /* where the root-owned links lead must be safe too */
        char real[PATH_MAX];
        if (!realpath(root, real)) return kc_err_errno(errno, "resolving cache directory '%s'", root);
        rc = check_ancestors(real, NULL);
    }
    return rc;
}

/* ---- open / free ---- */

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
    if (!exists && !l->readonly) rc = kc_fs_mkdirs(l->root, 0700);
    if (rc == KC_OK && (exists || !l->readonly) && !(flags & KC_OPEN_ALLOW_UNSAFE_DIR))
        rc = check_dir_safe(l->root); /* [Note: safe directories] */
    if (rc == KC_OK && !l->readonly) {
        char p[PATH_MAX];
        rc = kc_fs_mkdirs(l->v1, 0700);
        for (int s = 0; rc == KC_OK && s < KC_SHARDS; s++) {
            shard_dir(l, s, p, sizeof p);
            if (mkdir(p, 0700) != 0 && errno != EEXIST) rc = kc_err_errno(errno, "creating '%s'", p);
        }
        snprintf(p, sizeof p, "%s/quarantine", l->v1);
        if (rc == KC_OK && mkdir(p, 0700) != 0 && errno != EEXIST) rc = kc_err_errno(errno, "creating '%s'", p);
    }
    if (rc != KC_OK) {
        kc_err_prefix(rc, "opening cache directory '%s'", l->root);
        pthread_mutex_destroy(&l->flush_mu);
        free(l);
        return rc;
    }
    l->backend.version = KC_STORE_BACKEND_VERSION;
    l->backend.name = "local";
    l->backend.ctx = l;
    *out = l;
    return KC_OK;
}

void kc_local_free(kc_local *l) {
    if (!l) return;
    kc_local_flush(l);
    pthread_mutex_destroy(&l->flush_mu);
    free(l);
}

/* ---- statistics ---- */

void kc_local_count(kc_local *l, int shard, kc_stat id, int64_t n) {
    if ((unsigned)shard >= KC_SHARDS || (unsigned)id >= KC_STAT_COUNT || n == 0) return;
    __atomic_add_fetch(&l->delta[shard][id], n, __ATOMIC_RELAXED);
    __atomic_store_n(&l->dirty[shard], 1, __ATOMIC_RELAXED);
}

static void stats_path(const kc_local *l, int shard, char *out, size_t cap) {
    snprintf(out, cap, "%s/%02x/stats", l->v1, shard);
}

/* Read a stats file's counters from an open descriptor; zeros if absent or damaged. */
static void stats_read_fd(int fd, int64_t v[STATS_SLOTS]) {
    uint8_t b[STATS_FILE_SIZE];
    memset(v, 0, sizeof(int64_t) * STATS_SLOTS);
    ssize_t r = pread(fd, b, sizeof b, 0);
    if (r != (ssize_t)sizeof b || memcmp(b, STATS_MAGIC, 8) != 0) return;
    if (XXH3_64bits(b, sizeof b - 8) != kc_rd_u64(b + sizeof b - 8)) return;
    uint32_t count = kc_rd_u32(b + 8);
    for (uint32_t i = 0; i < count && i < STATS_SLOTS; i++) v[i] = (int64_t)kc_rd_u64(b + 16 + 8 * i);
}

static void stats_write_fd(int fd, const int64_t v[STATS_SLOTS]) {
    uint8_t b[STATS_FILE_SIZE];
    memcpy(b, STATS_MAGIC, 8);
    kc_wr_u32(b + 8, STATS_SLOTS);
    kc_wr_u32(b + 12, 0);
    for (int i = 0; i < STATS_SLOTS; i++) kc_wr_u64(b + 16 + 8 * i, (uint64_t)(v[i] < 0 ? 0 : v[i]));
    kc_wr_u64(b + sizeof b - 8, XXH3_64bits(b, sizeof b - 8));
    if (pwrite(fd, b, sizeof b, 0) != (ssize_t)sizeof b)
        kc_log(KC_LOG_STORE, "writing stats: %s", strerror(errno));
}

/*
 * Apply `fn` to a shard's counters under the file's lock.  Stats are bookkeeping: a
 * failure (the open is a fault-injection point) is logged, never reported, and costs
 * nothing but counts.
 */
static void stats_update(kc_local *l, int shard, void (*fn)(int64_t *v, void *ctx), void *ctx) {
    char p[PATH_MAX];
    stats_path(l, shard, p, sizeof p);
    int fd = kc_sys_open(p, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
    if (fd < 0) {
        kc_log(KC_LOG_STORE, "opening %s: %s", p, strerror(errno));
        return;
    }
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
    int64_t v[STATS_SLOTS];
    stats_read_fd(fd, v);
    fn(v, ctx);
    stats_write_fd(fd, v);
    close(fd); /* releases the lock */
}

static void add_deltas(int64_t *v, void *ctx) {
    const int64_t *d = ctx;
    for (int i = 0; i < KC_STAT_COUNT; i++) v[i] += d[i];
}

void kc_local_flush(kc_local *l) {
    if (l->readonly) return; /* a read-only cache keeps its counts in memory */
    pthread_mutex_lock(&l->flush_mu);
    for (int s = 0; s < KC_SHARDS; s++) {
        if (!__atomic_exchange_n(&l->dirty[s], 0, __ATOMIC_RELAXED)) continue;
        int64_t d[KC_STAT_COUNT];
        int any = 0;
        for (int i = 0; i < KC_STAT_COUNT; i++) {
            d[i] = __atomic_exchange_n(&l->delta[s][i], 0, __ATOMIC_RELAXED);
            any |= d[i] != 0;
        }
        if (any) stats_update(l, s, add_deltas, d);
    }
    __atomic_store_n(&l->last_flush_ns, kc_mono_ns(), __ATOMIC_RELAXED);
    pthread_mutex_unlock(&l->flush_mu);
}

static void maybe_flush(kc_local *l) {
    if (kc_mono_ns() - __atomic_load_n(&l->last_flush_ns, __ATOMIC_RELAXED) > FLUSH_INTERVAL_NS)
        kc_local_flush(l);
}

/* A shard's counters as its file holds them (no lock: a snapshot).  A read of bookkeeping,
 * not a fault point: a missing or damaged file reads as zeros. */
static void stats_read(const kc_local *l, int shard, int64_t v[STATS_SLOTS]) {
    char p[PATH_MAX];
    stats_path(l, shard, p, sizeof p);
    memset(v, 0, sizeof(int64_t) * STATS_SLOTS);
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return;
    stats_read_fd(fd, v);
    close(fd);
}

int kc_local_stats(kc_local *l, kc_stats *out) {
    memset(out, 0, sizeof *out);
    kc_local_flush(l);
    for (int s = 0; s < KC_SHARDS; s++) {
        int64_t v[STATS_SLOTS];
        stats_read(l, s, v);
        for (int i = 0; i < KC_STAT_COUNT; i++) out->v[i] += (uint64_t)(v[i] < 0 ? 0 : v[i]);
        if (l->readonly) /* unflushable deltas of a read-only cache still show */
            for (int i = 0; i < KC_STAT_COUNT; i++) out->v[i] += (uint64_t)__atomic_load_n(&l->delta[s][i], __ATOMIC_RELAXED);
    }
    return KC_OK;
}

static void zero_events(int64_t *v, void *ctx) {
    (void)ctx;
    for (int i = 0; i < STATS_SLOTS; i++)
        if (i != KC_STAT_BYTES && i != KC_STAT_ENTRIES) v[i] = 0;
}

int kc_local_stats_zero(kc_local *l) {
    if (l->readonly) return kc_err(KC_EREADONLY, "the cache is read-only");
    kc_local_flush(l);
    for (int s = 0; s < KC_SHARDS; s++) stats_update(l, s, zero_events, NULL);
    return KC_OK;
}

typedef struct exact_counts {
    int64_t bytes, entries;
} exact_counts;

static void set_sizes(int64_t *v, void *ctx) {
    const exact_counts *c = ctx;
    v[KC_STAT_BYTES] = c->bytes;
    v[KC_STAT_ENTRIES] = c->entries;
}

/* ---- get / put / remove ---- */

static int local_read(kc_local *l, const char *name, void **out, size_t *len, bool use) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    char path[PATH_MAX];
    kc_local_path(l, name, path, sizeof path);
    struct stat st;
    rc = kc_fs_read_file(path, KC_ENTRY_MAX_BYTES, out, len, &st);
    if (!use) return rc;
    if (rc == KC_OK && !l->readonly && st.st_mtime + TOUCH_AFTER_S < (time_t)(kc_now_ns() / 1000000000ull)) {
        /* LRU clock: refresh the hit's time (a vanished file is fine). */
        if (utimensat(AT_FDCWD, path, NULL, 0) != 0 && errno != ENOENT)
            kc_log(KC_LOG_STORE, "touch %s: %s", path, strerror(errno));
    }
    maybe_flush(l);
    return rc;
}

int kc_local_get(kc_local *l, const char *name, void **out, size_t *len) { return local_read(l, name, out, len, true); }
int kc_local_read(kc_local *l, const char *name, void **out, size_t *len) { return local_read(l, name, out, len, false); }

static void maybe_cleanup(kc_local *l, int64_t added) {
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
        int rc = kc_local_gc(l, (uint64_t)((double)l->max_size * AUTO_GC_TARGET), &r);
        if (rc == KC_OK) {
            __atomic_store_n(&l->approx_bytes, (int64_t)r.bytes_after, __ATOMIC_RELAXED);
            __atomic_store_n(&l->approx_at_ns, kc_mono_ns(), __ATOMIC_RELAXED);
        } else if (rc != KC_EBUSY) {
            kc_log(KC_LOG_STORE, "automatic cleanup: %s", kc_error_last()->message);
        }
    }
}

int kc_local_put(kc_local *l, const char *name, const void *data, size_t len) {
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
    bool had = stat(path, &old) == 0;
    rc = kc_fs_write_atomic(path, data, len);
    if (rc != KC_OK) {
        kc_local_count(l, shard, KC_STAT_STORE_ERRORS, 1);
        return rc;
    }
    int64_t added = (int64_t)len - (had ? (int64_t)old.st_size : 0);
    kc_local_count(l, shard, KC_STAT_PUTS, 1);
    kc_local_count(l, shard, KC_STAT_BYTES, added);
    if (!had) kc_local_count(l, shard, KC_STAT_ENTRIES, 1);
    kc_local_flush(l);
    maybe_cleanup(l, added);
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
    if (lstat(path, &st) != 0) return errno == ENOENT ? KC_MISS : kc_err_errno(errno, "stat '%s'", path);
    if (kc_sys_unlink(path) != 0) {
        if (errno == ENOENT) return KC_MISS;
        return kc_err_errno(errno, "removing '%s'", path);
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
    char path[PATH_MAX];
    kc_local_path(l, name, path, sizeof path);
    return remove_counted(l, name, path, (kc_stat)-1);
}

int kc_local_quarantine(kc_local *l, const char *name) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    int shard = kc_store_name_shard(name);
    kc_local_count(l, shard, KC_STAT_CORRUPT, 1);
    if (l->readonly) return KC_OK;
    char path[PATH_MAX], dest[PATH_MAX + 64];
    kc_local_path(l, name, path, sizeof path);
    snprintf(dest, sizeof dest, "%s/quarantine/%s" ENTRY_SUFFIX ".%llu", l->v1, name,
             (unsigned long long)kc_now_ns());
    struct stat st;
    if (lstat(path, &st) != 0) return KC_OK; /* already gone (another process quarantined it) */
    if (kc_sys_rename(path, dest) != 0) {
        if (errno == ENOENT) return KC_OK;
        kc_log(KC_LOG_STORE, "quarantine %s: %s; removing it", path, strerror(errno));
        if (kc_sys_unlink(path) != 0 && errno != ENOENT)
            return kc_err_errno(errno, "removing corrupt entry '%s'", path);
    }
    kc_local_count(l, shard, KC_STAT_BYTES, -(int64_t)st.st_size);
    kc_local_count(l, shard, KC_STAT_ENTRIES, -1);
    kc_log(KC_LOG_STORE, "quarantined %s", name);
    return KC_OK;
}

/* ---- compile locks ([Note: single-flight] in cache.h) ---- */

int kc_local_trylock(kc_local *l, const char *name, int *fd_out, char *path, size_t cap) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    snprintf(path, cap, "%s/%.2s/.lock.%s", l->v1, name, name);
    for (int attempt = 0; attempt < 8; attempt++) {
        int fd = kc_sys_open(path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600);
        if (fd < 0) return kc_err_errno(errno, "opening lock '%s'", path);
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            close(fd);
            if (e == EWOULDBLOCK) return KC_EBUSY;
            return kc_err_errno(e, "locking '%s'", path);
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

/* Whether `f` is "<name>.kce" with a valid name; the name is copied to `name`. */
static bool entry_file_name(const char *f, char name[KC_NAME_MAX + 1]) {
    size_t n = strlen(f), sl = strlen(ENTRY_SUFFIX);
    if (n <= sl || n - sl > KC_NAME_MAX || strcmp(f + n - sl, ENTRY_SUFFIX) != 0) return false;
    memcpy(name, f, n - sl);
    name[n - sl] = '\0';
    return kc_store_name_check(name) == KC_OK;
}

typedef int (*shard_file_cb)(int shard, const char *dir, const char *file, const struct stat *st, void *ctx);

/* Visit every regular file of every shard; vanished files are skipped. */
static int walk_shards(kc_local *l, shard_file_cb cb, void *ctx) {
    char dir[PATH_MAX], path[PATH_MAX + 256];
    for (int s = 0; s < KC_SHARDS; s++) {
        shard_dir(l, s, dir, sizeof dir);
        DIR *d = opendir(dir);
        if (!d) {
            if (errno == ENOENT) continue;
            return kc_err_errno(errno, "reading directory '%s'", dir);
        }
        struct dirent *de;
        int rc = 0;
        while (rc == 0 && (de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.' && !kc_fs_is_temp_name(de->d_name) && strncmp(de->d_name, ".lock.", 6) != 0) continue;
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

typedef struct iter_ctx {
    kc_store_iter_cb cb;
    void *ctx;
} iter_ctx;

static int iter_file(int shard, const char *dir, const char *file, const struct stat *st, void *ctx) {
    (void)shard;
    iter_ctx *ic = ctx;
    char name[KC_NAME_MAX + 1], path[PATH_MAX + 256];
    if (!entry_file_name(file, name)) return 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    kc_store_item it = {name, (uint64_t)st->st_size, (int64_t)st->st_mtime, path};
    return ic->cb(&it, ic->ctx);
}

int kc_local_iterate(kc_local *l, kc_store_iter_cb cb, void *ctx) {
    iter_ctx ic = {cb, ctx};
    return walk_shards(l, iter_file, &ic);
}

/* ---- gc ---- */

typedef struct gc_item {
    int64_t mtime_ns;
    uint64_t size;
    uint8_t shard;
    char file[KC_NAME_MAX + 8];
} gc_item;

typedef struct gc_ctx {
    gc_item *items;
    size_t n, cap;
    exact_counts per[KC_SHARDS];
    uint64_t temp_removed;
    int64_t now_s;
    int oom;
} gc_ctx;

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
        if (g->now_s - (int64_t)st->st_mtime > TEMP_STALE_S) {
            char path[PATH_MAX + 256];
            snprintf(path, sizeof path, "%s/%s", dir, file);
            if (kc_sys_unlink(path) == 0) g->temp_removed++;
        }
        return 0;
    }
    if (!entry_file_name(file, name)) return 0;
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 1024;
        gc_item *p = kc_realloc(g->items, cap * sizeof *p);
        if (!p) return g->oom = 1, 1;
        g->items = p;
        g->cap = cap;
    }
    gc_item *it = &g->items[g->n++];
    it->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    it->size = (uint64_t)st->st_size;
    it->shard = (uint8_t)shard;
    snprintf(it->file, sizeof it->file, "%s", file);
    g->per[shard].bytes += st->st_size;
    g->per[shard].entries++;
    return 0;
}

static int by_mtime(const void *a, const void *b) {
    const gc_item *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

int kc_local_gc(kc_local *l, uint64_t max_size, kc_gc_report *out) {
    kc_gc_report rep;
    memset(&rep, 0, sizeof rep);
    if (l->readonly) return kc_err(KC_EREADONLY, "the cache '%s' is read-only", l->root);
    if (max_size == 0) max_size = l->max_size;
    char lock[PATH_MAX];
    snprintf(lock, sizeof lock, "%s/gc.lock", l->v1);
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
    g->now_s = (int64_t)(kc_now_ns() / 1000000000ull);
    int rc = walk_shards(l, gc_file, g);
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
            int64_t v[STATS_SLOTS]; /* rewrite (under the lock) only the shards whose sizes drifted */
            stats_read(l, s, v);
            if (v[KC_STAT_BYTES] != g->per[s].bytes || v[KC_STAT_ENTRIES] != g->per[s].entries)
                stats_update(l, s, set_sizes, &g->per[s]);
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
    (void)st;
    (void)ctx;
    char name[KC_NAME_MAX + 1], path[PATH_MAX + 256];
    if (!entry_file_name(file, name) && !kc_fs_is_temp_name(file)) return 0;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (kc_sys_unlink(path) != 0 && errno != ENOENT) return kc_err_errno(errno, "removing '%s'", path);
    return 0;
}

int kc_local_clear(kc_local *l) {
    if (l->readonly) return kc_err(KC_EREADONLY, "the cache '%s' is read-only", l->root);
    int rc = walk_shards(l, clear_file, NULL);
    if (rc) return rc;
    char q[PATH_MAX], p[PATH_MAX + 256];
    snprintf(q, sizeof q, "%s/quarantine", l->v1);
    DIR *d = opendir(q);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.') continue;
            snprintf(p, sizeof p, "%s/%s", q, de->d_name);
            kc_sys_unlink(p);
        }
        closedir(d);
    }
    exact_counts zero = {0, 0};
    for (int s = 0; s < KC_SHARDS; s++) {
        __atomic_store_n(&l->delta[s][KC_STAT_BYTES], 0, __ATOMIC_RELAXED);
        __atomic_store_n(&l->delta[s][KC_STAT_ENTRIES], 0, __ATOMIC_RELAXED);
        stats_update(l, s, set_sizes, &zero);
    }
    return KC_OK;
}

/* ---- as a backend table ---- */

static int be_get(kc_store_backend *b, const char *n, void **o, size_t *len) { return kc_local_get(b->ctx, n, o, len); }
static int be_peek(kc_store_backend *b, const char *n, void **o, size_t *len) { return kc_local_read(b->ctx, n, o, len); }
static int be_put(kc_store_backend *b, const char *n, const void *d, size_t len) { return kc_local_put(b->ctx, n, d, len); }
static int be_exists(kc_store_backend *b, const char *n) { return kc_local_exists(b->ctx, n); }
static int be_remove(kc_store_backend *b, const char *n) { return kc_local_remove(b->ctx, n); }
static int be_iterate(kc_store_backend *b, kc_store_iter_cb cb, void *ctx) { return kc_local_iterate(b->ctx, cb, ctx); }
static int be_quarantine(kc_store_backend *b, const char *n) { return kc_local_quarantine(b->ctx, n); }
static void be_free(kc_store_backend *b) { kc_local_free(b->ctx); }

kc_store_backend *kc_local_backend(kc_local *l) {
    l->backend.get = be_get;
    l->backend.put = be_put;
    l->backend.exists = be_exists;
    l->backend.remove = be_remove;
    l->backend.touch = NULL;
    l->backend.iterate = be_iterate;
    l->backend.quarantine = be_quarantine;
    l->backend.free = be_free;
    l->backend.get_first = NULL;
    l->backend.peek = be_peek;
    l->backend.state = NULL;
    return &l->backend;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/local_stats.c — the local store's counters: kept in memory per shard, added now and
 * then into the shard's stats file, and that file's format (its grammar, writer and reader,
 * as ccache's statsfile beside its local storage).  Only the local store's files use it.
 *
 * The one idea: a hit costs no write.  Counts are atomics in memory; a flush adds them into
 * the shards' files under flock, so every process sharing the directory adds its own and
 * nobody's are lost — in one pass ([Note: one flush]).  Bookkeeping never fails an operation: a stats file that cannot be
 * opened is logged and its counts stay in memory (a read-only directory: kc_local_stats shows
 * them, as this process's), and one that is missing or damaged reads as zeros; one that is not a
 * regular file (a FIFO) is opened without blocking and then left alone.
 *
 * A shard's stats file, <dir>/v1/<2 hex>/stats (little-endian): the counters, STATS_FILE_SIZE bytes,
 *     magic "KCSTATS1" (8) | slot count u32 (32) | reserved u32 (0)
 *     | 32 × u64 counter (by kc_stat id; slots past KC_STAT_COUNT are room to grow)
 *     | XXH3-64 of everything before it (8)
 * then, since the lookup latency histograms (kcache/stats.h), the latency section, LAT_SIZE bytes:
 *     magic "KCSTATL1" (8) | outcomes u32 (5) | slots per outcome u32 (KC_LAT_PER: 15)
 *     | 5 × 15 u64: per outcome its 13 buckets (not cumulative), the +Inf bucket, its sum in ns
 *     | XXH3-64 of the section before it (8)
 * [Note: stats file sections] Each section is read on its own: a file of the counters alone (as
 * kcache wrote it before) reads with an empty histogram, and a section that is short, damaged or
 * of other dimensions reads as zeros.  Older versions read and write the first STATS_FILE_SIZE
 * bytes only, at offset 0, and never truncate: a directory shared with them keeps its histogram
 * (theirs are lookups it does not count, and their --zero leaves it).  Both are written in one
 * pwrite.
 *
 * Must not: report a bookkeeping failure as an error, or hold a stats file's lock longer than
 * one read-modify-write.
 */
#include "local_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>
#include <xxhash.h>

#include "../common/fs.h"
#include "../common/internal.h"

#define STATS_MAGIC "KCSTATS1"
#define STATS_SLOTS KC_STATS_SLOTS
#define STATS_FILE_SIZE (8 + 4 + 4 + 8 * STATS_SLOTS + 8)
#define LAT_MAGIC "KCSTATL1"
#define LAT_SIZE (8 + 4 + 4 + 8 * KC_LAT_SLOTS + 8)

/* The histogram's bounds in ns (kcache/stats.h's in seconds: kc_latency_bound). */
static const uint64_t bound_ns[KC_LATENCY_BUCKETS] = {10000,      25000,       100000,        250000,    1000000,
                                                      2500000,    10000000,    25000000,      100000000, 250000000,
                                                      1000000000, 2500000000u, 10000000000ull};

/* Whether a slot counts events (--zero resets it; a flush may carry it on any shard) rather than
 * holding a quantity of its own shard (entries, bytes): the table's kind says.  Slots past the
 * table (a newer version's counters) and the latency section are events. */
static bool is_event(int i) {
    kc_stat_kind k = kc_stat_kind_of((kc_stat)i);
    return i >= KC_STAT_COUNT || (k != KC_STAT_KIND_GAUGE && k != KC_STAT_KIND_BYTES);
}

/* a + b held within int64_t: a counter read from a file may say anything its checksum covers
 * (up to 2^63 - 1, or negative), and adding this process's counts to it must not overflow. */
static int64_t add_sat(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b < 0 ? INT64_MIN : INT64_MAX) : r;
}

void kc_local_count(kc_local *l, int shard, kc_stat id, int64_t n) {
    if ((unsigned)shard >= KC_SHARDS || (unsigned)id >= KC_STAT_COUNT || n == 0) return;
    __atomic_add_fetch(&l->delta[shard][id], n, __ATOMIC_RELAXED);
    __atomic_store_n(&l->dirty[shard], 1, __ATOMIC_RELAXED);
}

void kc_local_observe(kc_local *l, int shard, kc_lookup_outcome o, uint64_t ns, int64_t n) {
    if ((unsigned)o >= KC_LOOKUP_OUTCOMES || n <= 0) return;
    int b = 0;
    while (b < KC_LATENCY_BUCKETS && ns > bound_ns[b]) b++;
    int64_t *h = &l->lat_delta[o * KC_LAT_PER];
    __atomic_add_fetch(&h[b], n, __ATOMIC_RELAXED);
    if (ns)
        __atomic_add_fetch(&h[KC_LAT_PER - 1],
                           (int64_t)(ns > (uint64_t)INT32_MAX * 1000 ? (uint64_t)INT32_MAX * 1000 : ns),
                           __ATOMIC_RELAXED);
    __atomic_store_n(&l->lat_dirty, 1, __ATOMIC_RELAXED);
    /* The outcome after its observation: a flush that sees the count sees the time too (or the next one does). */
    kc_local_count(l, shard, kc_lookup_outcome_stat(o), n);
}

static void stats_path(const kc_local *l, int shard, char *out, size_t cap) {
    snprintf(out, cap, "%s/%02x/stats", l->v1, shard);
}

/* Whether v1/ and the shard's folder are real folders, not symbolic links ([Note: no links
 * inside] in local.c): a linked shard's stats are neither read nor written.  Plain lstat, no
 * kc_err: bookkeeping leaves the caller's error alone. */
static bool shard_is_real(const kc_local *l, int shard) {
    char d[PATH_MAX];
    struct stat st;
    snprintf(d, sizeof d, "%s/%02x", l->v1, shard);
    return lstat(l->v1, &st) == 0 && S_ISDIR(st.st_mode) && lstat(d, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Read a stats file's values (KC_STATS_ALL) from an open descriptor; each section ([Note: stats
 * file sections]) zeros if absent, short or damaged. */
static void stats_read_fd(int fd, int64_t v[KC_STATS_ALL]) {
    uint8_t b[STATS_FILE_SIZE + LAT_SIZE];
    memset(v, 0, sizeof(int64_t) * KC_STATS_ALL);
    ssize_t r = pread(fd, b, sizeof b, 0);
    if (r >= STATS_FILE_SIZE && memcmp(b, STATS_MAGIC, 8) == 0 &&
        XXH3_64bits(b, STATS_FILE_SIZE - 8) == kc_rd_u64(b + STATS_FILE_SIZE - 8)) {
        uint32_t count = kc_rd_u32(b + 8);
        for (uint32_t i = 0; i < count && i < STATS_SLOTS; i++) v[i] = (int64_t)kc_rd_u64(b + 16 + 8 * i);
    }
    const uint8_t *t = b + STATS_FILE_SIZE;
    if (r != (ssize_t)sizeof b || memcmp(t, LAT_MAGIC, 8) != 0 || kc_rd_u32(t + 8) != KC_LOOKUP_OUTCOMES ||
        kc_rd_u32(t + 12) != KC_LAT_PER || XXH3_64bits(t, LAT_SIZE - 8) != kc_rd_u64(t + LAT_SIZE - 8))
        return;
    for (int i = 0; i < KC_LAT_SLOTS; i++) v[STATS_SLOTS + i] = (int64_t)kc_rd_u64(t + 16 + 8 * i);
}

static void stats_write_fd(int fd, const int64_t v[KC_STATS_ALL]) {
    uint8_t b[STATS_FILE_SIZE + LAT_SIZE], *t = b + STATS_FILE_SIZE;
    memcpy(b, STATS_MAGIC, 8);
    kc_wr_u32(b + 8, STATS_SLOTS);
    kc_wr_u32(b + 12, 0);
    for (int i = 0; i < STATS_SLOTS; i++) kc_wr_u64(b + 16 + 8 * i, (uint64_t)(v[i] < 0 ? 0 : v[i]));
    kc_wr_u64(b + STATS_FILE_SIZE - 8, XXH3_64bits(b, STATS_FILE_SIZE - 8));
    memcpy(t, LAT_MAGIC, 8);
    kc_wr_u32(t + 8, KC_LOOKUP_OUTCOMES);
    kc_wr_u32(t + 12, KC_LAT_PER);
    for (int i = 0; i < KC_LAT_SLOTS; i++) {
        int64_t x = v[STATS_SLOTS + i];
        kc_wr_u64(t + 16 + 8 * i, (uint64_t)(x < 0 ? 0 : x));
    }
    kc_wr_u64(t + LAT_SIZE - 8, XXH3_64bits(t, LAT_SIZE - 8));
    if (pwrite(fd, b, sizeof b, 0) != (ssize_t)sizeof b) kc_log(KC_LOG_STORE, "writing stats: %s", strerror(errno));
}

/* Under the file's lock; the open is a fault-injection point (kc_sys_open).  -1 when the file
 * could not be opened (a read-only directory: EACCES, EROFS), so that a flush keeps its counts.
 * A missing shard folder is made when `make` (counts to save: [Note: shards made when written]
 * in local.c); without it there is nothing to change there (a missing shard counts zero). */
int kc_local_stats_update_(kc_local *l, int shard, bool make, void (*fn)(int64_t *v, void *ctx), void *ctx) {
    char p[PATH_MAX];
    stats_path(l, shard, p, sizeof p);
    if (!shard_is_real(l, shard)) {
        char dir[PATH_MAX];
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%02x", l->v1, shard);
        bool missing = lstat(l->v1, &st) == 0 && S_ISDIR(st.st_mode) && lstat(dir, &st) != 0 && errno == ENOENT;
        if (missing && !make) return 0; /* nothing there to change: a missing shard counts zero */
        if (missing && mkdir(dir, 0700) != 0 && errno != EEXIST) {
            kc_log(KC_LOG_STORE, "creating %s: %s (counts kept in this process)", dir, strerror(errno));
            return -1;
        }
        if (!missing || !shard_is_real(l, shard)) { /* a link or a file in its place, or v1/ is not a folder */
            kc_log(KC_LOG_STORE,
                   "%s: its folder is not a directory (a symbolic link is never followed): counts not saved", p);
            return 0;
        }
    }
    int fd = kc_sys_open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (fd < 0) {
        kc_log(KC_LOG_STORE, "opening %s: %s (counts kept in this process)", p, strerror(errno));
        return -1;
    }
    if (!kc_fs_fd_is_regular(fd)) { /* a FIFO or device in its place: never read, lock or write it */
        kc_log(KC_LOG_STORE, "%s is not a regular file: counts not saved", p);
        close(fd);
        return 0;
    }
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
    int64_t v[KC_STATS_ALL];
    stats_read_fd(fd, v);
    fn(v, ctx);
    stats_write_fd(fd, v);
    close(fd); /* releases the lock */
    return 0;
}

static void add_deltas(int64_t *v, void *ctx) {
    const int64_t *d = ctx;
    for (int i = 0; i < KC_STAT_COUNT; i++) v[i] = add_sat(v[i], d[i]);
    for (int i = STATS_SLOTS; i < KC_STATS_ALL; i++) v[i] = add_sat(v[i], d[i]);
}

/* Add d (KC_STATS_ALL) into shard s's file; when the file cannot be written (a read-only
 * directory) the counts stay in memory, where kc_local_stats still sees them, and a later flush
 * may yet save them. */
static void flush_one(kc_local *l, int s, const int64_t d[KC_STATS_ALL]) {
    if (kc_local_stats_update_(l, s, true, add_deltas, (void *)d) == 0) return;
    for (int i = 0; i < KC_STAT_COUNT; i++)
        if (d[i]) __atomic_add_fetch(&l->delta[s][i], d[i], __ATOMIC_RELAXED);
    __atomic_store_n(&l->dirty[s], 1, __ATOMIC_RELAXED);
    int lat = 0;
    for (int i = 0; i < KC_LAT_SLOTS; i++)
        if (d[STATS_SLOTS + i]) __atomic_add_fetch(&l->lat_delta[i], d[STATS_SLOTS + i], __ATOMIC_RELAXED), lat = 1;
    if (lat) __atomic_store_n(&l->lat_dirty, 1, __ATOMIC_RELAXED);
}

/* This process's unwritten latency observations, taken into events (the carrier's). */
static int take_latency(kc_local *l, int64_t events[KC_STATS_ALL]) {
    if (!__atomic_exchange_n(&l->lat_dirty, 0, __ATOMIC_RELAXED)) return 0;
    for (int i = 0; i < KC_LAT_SLOTS; i++)
        events[STATS_SLOTS + i] = __atomic_exchange_n(&l->lat_delta[i], 0, __ATOMIC_RELAXED);
    return 1;
}

/*
 * [Note: one flush] Only a shard's sizes (bytes, entries) belong to that shard: a gc recounts
 * them per shard and sets them.  Every other counter (hits, misses, puts, …) is only ever read
 * summed over the shards (kc_local_stats), so a flush adds them all into ONE file — the first
 * dirty shard's — instead of one file per shard that saw a count: a process that only hit
 * (a warm start) closes with one locked read-modify-write, not one per shard it touched.  The
 * shards whose sizes changed each get theirs (a put flushes at once, so that is one or two).
 * Exact across processes as before: each add is under the file's lock, and counts that cannot
 * be written go back into memory, into the shard that carried them.  The latency observations are
 * events too, kept in memory for every shard at once: the carrier takes them (shard 00 when no
 * shard is dirty), in the same write as the outcome counts they go with.
 */
void kc_local_flush(kc_local *l) {
    if (l->readonly) return; /* a read-only cache keeps its counts in memory */
    pthread_mutex_lock(&l->flush_mu);
    int64_t events[KC_STATS_ALL] = {0}, d[KC_STATS_ALL] = {0};
    int carrier = -1, nevents = take_latency(l, events);
    for (int s = 0; s < KC_SHARDS; s++) {
        if (!__atomic_exchange_n(&l->dirty[s], 0, __ATOMIC_RELAXED)) continue;
        int sizes = 0;
        for (int i = 0; i < KC_STAT_COUNT; i++) {
            d[i] = __atomic_exchange_n(&l->delta[s][i], 0, __ATOMIC_RELAXED);
            if (!is_event(i)) {
                sizes |= d[i] != 0;
            } else if (d[i]) {
                events[i] = add_sat(events[i], d[i]), nevents = 1;
                d[i] = 0;
            }
        }
        if (carrier < 0 && (sizes || nevents)) {
            /* This shard carries the events gathered so far and every one after it. */
            carrier = s;
            if (!sizes) continue;
            for (int i = 0; i < KC_STATS_ALL; i++)
                if (is_event(i)) d[i] = events[i], events[i] = 0;
            nevents = 0;
        }
        if (sizes) flush_one(l, s, d);
        for (int i = STATS_SLOTS; i < KC_STATS_ALL; i++) d[i] = 0; /* the carrier's latency went with it */
    }
    if (nevents) flush_one(l, carrier < 0 ? 0 : carrier, events);
    __atomic_store_n(&l->last_flush_ns, kc_mono_ns(), __ATOMIC_RELAXED);
    pthread_mutex_unlock(&l->flush_mu);
}

/* Every hit asks; the coarse clock (a tick behind the fine one at most) answers it for a tenth of a
 * fine read, and a flush a tick late is no harm.  `last` may be a fine reading a tick ahead of it. */
void kc_local_maybe_flush_(kc_local *l) {
    struct timespec ts;
    clock_gettime(KC_CLOCK_MONOTONIC_COARSE, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    uint64_t last = __atomic_load_n(&l->last_flush_ns, __ATOMIC_RELAXED);
    if (now > last && now - last > FLUSH_INTERVAL_NS) kc_local_flush(l);
}

/* A read of bookkeeping, not a fault point (plain open): every value, KC_STATS_ALL. */
static void stats_read_all(const kc_local *l, int shard, int64_t v[KC_STATS_ALL]) {
    char p[PATH_MAX];
    stats_path(l, shard, p, sizeof p);
    memset(v, 0, sizeof(int64_t) * KC_STATS_ALL);
    if (!shard_is_real(l, shard)) return;
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK); /* a FIFO would block the open */
    if (fd < 0) return;
    if (kc_fs_fd_is_regular(fd)) stats_read_fd(fd, v);
    close(fd);
}

void kc_local_stats_read_(const kc_local *l, int shard, int64_t v[KC_STATS_SLOTS]) {
    int64_t all[KC_STATS_ALL];
    stats_read_all(l, shard, all);
    memcpy(v, all, sizeof(int64_t) * STATS_SLOTS);
}

int kc_local_stats(kc_local *l, kc_stats *out) {
    memset(out, 0, sizeof *out);
    kc_local_flush(l);
    /* Under flush_mu, so that no flush moves counts from memory into a file between the two reads. */
    pthread_mutex_lock(&l->flush_mu);
    for (int s = 0; s < KC_SHARDS; s++) {
        int64_t v[STATS_SLOTS];
        kc_local_stats_read_(l, s, v);
        /* What is still in memory after the flush could not be written (a read-only cache, or a
         * directory that refuses writes) or came in since: it is this process's, and shows. */
        for (int i = 0; i < KC_STAT_COUNT; i++)
            v[i] = add_sat(v[i], __atomic_load_n(&l->delta[s][i], __ATOMIC_RELAXED));
        for (int i = 0; i < KC_STAT_COUNT; i++) out->v[i] += (uint64_t)(v[i] < 0 ? 0 : v[i]);
    }
    pthread_mutex_unlock(&l->flush_mu);
    return KC_OK;
}

void kc_local_latency(kc_local *l, kc_latency *out) {
    int64_t sum[KC_LAT_SLOTS] = {0};
    kc_local_flush(l);
    pthread_mutex_lock(&l->flush_mu); /* as kc_local_stats: no flush between the files and the memory */
    for (int s = 0; s < KC_SHARDS; s++) {
        int64_t v[KC_STATS_ALL];
        stats_read_all(l, s, v);
        for (int i = 0; i < KC_LAT_SLOTS; i++)
            sum[i] = add_sat(sum[i], v[STATS_SLOTS + i] < 0 ? 0 : v[STATS_SLOTS + i]);
    }
    for (int i = 0; i < KC_LAT_SLOTS; i++)
        sum[i] = add_sat(sum[i], __atomic_load_n(&l->lat_delta[i], __ATOMIC_RELAXED));
    pthread_mutex_unlock(&l->flush_mu);
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++) {
        const int64_t *h = &sum[o * KC_LAT_PER];
        out->count[o] = 0;
        for (int b = 0; b <= KC_LATENCY_BUCKETS; b++) {
            out->buckets[o][b] = (uint64_t)(h[b] < 0 ? 0 : h[b]);
            uint64_t c = out->count[o], add = out->buckets[o][b]; /* saturating: a hostile file never wraps */
            out->count[o] = c > UINT64_MAX - add ? UINT64_MAX : c + add;
        }
        out->sum_ns[o] = (uint64_t)(h[KC_LAT_PER - 1] < 0 ? 0 : h[KC_LAT_PER - 1]);
    }
}

static void zero_events(int64_t *v, void *ctx) {
    (void)ctx;
    for (int i = 0; i < KC_STATS_ALL; i++)
        if (is_event(i)) v[i] = 0;
}

int kc_local_stats_zero(kc_local *l) {
    if (l->readonly) return kc_err(KC_EREADONLY, "the cache is read-only");
    kc_local_flush(l);
    for (int s = 0; s < KC_SHARDS; s++) kc_local_stats_update_(l, s, false, zero_events, NULL);
    return KC_OK;
}

void kc_local_set_sizes_(int64_t *v, void *ctx) {
    const kc_local_sizes *c = ctx;
    v[KC_STAT_BYTES] = c->bytes;
    v[KC_STAT_ENTRIES] = c->entries;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/local_impl.h — what the files of the local directory store share: its handle and
 * the helpers one file offers the others.  Only local*.c and safedir.c include it; everyone
 * else uses local.h.
 *
 * The one idea: one store in files split by job — local.c (open, get/put/remove,
 * quarantine, locks, iteration, the backend table), local_provenance.c (where a file's bytes
 * came from), local_batch.c (batched puts), local_stats.c (counters and the stats file
 * format), local_gc.c (the cleaner), local_profiles.c (the site profiles in the size),
 * safedir.c ([Note: safe directories]) — over one struct kc_local.
 *
 * Must not: be included outside src/store/local*.c and safedir.c.
 */
#ifndef KC_STORE_LOCAL_IMPL_H
#define KC_STORE_LOCAL_IMPL_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "local.h"

#define KC_STATS_SLOTS 32                   /* counters a stats file holds: room to grow past KC_STAT_COUNT */
#define KC_LAT_PER (KC_LATENCY_BUCKETS + 2) /* an outcome's latency slots: its buckets, +Inf, its sum in ns */
#define KC_LAT_SLOTS (KC_LOOKUP_OUTCOMES * KC_LAT_PER) /* the latency section of a stats file */
#define KC_STATS_ALL (KC_STATS_SLOTS + KC_LAT_SLOTS)   /* a stats file's values: counters, then latency */
#define FLUSH_INTERVAL_NS 1000000000ull
/* The coarse clocks (Linux: a tick's resolution, no counter read), where there are none the fine ones. */
#ifdef CLOCK_REALTIME_COARSE
#define KC_CLOCK_REALTIME_COARSE CLOCK_REALTIME_COARSE
#define KC_CLOCK_MONOTONIC_COARSE CLOCK_MONOTONIC_COARSE
#else
#define KC_CLOCK_REALTIME_COARSE CLOCK_REALTIME
#define KC_CLOCK_MONOTONIC_COARSE CLOCK_MONOTONIC
#endif
#define TOUCH_AFTER_S 2            /* refresh mtime on a hit when older than this */
#define TOUCH_MEMO 256             /* hits a handle remembers as fresh ([Note: the touch memo] in local_hit.c) */
#define TOUCH_HINT_MAX (16u << 20) /* a bigger file is read as its stat says, not into a remembered size */
#define KC_V1_OLD 8        /* folders a handle holds open before it reads by paths ([Note: the folder held open]) */
#define TEMP_STALE_S 3600  /* temp files older than this are orphans */
#define AUTO_GC_TARGET 0.9 /* an automatic cleanup evicts down to 90% of the limit */
#define ENTRY_SUFFIX ".kce"
#define QUARANTINE_MAX_FILES 64 /* the quarantine keeps at most this many files, */
#define QUARANTINE_SHARE 10     /* and at most this fraction (1/N) of the size limit */

struct kc_local {
    char root[PATH_MAX];   /* <dir> */
    char v1[PATH_MAX];     /* <dir>/v1 */
    int v1fd;              /* <dir>/v1 held open for hits' reads ([Note: the folder held open]); -1: none; atomics */
    int64_t v1_checked;    /* the second v1fd was last found to be the path's folder; atomics */
    pthread_mutex_t v1_mu; /* a check of v1fd against the path */
    int v1_old[KC_V1_OLD]; /* folders held before, closed by kc_local_free */
    size_t nv1_old;
    bool v1_gave_up; /* replaced KC_V1_OLD times: read by paths */
    uint64_t max_size;
    bool readonly;
    bool found_readonly;                     /* opened read-write, but the directory refuses writes: opened read-only */
    bool foreign;                            /* another user owns the directory: entry files are checked when read */
    uid_t owner;                             /* the directory's owner */
    int64_t delta[KC_SHARDS][KC_STAT_COUNT]; /* unflushed counts; atomics */
    uint8_t dirty[KC_SHARDS];
    int64_t lat_delta[KC_LAT_SLOTS]; /* unflushed latency observations (any shard's); atomics */
    uint8_t lat_dirty;
    uint64_t last_flush_ns;
    pthread_mutex_t flush_mu;
    int64_t approx_bytes; /* total bytes, refreshed from the stats files */
    uint64_t approx_at_ns;
    kc_store_backend backend;
    struct {
        uint64_t name;     /* a hash of the store name; 0: none */
        int64_t until;     /* no touch is due before this second (realtime) */
        size_t size;       /* the file's size then */
        int timed;         /* until is the LRU's (the read refreshed when due), not only the size's */
    } touched[TOUCH_MEMO]; /* atomics, relaxed: a torn slot costs a stat or a touch, never a byte */
};

/* ---- local_hit.c ---- */

/** The coarse clock's second: what the LRU and the checks of local_hit.c compare. */
static inline time_t kc_local_now_(void) {
    struct timespec ts;
    clock_gettime(KC_CLOCK_REALTIME_COARSE, &ts);
    return ts.tv_sec;
}

/** The descriptor of v1/ for a hit's reads at second `now` (-1: read by paths), checked against the
 *  path's folder when TOUCH_AFTER_S passed since the last check, or when `force`; *stale (may be
 *  NULL) says whether the folder held until now was not the path's ([Note: the folder held open]).
 *  Callers: local.c, local_gc.c. */
int kc_local_v1_(kc_local *l, time_t now, bool force, bool *stale);

/** For a read of `name` at second `now` (`touch`: one that refreshes the LRU time): *fresh when this
 *  handle took what such a read needs of its stat within the window ([Note: the touch memo]: no
 *  stat needed), and then the size it had (0: none known). */
size_t kc_local_memo_(kc_local *l, const char *name, time_t now, bool touch, bool *fresh);

/** After a read of file `path` (`name`) that took its stat `st` at `now`: with `touch`, the LRU
 *  refresh when due; the window and the size remembered.  Callers: local.c. */
void kc_local_memo_note_(kc_local *l, const char *path, const char *name, const struct stat *st, time_t now,
                         bool touch);

/* ---- local_provenance.c ---- */

/** Set the provenance record `origin` ([Note: provenance record]) on the temporary file fd (path tmp); a
 *  failure is logged, never an error: the write goes on.  Callers: local.c, local_batch.c. */
void kc_local_origin_set_(int fd, const char *tmp, const char *origin);

/**
 * kc_err_errno for the store ([Note: store status codes] in local.c): EROFS, and EACCES on a
 * write (`writing` 1), are KC_EREADONLY; EPERM and EACCES on a read are KC_EIO.  Never KC_EPERM,
 * which the store keeps for its safety refusals.
 */
int kc_local_err_errno_(int err, int writing, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/** A status from common/fs.c for a write under `dir`, with KC_EPERM (an errno) made KC_EREADONLY
 *  when `dir` refuses writes and KC_EIO when it does not (the message kept). */
int kc_local_write_status_(int rc, const char *dir);

/** Whether `f` is "<name>.kce" with a valid name; the name is copied to `name`. */
bool kc_local_entry_file_name_(const char *f, char name[KC_NAME_MAX + 1]);

/** Callback of kc_local_walk_shards_; non-zero stops the walk and is returned. */
typedef int (*kc_local_file_cb)(int shard, const char *dir, const char *file, const struct stat *st, void *ctx);

/** Visit every regular file of every shard (entries, temporary files, lock files); vanished files are skipped. */
int kc_local_walk_shards_(kc_local *l, kc_local_file_cb cb, void *ctx);

/* ---- local_layout.c ---- */

/** v1/ and, when it is new, its shards and quarantine/ made ([Note: shards made when written]); an
 *  existing one checked to hold real folders only, or vouched for by the layout memo when `memo`
 *  allows it ([Note: the layout vouched]).  Callers: local.c (open, for a handle that writes). */
int kc_local_make_layout_(kc_local *l, bool memo);

/** The shard folder of `name`, made when missing: for a write into it.  Callers: local.c, local_batch.c. */
int kc_local_real_shard_(const kc_local *l, const char *name);

/** v1/ and `dir` (when it exists) are real folders ([Note: no links inside]). */
int kc_local_real_sub_dir_(const kc_local *l, const char *dir);

/** For the tests: the layout memo's settle window (ns; negative: the default), and how many times
 *  this process read v1/ at open. */
void kc_local_layout_settle_set_(int64_t ns);
int kc_local_layout_reads_(void);

/** Whether the folder `path` is on a file system whose stamps the layout memo trusts (a local one). */
bool kc_local_layout_fs_(const char *path);

/** v1/<sub> (a shard "xx" or "quarantine") for a write into it: made when missing, then checked
 *  to be a real directory ([Note: shards made when written], [Note: no links inside]). */
int kc_local_make_sub_(const kc_local *l, const char *sub);

/** The automatic cleanup's check after `added` bytes were written (a put, a profile): an LRU gc
 *  when the approximate total is over the limit. */
void kc_local_maybe_cleanup_(kc_local *l, int64_t added);

/* ---- local_profiles.c ([Note: profiles in the size]) ---- */

/** The shard whose bytes count profile file `file` ("<16 hex>.profile"), or -1 for another name. */
int kc_local_profile_shard_(const char *file);
/** Visit every regular file of the profiles folder (profiles, lock files, temporaries); `shard` is
 *  kc_local_profile_shard_ of its name.  No folder (or a link in its place): nothing. */
int kc_local_walk_profiles_(kc_local *l, kc_local_file_cb cb, void *ctx);

/* ---- local_gc.c ---- */

/** Hold the quarantine to QUARANTINE_MAX_FILES files and 1/QUARANTINE_SHARE of the limit, oldest out first. */
void kc_local_quarantine_bound_(kc_local *l);
/** The automatic cleanup after a put: kc_local_gc's LRU eviction, temporaries and recount, without
 *  its mark-and-sweep (it reads no object, so it stays cheap). */
int kc_local_gc_lru_(kc_local *l, uint64_t max_size, kc_gc_report *out);

/* ---- local_stats.c ---- */

/** A shard's exact sizes, as a gc or clear counted them. */
typedef struct kc_local_sizes {
    int64_t bytes, entries;
} kc_local_sizes;

/**
 * Apply `fn` to a shard's values (KC_STATS_ALL: the counters, then the latency section) under its stats file's lock (created if absent; the shard's
 * folder too when `make`, else a missing shard is left alone: it counts zero).  Stats
 * are bookkeeping: a failure (the open is a fault-injection point) is logged, never
 * reported.  -1 when the file could not be opened (the caller keeps what it meant to add:
 * kc_local_flush holds it in memory), else 0.
 */
int kc_local_stats_update_(kc_local *l, int shard, bool make, void (*fn)(int64_t *v, void *ctx), void *ctx);
/** A shard's counters as its file holds them (no lock: a snapshot); zeros if missing or damaged. */
void kc_local_stats_read_(const kc_local *l, int shard, int64_t v[KC_STATS_SLOTS]);
/** For kc_local_stats_update_: set the sizes to the kc_local_sizes in ctx. */
void kc_local_set_sizes_(int64_t *v, void *ctx);
/** Flush the counters when the last flush is older than FLUSH_INTERVAL_NS. */
void kc_local_maybe_flush_(kc_local *l);

/* ---- safedir.c ---- */

/** Who opens a directory, for kc_local_dir_check_: a writer; a reader who asked to be one (KC_OPEN_READONLY,
 *  KCACHE_READONLY=1, KC_OPEN_INSPECT); a reader only because the directory refuses it writes. */
typedef enum { KC_DIR_WRITER, KC_DIR_READER, KC_DIR_FOUND_READER } kc_dir_opener;

/** [Note: safe directories]: KC_OK, or why `root` may not be used (KC_EPERM, KC_EIO, …); a reader writes
 *  nothing there, and may read a cache another user owns ([Note: a reader of another's cache]). */
int kc_local_dir_check_(const char *root, kc_dir_opener who);

#endif

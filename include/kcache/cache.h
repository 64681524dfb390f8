/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/cache.h — opening a cache, and getting and putting entries by key and variant.
 *
 * A kc_cache is the front door: it resolves its configuration (options, then environment
 * overrides), builds the tiers beneath it (the local directory store first, then any remote:
 * [Note: tiers] in src/store/tiers.h), and keeps the statistics.  A kc_cache is
 * safe to use from many threads at once, and many processes may share one directory:
 * writes are atomic (temporary file, fsync, rename), so a reader sees the old entry or the
 * new one, never a torn one.
 *
 * Cache-side failures (a full disk, a corrupt file) are never fatal to a caller: a get
 * that cannot read a usable entry is KC_MISS (the reason is counted and logged), and a put
 * that cannot write is reported but loses nothing already stored.
 */
#ifndef KCACHE_CACHE_H
#define KCACHE_CACHE_H

#include "common.h"
#include "compile.h" /* KC_TOOLCHAIN_ID_MAX */
#include "config.h"  /* kc_config: a cache's settings */
#include "entry.h"
#include "key.h"
#include "stats.h"
#include "target.h" /* kc_target_list: kc_cache_targets */
#include "store.h"  /* KC_OPEN_READONLY, KC_OPEN_ALLOW_UNSAFE_DIR, kc_gc_report, the remote's types */

#ifdef __cplusplus
extern "C" {
#endif

/** Version of kc_options understood by this build (versions 1, without the remote fields, 2, 3 and 4,
 *  without the settings, are accepted). */
#define KC_OPTIONS_VERSION 5

/** Default size limit of the local directory: 5 GiB. */
#define KC_DEFAULT_MAX_SIZE (5ull << 30)

/* Flags of kc_options.flags.  KC_OPEN_READONLY (0x2) and KC_OPEN_ALLOW_UNSAFE_DIR (0x8), which
 * the store honours, are in kcache/store.h; the bits are one space. */
#define KC_OPEN_NO_ENV 0x1u           /**< Ignore KCACHE_* environment overrides. */
#define KC_OPEN_DISABLE 0x4u          /**< Every get misses, nothing is written (KCACHE_DISABLE=1). */
#define KC_OPEN_REMOTE_READONLY 0x10u /**< Read the remote, never write it (KCACHE_REMOTE_READONLY=1). */
/** Accepted and no longer needed: the fields kc_options sets (dir, max_size, remote…: non-NULL,
 *  non-zero) always win over the environment, which fills the fields left unset (kcache/config.h).
 *  An empty dir is an error (KC_EINVAL), never the default directory; an empty remote is none. */
#define KC_OPEN_OPTIONS_WIN 0x20u
/** Must hit (KCACHE_REQUIRE_HIT=1): a lookup that would run NVRTC fails with KC_ENOTCACHED — naming
 *  the graph, the variant and why it missed — and compiles nothing (counted: compiles_refused).  A
 *  graph built from compile units already stored (a new static shape) runs no compiler and is
 *  allowed; waiting for another process's compile of it is allowed too.  For serving hosts that
 *  shipped a warm cache and must never compile. */
#define KC_OPEN_REQUIRE_HIT 0x40u
/** Strict (KCACHE_STRICT=1), for development: a cache-side anomaly that a lookup normally
 *  swallows — an entry found and refused (a signature or MAC that does not vouch for it: KC_EPERM;
 *  corrupt bytes, quarantined when local: KC_ECORRUPT; a graph entry whose image is missing or bad:
 *  KC_ECORRUPT; local or remote, a graph entry or a compile unit's record), a remote that failed or
 *  timed out, a graph that is not cacheable (a bypass), an entry that could not be stored — fails
 *  the lookup with its own status and a reason naming it ("strict (KCACHE_STRICT): entry for sm_90
 *  from redis://… refused: …") instead, and compiles nothing (as AOTAutograd's
 *  strict_autograd_cache).  Without it, a refusal is a miss whose miss_reason says the same. */
#define KC_OPEN_STRICT 0x80u
/** Inspect: open to look at the directory, never to change it — what `kcache stats`, `ls`, `show`,
 *  `verify` (without --repair), `explain`, `coverage`, `export`, `config` (without a value) and
 *  `toolchain` (without --pin) use.  Implies KC_OPEN_READONLY (no entry, stats file, LRU time,
 *  quarantine move, compile lock, memo or record is written, and no remote either), and more:
 *  - a directory that does not exist is not made (nor its parents): the cache opens empty (no
 *    entries, zero counts; kc_cache_dir names it, and the caller may say it is missing);
 *  - KC_OPEN_DISABLE (KCACHE_DISABLE=1) still makes every lookup miss, but the directory is opened:
 *    kc_cache_stats, kc_cache_foreach and kc_cache_peek report what it holds, not an empty cache;
 *  - another user's directory is accepted as a reader accepts it ([Note: a reader of another's
 *    cache] in src/store/safedir.c: no one but its owner may write it).
 *  Counts of this process's lookups are kept in memory only (kc_cache_stats shows them). */
#define KC_OPEN_INSPECT 0x100u

/**
 * Options of kc_cache_open.  Initialise with KC_OPTIONS_INIT or kc_options_init; fields
 * left 0/NULL take their defaults.  Every field set wins over its setting's environment variable,
 * configuration files and default; what is left unset comes from them, in that order (kcache/config.h,
 * `kcache config` shows each value and its origin).  The variables (unless KC_OPEN_NO_ENV):
 * KCACHE_DIR, KCACHE_MAX_SIZE ("5G", "500M", "1024K", bytes), KCACHE_DISABLE=1,
 * KCACHE_READONLY=1 (also accepts a cache another user owns when no one but that user can write it,
 * as a directory that refuses us writes is: a cache baked into a container image), KCACHE_ALLOW_UNSAFE_DIR=1, KCACHE_LOG (see kc_log_configure); the remote tiers: KCACHE_REMOTE (a
 * list of URLs, as `remote` below),
 * KCACHE_REMOTE_READONLY=1, KCACHE_REMOTE_CONNECT_MS, KCACHE_REMOTE_DEADLINE_MS,
 * KCACHE_REMOTE_BACKOFF_MS, KCACHE_REMOTE_TTL (seconds), KCACHE_REMOTE_MAX_VALUE (a size),
 * KCACHE_REMOTE_QUEUE (writes queued at most), KCACHE_REMOTE_CLOSE_MS (how long kc_cache_close
 * waits for queued writes; 3000: the rest are dropped and counted); authentication: KCACHE_HMAC_KEY (the key's
 * bytes) or KCACHE_HMAC_KEY_FILE (a file holding them).
 *
 * Lookups go memory → local directory → remote 1 → remote 2 …, and a remote hit is written back to
 * the faster tiers (the local directory, and each writable remote before it): see [Note: tiers] in
 * src/store/tiers.h.  kc_cache_tier_stats says what each tier saw.
 */
typedef struct kc_options {
    unsigned version;  /**< KC_OPTIONS_VERSION. */
    const char *dir;   /**< Cache directory; default $XDG_CACHE_HOME/kcache or ~/.cache/kcache. */
    uint64_t max_size; /**< Size limit in bytes; 0: KC_DEFAULT_MAX_SIZE. */
    unsigned flags;    /**< KC_OPEN_* */
    /* version 2; version 4: a list of remotes, and their limits any back end's */
    /**
     * The remote tiers, in the order they are read: URLs separated by spaces, each a scheme some back end
     * is registered for (kc_store_register in kcache/sys/store.h; built in: "redis://[user:password@]host:port[/db]"
     * when the build has hiredis), each optionally followed by attributes "|name" or "|name=value" that
     * apply to it alone: read-only, connect-ms=N, deadline-ms=N, backoff-ms=N, backoff-max-ms=N,
     * max-value=SIZE (bytes, or a K, M or G suffix), ttl=SECONDS.  Example:
     * "redis://cache-a:6379 redis://fleet:6379/1|read-only|deadline-ms=200".  NULL or "": none.  (Before
     * version 4 it was one URL, which is a list of one; a URL holding ' ' or '|' cannot be given.)
     */
    const char *remote;
    kc_remote_limits
        remote_config;     /**< Every remote's limits (0 fields: defaults); a URL's attributes override them. */
    unsigned remote_queue; /**< Background writes queued at most; 0: 256. */
    const void *hmac_key;  /**< HMAC-SHA256 key (≥ KC_MAC_KEY_MIN bytes); NULL: entries are not authenticated. */
    size_t hmac_key_len;
    /* version 3: Ed25519 signatures (kcache/sign.h) */
    const char *signing_key_file; /**< A producer's private key: what this cache compiles is signed; NULL: none. */
    const char *keyring;          /**< Trusted public keys (a .pub file or a folder): entries from the remote and
                                 bundles must carry a signature of one of them (a MAC is not enough); NULL: none. */
    /* version 5: any setting by name */
    /**
     * Settings by name, as a configuration file sets them: `nsettings` strings "name=value", each
     * `name` a row of KC_CONFIG_TABLE (kcache/config.h) that a configuration file may set and that
     * belongs to a cache, and `value` in that row's grammar (no spaces around '='), for example
     * {"require_hit=1", "remote_deadline_ms=200", "max_size=2G"}.  They are the kc_options layer:
     * they win over the environment and the files (and `kcache config` shows their origin as
     * "options kc_options.settings[i]"); the directory's recorded `max_size` still wins over them.
     * Refused with KC_EINVAL, naming the setting's index and name, before anything is opened:
     * an unknown name; `dir` (set the field dir); an environment-only row (hmac_key: give the key's
     * bytes in hmac_key or a file in the setting hmac_key_file); a row that belongs to the process
     * (log, log_format, nvrtc, nvrtc_own_cache, pch, pch_max_size, pch_dir, cuda_include,
     * cuda_driver, loaded_graphs, loaded_bytes: the environment or the system file set those); a
     * name given twice; a string without '='; a bad value; and a setting whose field is also set
     * here (max_size, remote, remote_config's and remote_queue's limits, signing_key_file, keyring,
     * a KC_OPEN_* flag's twin such as readonly, or hmac_key_file with hmac_key): one of the two must
     * go.  A value is never echoed in an error when it may be a secret.  The settings only tighten
     * the operator's policy: turning off readonly, require_hit, strict, remote_readonly or disable
     * (or turning on allow_unsafe_dir) that a lower layer (the environment, the directory's file,
     * the system file) chose, or emptying or replacing a keyring or hmac_key_file a lower layer set,
     * is refused with KC_EINVAL naming that layer; tightening or the same value is fine.  NULL and 0: none.
     */
    const char *const *settings;
    size_t nsettings;
} kc_options;

/** Static initialiser of kc_options. */
#define KC_OPTIONS_INIT \
    { KC_OPTIONS_VERSION, NULL, 0, 0, NULL, KC_REMOTE_LIMITS_INIT, 0, NULL, 0, NULL, NULL, NULL, 0 }

/** Initialise options for `version` (KC_OPTIONS_VERSION); KC_EVERSION if unknown. */
KC_API int kc_options_init(kc_options *opts, unsigned version);

typedef struct kc_cache kc_cache;

/**
 * Open (creating as needed, mode 0700) a cache.  `opts` may be NULL for the defaults.
 * Free with kc_cache_close, which also flushes the statistics.
 */
KC_API int kc_cache_open(kc_cache **out, const kc_options *opts);

/** Close a cache; accepts NULL.  No other thread may be using it.  Queued remote writes are
 *  waited for at most KCACHE_REMOTE_CLOSE_MS (3000) plus one remote deadline; the rest are
 *  dropped, each counted once in remote_dropped. */
KC_API void kc_cache_close(kc_cache *c);

/** The resolved cache directory; borrowed, lives as long as the cache. */
KC_API const char *kc_cache_dir(const kc_cache *c);

/**
 * The resolved size limit in bytes (0: none).  The limit is the directory's once one is recorded
 * (kc_cache_set_max_size: `max_size` in its kcache.conf): then kc_options.max_size and
 * KCACHE_MAX_SIZE are ignored, so a process with a smaller value cannot evict everyone's entries
 * down to its own; they apply only to a directory without a recorded limit.
 */
KC_API uint64_t kc_cache_max_size(const kc_cache *c);

/** The record field (kc_cache_record_get) that held the directory's size limit in bytes before
 *  kcache.conf (still read from a directory an older kcache wrote; written to kcache.conf now). */
#define KC_RECORD_MAX_SIZE "max_size"

/**
 * Record `max_size` (bytes; 0: no limit) as the directory's size limit (`max_size` in its
 * kcache.conf: kc_cache_config_set), for every process that opens it from now on, and apply it to this cache (`kcache gc --set-limit SIZE`).  It evicts
 * nothing itself; the next put over the limit or gc does.  KC_EREADONLY for a read-only or
 * disabled cache.
 */
KC_API int kc_cache_set_max_size(kc_cache *c, uint64_t max_size);

/**
 * The settings this cache was opened with (kcache/config.h: each with its value and origin);
 * borrowed, lives as long as the cache.  NULL for a NULL cache.
 */
KC_API const kc_config *kc_cache_config(const kc_cache *c);

/**
 * Write the setting `key` = `value` (NULL: remove it) to the cache directory's kcache.conf,
 * checked first (an unknown key, `dir`, or a bad value: KC_EINVAL, nothing written), atomically,
 * and apply it to this cache's settings where no higher layer (kc_options, the environment) sets
 * it.  KC_EREADONLY for a read-only or disabled cache.  `kcache config KEY VALUE` calls it.
 * Other threads may go on using the cache meanwhile (a value it replaces stays valid until
 * kc_cache_close); two calls of it (or of kc_cache_set_max_size) on one cache must not overlap.
 */
KC_API int kc_cache_config_set(kc_cache *c, const char *key, const char *value);

/** How a cache was opened (from the KC_OPEN_* flags and the environment). */
typedef enum kc_mode {
    KC_CACHE_READWRITE = 0, /**< Reads and writes. */
    KC_CACHE_READONLY = 1,  /**< Reads only: KC_OPEN_READONLY, KCACHE_READONLY=1, or a directory that
                                 refuses writes (mode 0500, a read-only mount; its writes are KC_EREADONLY). */
    KC_CACHE_DISABLED = 2   /**< Every get misses, nothing is written: KC_OPEN_DISABLE or KCACHE_DISABLE=1. */
} kc_mode;

/** Whether the cache was opened read-write, read-only or disabled. */
KC_API kc_mode kc_cache_mode(const kc_cache *c);

/**
 * Where the cache keeps its per-site dynamism profiles ("<dir>/v1/profiles"; the layout is
 * the local directory store's), written to `out` as a NUL-terminated path.  KC_EINVAL when
 * it does not fit in `cap` bytes (or an argument is NULL); KC_EREADONLY for a disabled
 * cache, which has no directory.  The folder may not exist yet.
 */
KC_API int kc_cache_profile_dir(const kc_cache *c, char *out, size_t cap);

/**
 * Get the entry stored under `key` and `variant`, fully validated.  KC_MISS when there is
 * none or it was unusable (a corrupt entry is quarantined, counted and reported as a miss).
 * `*out` is the caller's, freed with kc_entry_free.
 */
KC_API int kc_cache_get(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out);

/**
 * Store an entry under its key and variant, replacing any earlier one atomically, then
 * hold the size limit.  KC_EREADONLY for a read-only or disabled cache (counted).
 */
KC_API int kc_cache_put(kc_cache *c, const kc_entry *e);

/**
 * Read and validate an entry like kc_cache_get, but count nothing, refresh no time and
 * quarantine nothing (for tools that inspect).  KC_MISS, KC_ECORRUPT, or KC_OK.
 */
KC_API int kc_cache_peek(kc_cache *c, const kc_key *key, const char *variant, kc_entry **out);

/** Whether an entry exists (without reading or validating it): 1, 0, or an error. */
KC_API int kc_cache_exists(kc_cache *c, const kc_key *key, const char *variant);

/** Remove one entry; KC_MISS when it was not there. */
KC_API int kc_cache_remove(kc_cache *c, const kc_key *key, const char *variant);

/**
 * A compile lock for one key and variant, shared by every process using the directory: an
 * flock on <shard>/.lock.<key>.<variant>, which the kernel releases when its holder dies, so a
 * waiter takes over a crashed compiler's work ([Note: single-flight] in src/graph/lookup.c).
 */
typedef struct kc_lock kc_lock;

/**
 * Try to take the compile lock without waiting: KC_OK (held; release with kc_cache_unlock),
 * KC_EBUSY (another process or thread compiles it now), or an error.  A read-only or
 * disabled cache gives KC_OK with *out NULL (nothing to coordinate).
 */
KC_API int kc_cache_trylock(kc_cache *c, const kc_key *key, const char *variant, kc_lock **out);

/** Release a compile lock; accepts NULL. */
KC_API void kc_cache_unlock(kc_lock *lock);

/** Add `n` to a counter (front-door events such as compiles and bypasses). */
KC_API void kc_cache_count(kc_cache *c, const kc_key *key, kc_stat id, uint64_t n);

/** The first remote tier's state (URL with the password hidden, breaker); KC_MISS when there is none. */
KC_API int kc_cache_remote_state(kc_cache *c, kc_remote_state *out);

/** How many store tiers the cache has: the local directory (tier 0) and the remotes after it; 0 when
 *  disabled. */
KC_API size_t kc_cache_tier_count(kc_cache *c);

/**
 * Tier `i`'s URL, read-only switch, breaker and this process's counters (kc_tier_stats in kcache/store.h):
 * KC_OK; KC_MISS when there is no tier `i`; KC_EVERSION for an out of another version.
 */
KC_API int kc_cache_tier_stats(kc_cache *c, size_t i, kc_tier_stats *out);

/** A remote tier's state, as kc_cache_remote_state for tier `i` (1: the first remote); KC_MISS when tier
 *  `i` is none or the local directory. */
KC_API int kc_cache_tier_state(kc_cache *c, size_t i, kc_remote_state *out);

/**
 * Wait until the background writer has sent (or dropped) every queued remote write.
 * Each write is bounded by the remote's deadline, and an open breaker drops the rest, so
 * this returns in bounded time.  KC_OK without a remote.
 */
KC_API int kc_cache_remote_flush(kc_cache *c);

/**
 * Queue a copy of a local entry to the remote unless the remote has it already (one
 * EXISTS).  With an HMAC key, an entry stored before the key was set is sealed first.
 * Returns 1 when queued, 0 when the remote had it, else an error (KC_EINVAL without a
 * remote, KC_EREADONLY when it is read-only, KC_MISS when the entry is not local,
 * KC_EUNTRUSTED when this cache cannot vouch for it: fetched or imported without a MAC or
 * signature it trusts, or a keyring without a signing key).
 */
KC_API int kc_cache_publish(kc_cache *c, const kc_key *key, const char *variant);

/** One round trip to the remote (KC_OK, or why not: KC_ETIMEOUT, KC_EIO, KC_EUNAVAILABLE); KC_MISS without one. */
KC_API int kc_cache_remote_ping(kc_cache *c);

/**
 * Sum every shard's counters, this process's unflushed ones included.  A read-only cache
 * (KCACHE_READONLY, or a directory that refuses writes) never writes its counts: they are
 * kept in memory, so its lookups show here for this process only.
 */
KC_API int kc_cache_stats(kc_cache *c, kc_stats *out);

/** Reset the hit/miss/… counters (not entries/bytes) of every shard to zero. */
KC_API int kc_cache_stats_zero(kc_cache *c);

/** One stored entry, as seen by kc_cache_foreach. Borrowed for the callback's duration. */
typedef struct kc_cache_item {
    kc_key key;
    const char *variant;
    uint64_t bytes;
    int64_t last_used; /**< Seconds since the epoch (the file's time). */
    const char *path;
} kc_cache_item;

/** Callback of kc_cache_foreach; a non-zero return stops the walk and is returned. */
typedef int (*kc_cache_item_cb)(const kc_cache_item *item, void *ctx);

/** Visit every stored entry (files vanishing during the walk are skipped). */
KC_API int kc_cache_foreach(kc_cache *c, kc_cache_item_cb cb, void *ctx);

/** Version of kc_verify_report this build fills. */
#define KC_VERIFY_REPORT_VERSION 1

/** What kc_cache_verify found ([Note: two levels] in kcache/entry.h).  Initialise with
 *  KC_VERIFY_REPORT_INIT ([Note: versioned structs]: another version is KC_EVERSION). */
typedef struct kc_verify_report {
    unsigned version; /**< KC_VERIFY_REPORT_VERSION, set by the caller (kept). */
    uint64_t checked, ok, corrupt, quarantined;
    uint64_t stale;          /**< Objects of another format version: misses to readers, removed by gc; not corrupt. */
    uint64_t images_checked; /**< Images whose bytes were checked against both digests (XXH3-128 and SHA-256). */
    uint64_t refs_checked;   /**< References of graph entries and unit records followed. */
    uint64_t missing_refs;   /**< References to an image not in the cache. */
    uint64_t bad_refs;       /**< References to an image that is corrupt or is not the image referred to. */
    uint64_t dangling; /**< Graph entries and unit records with a missing or bad image (misses; gc removes them). */
} kc_verify_report;

/** Initialiser of a kc_verify_report: this version, every count 0. */
#define KC_VERIFY_REPORT_INIT \
    { KC_VERIFY_REPORT_VERSION, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * Decode and validate every object — graph entries, images (their bytes against both digests)
 * and unit records — and follow every reference: each image a graph entry or unit record refers
 * to must be present, sound and the image referred to.  Corrupt objects are quarantined; a
 * dangling graph entry or unit record is reported, not removed (kc_cache_gc removes it); an
 * object of another format version is reported as stale, not corrupt.
 */
KC_API int kc_cache_verify(kc_cache *c, kc_verify_report *out);

/** Version of kc_signature_report this build fills. */
#define KC_SIGNATURE_REPORT_VERSION 1

/** What kc_cache_verify_signatures found.  Initialise with KC_SIGNATURE_REPORT_INIT. */
typedef struct kc_signature_report {
    unsigned version;   /**< KC_SIGNATURE_REPORT_VERSION, set by the caller (kept). */
    uint64_t checked;   /**< Objects of this format read. */
    uint64_t signed_ok; /**< Signed by a key the keyring trusts, and the signature matches. */
    uint64_t unsigned_; /**< Carrying no signature (sealed with a MAC, or nothing). */
    uint64_t refused;   /**< Signed by a key the keyring does not trust, or the signature does not match. */
} kc_signature_report;

/** Initialiser of a kc_signature_report: this version, every count 0. */
#define KC_SIGNATURE_REPORT_INIT \
    { KC_SIGNATURE_REPORT_VERSION, 0, 0, 0, 0 }

/**
 * Check every local object's signature against the cache's keyring (KCACHE_KEYRING,
 * kc_options.keyring): KC_EINVAL when the cache has none.  A maintenance read: counts nothing,
 * refreshes nothing, removes nothing; each object not signed_ok is logged (KCACHE_LOG=store).
 */
KC_API int kc_cache_verify_signatures(kc_cache *c, kc_signature_report *out);

/**
 * Evict least-recently-used entries until the directory holds at most `max_size` bytes
 * (0: the cache's limit; a cache without a limit, KCACHE_MAX_SIZE=0, evicts nothing), collect
 * stale temporary files (an hour old: a write in flight is never one), and recount every shard.
 * Then sweep what no graph can use ([Note: two levels] in kcache/entry.h): objects of another
 * format version, graph entries and unit records whose image is gone, and images nothing refers
 * to that are over an hour old (the policy at the top of src/store/local_gc.c).  One
 * cleaner at a time: KC_EBUSY when another process is cleaning.  `out` may be NULL.
 */
KC_API int kc_cache_gc(kc_cache *c, uint64_t max_size, kc_gc_report *out);

/** Version of kc_gc_options this build knows. */
#define KC_GC_OPTIONS_VERSION 1

/** What kc_cache_gc_ext is asked to do.  The caller's: initialise with KC_GC_OPTIONS_INIT. */
typedef struct kc_gc_options {
    unsigned version;  /**< KC_GC_OPTIONS_VERSION, set by the caller. */
    uint64_t max_size; /**< As kc_cache_gc's `max_size` (0: the cache's limit). */
    /** Above 0: first evict every object (graph entry, image, unit record, site profile) not used
     *  for longer than this many seconds — its last use is its file's time, which a hit refreshes
     *  (ccache's --evict-older-than).  An object whose time is in the future is not evicted by age.
     *  Graph entries and unit records left without their image are then swept as dangling. */
    uint64_t older_than_s;
} kc_gc_options;

/** Initialiser of a kc_gc_options: this version, the cache's limit, no age limit. */
#define KC_GC_OPTIONS_INIT \
    { KC_GC_OPTIONS_VERSION, 0, 0 }

/**
 * kc_cache_gc with options (`opts` NULL: KC_GC_OPTIONS_INIT): evict what was not used for longer
 * than opts->older_than_s, then the least recently used down to opts->max_size, then sweep as
 * kc_cache_gc does.  Age evictions count in out->evicted.  KC_EVERSION for an unknown version.
 */
KC_API int kc_cache_gc_ext(kc_cache *c, const kc_gc_options *opts, kc_gc_report *out);

/** Remove every entry (and the quarantine); counters other than totals are kept. */
KC_API int kc_cache_clear(kc_cache *c);

/**
 * Parse a size such as "5G", "500M", "64K", "123" (bytes; suffixes are powers of 1024,
 * an optional trailing "B"/"iB" is accepted).  KC_EINVAL on anything else.
 */
KC_API int kc_parse_size(const char *s, uint64_t *out);

/* ---- the directory's record: small named facts that are not entries ---- */

/**
 * The cache directory's record (<dir>/v1/record): "name=value" lines, names of 1 to 128
 * of A-Z a-z 0-9 . _ - :, values of at most 8192 bytes without a newline.  kcache keeps
 * "pin", "toolchain.<id>" and "nvrtc.file.*" there (see kc_cache_toolchain); other users
 * take a prefix of their own.  Readers need no lock; writers are serialised across
 * processes, so two setting different fields at once lose neither.
 *
 * kc_cache_record_get copies the value of `name` into `out`: KC_OK, KC_MISS when it is
 * absent (or the cache is disabled), KC_EINVAL when it does not fit in `cap`.
 */
KC_API int kc_cache_record_get(kc_cache *c, const char *name, char *out, size_t cap);

/** Set `name` to `value` (NULL: remove it).  KC_EREADONLY for a read-only or disabled cache. */
KC_API int kc_cache_record_set(kc_cache *c, const char *name, const char *value);

/** Called with each field; a non-zero return stops the walk and is returned. */
typedef int (*kc_cache_record_cb)(const char *name, const char *value, void *ctx);

/** Call `cb` with each field whose name starts with `prefix` (NULL: all), in the record's order. */
KC_API int kc_cache_record_foreach(kc_cache *c, const char *prefix, kc_cache_record_cb cb, void *ctx);

/* ---- which toolchain's entries a cache's lookups use ---- */

/** Where a kc_toolchain_choice came from, strongest first. */
typedef enum kc_toolchain_from {
    KC_TOOLCHAIN_PIN_ENV = 1, /**< KCACHE_TOOLCHAIN=<id> */
    KC_TOOLCHAIN_PIN,         /**< the record's "pin" (kcache toolchain --pin <id>) */
    KC_TOOLCHAIN_LOCAL,       /**< this host's NVRTC (kc_toolchain_local) */
    KC_TOOLCHAIN_RECORDED     /**< no NVRTC here: the one toolchain the record says stored entries */
} kc_toolchain_from;

/** The toolchain identity the keys of a cache's lookups hold. */
typedef struct kc_toolchain_choice {
    char id[KC_TOOLCHAIN_ID_MAX]; /**< as kc_toolchain.id */
    kc_toolchain_from from;
    const char *how; /**< from, in words ("this host's NVRTC", …); static */
} kc_toolchain_choice;

/**
 * The toolchain identity that keys use with cache `c` (NULL: no cache), in this order:
 * KCACHE_TOOLCHAIN; the record's pin; this host's NVRTC, identified from its file without
 * loading it (with a read-write cache, a memo in the record, checked against the file's
 * device, inode, size, mtime and ctime, spares even opening it); and, on a host with no
 * NVRTC, the toolchain the record says stored this directory's entries — when it names
 * exactly one.  Never a guess: with none or several recorded, KC_ENONVRTC says so and how
 * to pin one.  Memoised per process and directory once found.
 */
KC_API int kc_cache_toolchain(kc_cache *c, kc_toolchain_choice *out);

/** The targets the toolchain of kc_cache_toolchain compiles (kc_target_supported: this host's
 *  NVRTC's list when the keys use it, else kcache's table; [Note: target check] in
 *  kcache/target.h): what a tool checks a named target against before any lookup or compile.
 *  KC_OK with the table when no toolchain can be chosen.  Thread-safe. */
KC_API int kc_cache_targets(kc_cache *c, kc_target_list *out);

/* ---- purging a fleet: remove chosen objects from every tier at once (`kcache purge`) ---- */

/*
 * The objects chosen by key, compile unit, toolchain, producer key or age, removed from the local
 * directory and every writable remote: how a fleet gets rid of a wrong or poisoned entry
 * (docs/incident.md).  Selectors combine (AND); what a selector needs from an object's bytes is read
 * with the entry decoder, which trusts nothing (a remote's bytes are hostile): an object that fails it
 * is reported as corrupt, and removed only when asked (`corrupt`).  Read-only remotes are never
 * written: the report names them as skipped.  Images that only a purged graph entry referred to are
 * left to gc: nothing refers to them, so no lookup can use them, and an image is named by its content.
 */

/** Version of kc_purge_options and kc_purge_report this build knows. */
#define KC_PURGE_VERSION 1

/** Where kc_cache_purge looks (kc_purge_options.where); 0: everywhere. */
#define KC_PURGE_LOCAL 0x1u
#define KC_PURGE_REMOTE 0x2u

/** Shortest key prefix `key` and `unit` accept: 8 hex digits (32 is the whole key). */
#define KC_PURGE_PREFIX_MIN 8

/** One object chosen: the tier (its index in kc_purge_report.tier), its store name, its size, whether it
 *  failed validation, and (not a dry run) whether it was removed. */
typedef void (*kc_purge_cb)(size_t tier, const char *name, uint64_t bytes, int corrupt, int removed, void *ctx);

/** What to remove.  The caller's: initialise with KC_PURGE_OPTIONS_INIT.  At least one selector (or
 *  `corrupt`) is required; the selectors set must all match (AND). */
typedef struct kc_purge_options {
    unsigned version;      /**< KC_PURGE_VERSION, set by the caller. */
    const char *key;       /**< Hex prefix (8 to 32 digits) of an object's key: every variant of it. */
    const char *unit;      /**< Hex prefix of a unit key: its unit records, the images they name, and the graph
                                entries that refer to those images. */
    const char *toolchain; /**< The toolchain id an object records (as `kcache toolchain` and `show` name it). */
    /** The key that vouched for an object: "ed25519:<16 hex>" (or the 16 hex alone) — the key id its signature
     *  trailer names, read without checking it, so that the objects of a revoked key are found —, or
     *  "mac:<16 hex>", which must be this cache's MAC key (its id as provenance shows it): the objects whose
     *  MAC checks under it. */
    const char *producer;
    uint64_t older_than_s; /**< Above 0: objects created more than this many seconds ago (a recorded creation
                                time; an object without one does not match). */
    unsigned where;        /**< KC_PURGE_LOCAL, KC_PURGE_REMOTE, or 0: both. */
    int dry_run;           /**< 1: choose and report, remove nothing. */
    int corrupt;           /**< 1: also remove objects that fail validation (among those the key selectors keep). */
    kc_purge_cb on_object; /**< Optional: called for every object chosen. */
    void *ctx;
} kc_purge_options;

#define KC_PURGE_OPTIONS_INIT \
    { KC_PURGE_VERSION, NULL, NULL, NULL, NULL, 0, 0, 0, 0, NULL, NULL }

/** Most tiers a report lists (the local directory and the remotes). */
#define KC_PURGE_TIERS_MAX 8

/** What one tier saw. */
typedef struct kc_purge_tier {
    char url[300]; /**< "local", or the remote's URL with any password hidden. */
    int remote;    /**< 1: a remote tier. */
    int skipped;   /**< 1: not asked (read-only remote, or excluded by `where`). */
    int readonly;  /**< 1: a read-only remote (skipped: purge it where it is written). */
    int failed;    /**< 1: the walk or a removal failed; `error` says why (the rest may still be there). */
    char error[256];
    uint64_t examined; /**< Objects seen. */
    uint64_t matched;  /**< Objects chosen (corrupt ones included when `corrupt`). */
    uint64_t removed;  /**< Objects removed (0 on a dry run). */
    uint64_t bytes;    /**< Bytes of the objects chosen. */
    uint64_t corrupt;  /**< Objects read that failed validation (chosen or not). */
} kc_purge_tier;

/** What kc_cache_purge did.  The caller's: initialise with KC_PURGE_REPORT_INIT. */
typedef struct kc_purge_report {
    unsigned version; /**< KC_PURGE_VERSION, set by the caller (kept). */
    size_t ntiers;
    kc_purge_tier tier[KC_PURGE_TIERS_MAX];
    uint64_t matched, removed, bytes, corrupt; /**< Sums over the tiers. */
    size_t failed;                             /**< Tiers that failed. */
} kc_purge_report;

#define KC_PURGE_REPORT_INIT \
    { KC_PURGE_VERSION, 0, {{{0}, 0, 0, 0, 0, {0}, 0, 0, 0, 0, 0}}, 0, 0, 0, 0, 0 }

/**
 * Remove the objects `opts` selects from the cache's local directory and each writable remote (read-only
 * remotes are skipped and named).  KC_OK when every tier asked was walked (out->failed 0); KC_EIO when one
 * failed (each failure in its tier's `error`; the others are still purged); KC_EINVAL for a malformed or
 * missing selector, a "mac:" producer that is not this cache's MAC key, or a NULL argument; KC_EVERSION for
 * another version of either struct.  Never a crash on hostile bytes: each object is bounded by its tier's
 * value cap and read by the entry decoder.
 */
KC_API int kc_cache_purge(kc_cache *c, const kc_purge_options *opts, kc_purge_report *out);

#ifdef __cplusplus
}
#endif
#endif

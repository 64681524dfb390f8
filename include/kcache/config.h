/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/config.h — every setting of kcache, in one table.
 *
 * One row per setting (KC_CONFIG_TABLE): its name (also its key in a configuration file), its
 * environment variable, its type, whether a file may set it, its default, its largest value, the
 * part that uses it, and one line of documentation.  The library reads them once — when a cache
 * is opened, or, for what belongs to the process (the driver, NVRTC, the toolkit's headers, the
 * loaded-graph table, the log), at the first use — into a typed structure that the parts read;
 * nothing else in kcache reads the environment.  `kcache config` prints each setting with its
 * value and where it came from; `kcache --help`'s environment section and docs/configuration.md
 * are generated from this table (and a test checks that they agree).
 *
 * Where a setting comes from, first found wins:
 *
 *   1. kc_options (a field set: non-NULL, non-zero; a KC_OPEN_* flag set), over everything below
 *      (KC_OPEN_OPTIONS_WIN, which once asked for this order, is still accepted and changes nothing);
 *   2. the environment (KCACHE_*), unless KC_OPEN_NO_ENV; an empty variable is "not set", except
 *      KCACHE_REMOTE (empty: no remote) and KCACHE_DIR / KCACHE_HMAC_KEY_FILE (empty: an error);
 *   3. the cache directory's file, <cache dir>/kcache.conf (where `kcache config KEY VALUE`,
 *      `kcache limit` and `kcache toolchain --pin` write); a directory written by an older kcache
 *      has its size limit in v1/record instead, read as this file when kcache.conf names none
 *      (and its toolchain pin there, which the toolchain choice still honours after kcache.conf's);
 *   4. the system file, /etc/kcache.conf (KCACHE_CONFIG_SYSTEM names another one, for tests and
 *      for packagers), except for a cache opened with KC_OPEN_NO_ENV, which is hermetic: kc_options,
 *      its directory's file and the defaults only;
 *   5. the default.
 *
 * Two exceptions: the cache directory (`dir`) cannot come from its own file; and the directory's
 * size limit (`max_size`), once its file (or v1/record) names one, wins over kc_options and the
 * environment, so that one process with a smaller value cannot evict everyone's entries down to
 * its own (a promise older than the file).
 *
 * The file format is ccache's:
 *
 *   file    = *line
 *   line    = blank / comment / setting
 *   comment = *WSP "#" *any
 *   setting = *WSP key *WSP "=" *WSP value *WSP       (key: a row's name; value: its type's grammar)
 *
 * An unknown key, a setting an environment-only row, or a bad value is an error naming the
 * file and line.  Values have the same strict grammars as the environment's: a boolean is one of
 * 1/true/yes/on or 0/false/no/off; a count is decimal digits up to the row's maximum; seconds are
 * a non-negative decimal number up to the maximum; a size is digits with an optional fraction and
 * K/M/G/T suffix (5G, 500M, 64K).
 *
 * The process's settings (kc_config_process): what belongs to the process and not to one cache —
 * the CUDA driver's file, NVRTC's file and LD_LIBRARY_PATH, the toolkit's include folder,
 * NVRTC's own cache, the loaded-graph table's budget, the log categories — is read once, at its
 * first use, from the environment, the system file and the defaults (no cache directory is known
 * there); a forked child reads its own at its first use.  A program that wants no environment at all calls kc_config_process_init(KC_OPEN_NO_ENV)
 * before anything else; a cache opened with KC_OPEN_NO_ENV ignores the environment for all of its
 * own settings (the graph key's toolkit-headers pin, the toolchain choice, the lock wait, the
 * remote, the trust files), and never changes the process's.
 */
#ifndef KCACHE_CONFIG_H
#define KCACHE_CONFIG_H

#include <stddef.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The table: X(name, ENV, TYPE, FILE, default, max, part, doc).  TYPE is one of BOOL, COUNT,
 * MS (a count of milliseconds), SECONDS, SIZE, PATH, STRING, URLS; FILE is 1 when a configuration
 * file may set it, 0 for the environment-only rows (the ones kcache reads but does not own);
 * max bounds COUNT, MS and SECONDS (0: none).  Rows are in the order `kcache config` prints them.
 */
#define KC_CONFIG_TABLE(X)                                                                                             \
    X(dir, "KCACHE_DIR", PATH, 1, "", 0, "cache",                                                                      \
      "The cache directory; default $XDG_CACHE_HOME/kcache, else ~/.cache/kcache (never set in its own kcache.conf).") \
    X(max_size, "KCACHE_MAX_SIZE", SIZE, 1, "5G", 0, "cache",                                                          \
      "Size limit of the local directory (5G, 500M, 64K, bytes; 0: none); the directory's own kcache.conf wins.")      \
    X(disable, "KCACHE_DISABLE", BOOL, 1, "0", 0, "cache",                                                             \
      "Every get misses and nothing is written (stats, ls and show still report what the directory holds).")           \
    X(readonly, "KCACHE_READONLY", BOOL, 1, "0", 0, "cache",                                                           \
      "Read the cache directory, never write it; another user's cache is accepted if only its owner can write it.")    \
    X(allow_unsafe_dir, "KCACHE_ALLOW_UNSAFE_DIR", BOOL, 1, "0", 0, "store",                                           \
      "Accept a cache directory that others could write to or swap (refused otherwise).")                              \
    X(require_hit, "KCACHE_REQUIRE_HIT", BOOL, 1, "0", 0, "graph",                                                     \
      "A lookup that would run NVRTC fails (KC_ENOTCACHED) instead: for serving hosts that must never compile.")       \
    X(strict, "KCACHE_STRICT", BOOL, 1, "0", 0, "graph",                                                               \
      "Cache anomalies (an entry refused, a remote failure, a bypass) fail the lookup instead of being a miss.")       \
    X(lock_wait, "KCACHE_LOCK_WAIT", SECONDS, 1, "600", 86400, "graph",                                                \
      "Seconds a lookup waits for another process's compile of the same entry before compiling itself.")               \
    X(remote, "KCACHE_REMOTE", URLS, 1, "", 0, "store",                                                                \
      "The remote tiers' URLs, in order (redis://[user:password@]host:port[/db], rediss:// over TLS, "                 \
      "redis+cluster://host:port,..., http(s)://host/base, s3://bucket/prefix; docs/fleet.md); empty: none.")          \
    X(remote_readonly, "KCACHE_REMOTE_READONLY", BOOL, 1, "0", 0, "store", "Read the remote tier, never write it.")    \
    X(remote_connect_ms, "KCACHE_REMOTE_CONNECT_MS", MS, 1, "100", 86400000, "store",                                  \
      "The remote's connect timeout in milliseconds (0: 100).")                                                        \
    X(remote_deadline_ms, "KCACHE_REMOTE_DEADLINE_MS", MS, 1, "500", 86400000, "store",                                \
      "The deadline of one remote command, reply included, in milliseconds (0: 500).")                                 \
    X(remote_backoff_ms, "KCACHE_REMOTE_BACKOFF_MS", MS, 1, "1000", 86400000, "store",                                 \
      "The remote's first circuit-breaker window in milliseconds (doubles per failure; 0: 1000).")                     \
    X(remote_ttl, "KCACHE_REMOTE_TTL", COUNT, 1, "0", 86400000, "store",                                               \
      "Expiry of values written to the remote, in seconds (0: none).")                                                 \
    X(remote_max_value, "KCACHE_REMOTE_MAX_VALUE", SIZE, 1, "64M", 0, "store",                                         \
      "The largest value read from or written to the remote (0: 64M).")                                                \
    X(remote_queue, "KCACHE_REMOTE_QUEUE", COUNT, 1, "256", 86400000, "store",                                         \
      "Background remote writes queued at most (0: 256).")                                                             \
    X(remote_close_ms, "KCACHE_REMOTE_CLOSE_MS", MS, 1, "3000", 86400000, "store",                                     \
      "How long kc_cache_close waits for queued remote writes, in milliseconds (0: 3000); the rest are dropped.")      \
    X(remote_lease_ms, "KCACHE_REMOTE_LEASE_MS", MS, 1, "10000", 86400000, "store",                                    \
      "A miss leases its key in the remote this long while it compiles; other hosts wait for it (0: no leases).")      \
    X(signing_key_file, "KCACHE_SIGNING_KEY_FILE", PATH, 1, "", 0, "entry",                                            \
      "A producer's Ed25519 private key: what this cache compiles is signed.")                                         \
    X(keyring, "KCACHE_KEYRING", PATH, 1, "", 0, "entry",                                                              \
      "Trusted public keys (a .pub file or a folder): remote entries and bundles must be signed by one.")              \
    X(hmac_key, "KCACHE_HMAC_KEY", STRING, 0, "", 0, "entry",                                                          \
      "The fleet's HMAC-SHA256 key (its bytes, at least 16); entries are sealed and checked with it.")                 \
    X(hmac_key_file, "KCACHE_HMAC_KEY_FILE", PATH, 1, "", 0, "entry",                                                  \
      "A file holding the HMAC key (mode 600 or 640; trailing newlines dropped).")                                     \
    X(log, "KCACHE_LOG", STRING, 1, "", 0, "common",                                                                   \
      "Log categories to stderr: store, key, compile, load, graph, guard, recompiles, remote, all (comma-separated).") \
    X(log_format, "KCACHE_LOG_FORMAT", STRING, 1, "text", 0, "common",                                                 \
      "Log format: text (kcache[part] message) or json (one JSON object a line: ts, level, pid, tid, part, msg).")     \
    X(toolchain, "KCACHE_TOOLCHAIN", STRING, 1, "", 0, "cache",                                                        \
      "Pin the toolchain whose entries keys use (an identity as `kcache toolchain` prints it).")                       \
    X(toolkit_headers, "KCACHE_TOOLKIT_HEADERS", STRING, 1, "", 0, "graph",                                            \
      "The toolkit headers identity (32 hex) for graphs that include them, on a host without the toolkit.")            \
    X(nvrtc, "KCACHE_NVRTC", PATH, 1, "", 0, "compile",                                                                \
      "NVRTC's library (a path, or a file name searched in LD_LIBRARY_PATH and the usual folders).")                   \
    X(nvrtc_own_cache, "KCACHE_NVRTC_OWN_CACHE", BOOL, 1, "0", 0, "compile",                                           \
      "Leave NVRTC's own cache on (only for measuring it).")                                                           \
    X(pch, "KCACHE_PCH", BOOL, 1, "1", 0, "compile",                                                                   \
      "Precompiled headers: a header set compiled again in a process reuses its parse (where NVRTC has them).")        \
    X(pch_max_size, "KCACHE_PCH_MAX_SIZE", SIZE, 1, "2G", 0, "compile",                                                \
      "Total size of a process's precompiled header files (least recently used removed first; 0: none kept).")         \
    X(pch_dir, "KCACHE_PCH_DIR", PATH, 1, "", 0, "compile",                                                            \
      "Where a process's precompiled header folder is made (default: $TMPDIR, else /tmp; root's or yours, "            \
      "writable by others only with the sticky bit); removed at exit.")                                                \
    X(cuda_include, "KCACHE_CUDA_INCLUDE", PATH, 1, "", 0, "compile",                                                  \
      "The CUDA toolkit's include folder (default: the toolkit kcache was built with, /usr/local/cuda/include).")      \
    X(cuda_driver, "KCACHE_CUDA_DRIVER", PATH, 1, "libcuda.so.1", 0, "cuda",                                           \
      "The CUDA driver library to open (a test's driver double, for one).")                                            \
    X(loaded_graphs, "KCACHE_LOADED_GRAPHS", COUNT, 1, "512", 4294967296ull, "graph",                                  \
      "Graphs kept loaded at most when released (least recently used unloaded first).")                                \
    X(loaded_bytes, "KCACHE_LOADED_BYTES", COUNT, 1, "1073741824", 1125899906842624ull, "graph",                       \
      "Bytes of loaded images kept at most when released.")                                                            \
    X(home, "HOME", PATH, 0, "", 0, "cache", "The home folder: the default cache directory is under it.")              \
    X(xdg_cache_home, "XDG_CACHE_HOME", PATH, 0, "", 0, "cache",                                                       \
      "The default cache directory is $XDG_CACHE_HOME/kcache.")                                                        \
    X(tmpdir, "TMPDIR", PATH, 0, "/tmp", 0, "tools", "Where `kcache demo` writes its scratch cache.")                  \
    X(ld_library_path, "LD_LIBRARY_PATH", STRING, 0, "", 0, "compile", "Folders searched first for NVRTC's library.")  \
    X(config_system, "KCACHE_CONFIG_SYSTEM", PATH, 0, "/etc/kcache.conf", 0, "config",                                 \
      "The system configuration file (for tests and packagers).")

/** Setting ids: KC_CONFIG_<name>, in table order; KC_CONFIG_COUNT rows. */
typedef enum kc_config_id {
#define KC_CONFIG_ID_(name, env, type, file, def, max, part, doc) KC_CONFIG_##name,
    KC_CONFIG_TABLE(KC_CONFIG_ID_)
#undef KC_CONFIG_ID_
        KC_CONFIG_COUNT
} kc_config_id;

/** A setting's type (the TYPE column). */
typedef enum kc_config_type {
    KC_CONFIG_TYPE_BOOL,
    KC_CONFIG_TYPE_COUNT,
    KC_CONFIG_TYPE_MS,
    KC_CONFIG_TYPE_SECONDS,
    KC_CONFIG_TYPE_SIZE,
    KC_CONFIG_TYPE_PATH,
    KC_CONFIG_TYPE_STRING,
    KC_CONFIG_TYPE_URLS
} kc_config_type;

/** kc_config_process_init's flag: no environment (the same bit as kcache/cache.h's KC_OPEN_NO_ENV). */
#define KC_CONFIG_NO_ENV 0x1u

/** Where a setting's value came from. */
typedef enum kc_config_origin {
    KC_ORIGIN_DEFAULT = 0, /**< The table's default. */
    KC_ORIGIN_SYSTEM_FILE, /**< The system file (/etc/kcache.conf). */
    KC_ORIGIN_DIR_FILE,    /**< The cache directory's kcache.conf (or, for an older directory, v1/record). */
    KC_ORIGIN_ENVIRONMENT, /**< Its environment variable. */
    KC_ORIGIN_OPTIONS      /**< kc_options (or the command line's flags). */
} kc_config_origin;

/** One row of the table, as data.  Static. */
typedef struct kc_config_row {
    const char *name; /**< The key ("max_size"). */
    const char *env;  /**< The environment variable ("KCACHE_MAX_SIZE"). */
    kc_config_type type;
    int in_file;            /**< 1: a configuration file may set it. */
    const char *def;        /**< The default, as text ("" for none). */
    unsigned long long max; /**< The largest COUNT/MS/SECONDS value; 0: none. */
    const char *part;       /**< The part that uses it. */
    const char *doc;        /**< One line. */
} kc_config_row;

/** The row of `id`; NULL when out of range. */
KC_API const kc_config_row *kc_config_row_of(int id);

/** The id whose name (or environment variable) is `name`; -1 if none. */
KC_API int kc_config_find(const char *name);

/** The type's name as the reference prints it ("bool", "count", "milliseconds", ...); static. */
KC_API const char *kc_config_type_name(kc_config_type t);

/** An origin's name: "default", "system file", "cache directory file", "environment", "options"; static. */
KC_API const char *kc_config_origin_name(kc_config_origin o);

/** A set of settings in force (a cache's: kc_cache_config; the process's: kc_config_process). */
typedef struct kc_config kc_config;

/**
 * The value of `id` as text in `out` (a boolean as "true"/"false", a size or count in decimal
 * digits, seconds as the shortest decimal; the HMAC key, and a URL's password, as "***"), and where it came
 * from in *origin (may be NULL) and `where` (may be NULL): the variable, or "FILE:LINE".
 */
KC_API int kc_config_get(const kc_config *cfg, int id, char *out, size_t cap, kc_config_origin *origin, char *where,
                         size_t where_cap);

/**
 * The process's settings (see the top of this header): read at the first call, from the
 * environment (unless kc_config_process_init said otherwise), the system file and the defaults.
 * A bad value there leaves that setting its default and is said once on stderr.  Never NULL;
 * lives as long as the process.
 */
KC_API const kc_config *kc_config_process(void);

/**
 * Read the process's settings now, with `flags` (KC_CONFIG_NO_ENV: no environment; 0: as the
 * first use would).  KC_EBUSY when they were already read (by a first use or an earlier call).
 * As at a first use, a bad value is said on stderr and leaves that setting its default, and a bad
 * line of the system file leaves every setting its default (said, and returned as the error).
 */
KC_API int kc_config_process_init(unsigned flags);

/**
 * Validate `value` for the setting `name` and write it to the configuration file `path`
 * atomically (a line replaced in place, or appended; comments and other lines kept); `value`
 * NULL removes the setting.  An unknown name, an environment-only one, or a bad value is an error
 * and nothing is written.  `kcache config KEY VALUE` does this through kc_cache_config_set.
 */
KC_API int kc_config_file_set(const char *path, const char *name, const char *value);

/**
 * Whether `value` is a valid value of the setting `name` (a key a configuration file may set):
 * KC_OK, or KC_EINVAL saying why — the same check kc_config_file_set and a file's line get.
 * Nothing is read or written.  `kcache config KEY VALUE` checks VALUE so before it opens a cache.
 */
KC_API int kc_config_check(const char *name, const char *value);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cache.c — the front door: options and environment overrides, sizes, get/put
 * through validation, corrupt and misplaced entries as misses (quarantined and counted),
 * read-only and disabled caches, verify.
 */
#include "helpers.h"

#include "common/internal.h"
#include "kcache.h"
#include "kcache/sys/store.h"

static char *dir;

static int setup(void **state) {
    (void)state;
    dir = kct_tmpdir("kcache");
    return dir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    unsetenv("KCACHE_DIR");
    unsetenv("KCACHE_MAX_SIZE");
    unsetenv("KCACHE_READONLY");
    unsetenv("KCACHE_DISABLE");
    unsetenv("KCACHE_REMOTE");
    kct_rmtree(dir);
    free(dir);
    return 0;
}

static kc_cache *open_at(const char *d, unsigned flags) {
    kc_options o;
    assert_int_equal(kc_options_init(&o, KC_OPTIONS_VERSION), KC_OK);
    o.dir = d;
    o.flags = flags;
    kc_cache *c;
    int rc = kc_cache_open(&c, &o);
    if (rc != KC_OK) fail_msg("open %s: %s", d ? d : "(default)", kc_error_last()->message);
    return c;
}

static kc_entry *entry_for(int i, const char *variant, const char *payload) {
    kc_key_builder *kb;
    kc_key_builder_new(&kb);
    kc_key_add_u64(kb, KC_COMP_EXTRA, "i", (uint64_t)i);
    kc_key k;
    kc_key_finish(kb, &k);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, variant), KC_OK);
    assert_int_equal(kc_entry_add_key_digests(e, kb), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, payload, strlen(payload)), KC_OK);
    kc_key_builder_free(kb);
    return e;
}

static void test_parse_size(void **state) {
    (void)state;
    struct {
        const char *s;
        uint64_t v;
    } ok[] = {
        {"0", 0},
        {"123", 123},
        {"64K", 65536},
        {"5G", 5ull << 30},
        {"500M", 500ull << 20},
        {"1.5G", 3ull << 29},
        {"10MiB", 10ull << 20},
        {"2kb", 2048},
        {"1T", 1ull << 40},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v;
        assert_int_equal(kc_parse_size(ok[i].s, &v), KC_OK);
        assert_int_equal(v, ok[i].v);
    }
    const char *bad[] = {"", "G", "-5M", "5X", "5 G", "abc", "1e30G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v;
        assert_int_equal(kc_parse_size(bad[i], &v), KC_EINVAL);
    }
    /* Strict (issue 15, item 19): nothing strtod takes beyond digits and one fraction. */
    const char *guessed[] = {" 5G", "0x10", "1e3", "1e3K", "5G ", "1.2.3M", "nan", "inf"};
    for (size_t i = 0; i < sizeof guessed / sizeof guessed[0]; i++) {
        uint64_t v;
        if (kc_parse_size(guessed[i], &v) != KC_EINVAL) fail_msg("size '%s' was accepted", guessed[i]);
    }
}

static void test_options_version_is_checked(void **state) {
    (void)state;
    kc_options o;
    assert_int_equal(kc_options_init(&o, 99), KC_EVERSION);
    o.version = 99;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_EVERSION);
    assert_null(c);
}

static void test_put_get_round_trip(void **state) {
    (void)state;
    kc_cache *c = open_at(dir, 0);
    kc_entry *e = entry_for(1, "sm_90", "cubin"), *g;
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &g), KC_MISS);
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    assert_int_equal(kc_cache_exists(c, kc_entry_key(e), "sm_90"), 1);
    assert_int_equal(kc_cache_exists(c, kc_entry_key(e), "sm_80"), 0);
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &g), KC_OK);
    const void *p;
    size_t n;
    assert_int_equal(kc_entry_section(g, KC_SECTION_KERNELS, &p, &n), KC_OK);
    assert_int_equal(n, 5);
    assert_memory_equal(p, "cubin", 5);
    assert_int_equal(kc_entry_digest_count(g), KC_COMP_COUNT);
    kc_entry_free(g);
    kc_stats s;
    kc_cache_stats(c, &s);
    assert_int_equal(s.v[KC_STAT_HITS], 1);
    assert_int_equal(s.v[KC_STAT_MISSES], 1);
    assert_int_equal(s.v[KC_STAT_PUTS], 1);
    assert_int_equal(s.v[KC_STAT_ENTRIES], 1);
    assert_int_equal(kc_cache_remove(c, kc_entry_key(e), "sm_90"), KC_OK);
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &g), KC_MISS);
    kc_entry_free(e);
    kc_cache_close(c);
}

static void entry_path(kc_cache *c, const kc_entry *e, char *out, size_t cap) {
    char hex[33];
    kc_key_to_hex(kc_entry_key(e), hex);
    snprintf(out, cap, "%s/v1/%.2s/%s.%s.kce", kc_cache_dir(c), hex, hex, kc_entry_variant(e));
}

static void test_corrupt_entry_is_a_quarantined_miss(void **state) {
    (void)state;
    kc_cache *c = open_at(dir, 0);
    kc_entry *e = entry_for(2, "sm_80", "some kernel bytes"), *g;
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    char p[1024];
    entry_path(c, e, p, sizeof p);
    size_t len;
    uint8_t *b = kct_read(p, &len);
    b[len - 3] ^= 0x40;
    assert_int_equal(kct_write(p, b, len), 0);
    free(b);
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_80", &g), KC_MISS);
    assert_null(g);
    assert_non_null(strstr(kc_error_last()->message, "corrupt"));
    assert_int_equal(access(p, F_OK), -1);
    char q[1024];
    snprintf(q, sizeof q, "%s/v1/quarantine", dir);
    assert_int_equal(kct_count_files(q, ".kce"), 1);
    kc_stats s;
    kc_cache_stats(c, &s);
    assert_int_equal(s.v[KC_STAT_CORRUPT], 1);
    assert_int_equal(s.v[KC_STAT_MISSES], 1);
    /* A new put heals it. */
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_80", &g), KC_OK);
    kc_entry_free(g);
    kc_entry_free(e);
    kc_cache_close(c);
}

/* A valid entry stored under another name is never served for that name. */
static void test_misplaced_entry_is_a_miss(void **state) {
    (void)state;
    kc_cache *c = open_at(dir, 0);
    kc_entry *a = entry_for(3, "sm_90", "A"), *b = entry_for(4, "sm_90", "B"), *g;
    assert_int_equal(kc_cache_put(c, a), KC_OK);
    assert_int_equal(kc_cache_put(c, b), KC_OK);
    char pa[1024], pb[1024];
    entry_path(c, a, pa, sizeof pa);
    entry_path(c, b, pb, sizeof pb);
    assert_int_equal(rename(pa, pb), 0);
    assert_int_equal(kc_cache_get(c, kc_entry_key(b), "sm_90", &g), KC_MISS);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(c, &r), KC_OK);
    assert_int_equal(r.checked, 0); /* the misplaced one was quarantined by the get */
    kc_entry_free(a);
    kc_entry_free(b);
    kc_cache_close(c);
}

static void test_verify_finds_and_quarantines(void **state) {
    (void)state;
    kc_cache *c = open_at(dir, 0);
    kc_entry *e[5];
    for (int i = 0; i < 5; i++) {
        e[i] = entry_for(10 + i, "sm_90", "payload");
        assert_int_equal(kc_cache_put(c, e[i]), KC_OK);
    }
    char p[1024];
    entry_path(c, e[2], p, sizeof p);
    truncate(p, 50);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(c, &r), KC_OK);
    assert_int_equal(r.checked, 5);
    assert_int_equal(r.ok, 4);
    assert_int_equal(r.corrupt, 1);
    assert_int_equal(r.quarantined, 1);
    assert_int_equal(kc_cache_verify(c, &r), KC_OK);
    assert_int_equal(r.checked, 4);
    assert_int_equal(r.corrupt, 0);
    for (int i = 0; i < 5; i++) kc_entry_free(e[i]);
    kc_cache_close(c);
}

static void test_environment_overrides(void **state) {
    (void)state;
    char d2[600];
    snprintf(d2, sizeof d2, "%s/from-env", dir);
    setenv("KCACHE_DIR", d2, 1);
    setenv("KCACHE_MAX_SIZE", "10M", 1);
    kc_cache *c = open_at(NULL, 0); /* what the options leave unset, the environment fills */
    assert_string_equal(kc_cache_dir(c), d2);
    assert_int_equal(kc_cache_max_size(c), 10ull << 20);
    kc_cache_close(c);
    c = open_at(dir, 0); /* what they set wins (kcache/config.h's order) */
    assert_string_equal(kc_cache_dir(c), dir);
    assert_int_equal(kc_cache_max_size(c), 10ull << 20);
    kc_cache_close(c);
    c = open_at(dir, KC_OPEN_NO_ENV); /* explicit opt-out */
    assert_string_equal(kc_cache_dir(c), dir);
    assert_int_equal(kc_cache_max_size(c), KC_DEFAULT_MAX_SIZE);
    kc_cache_close(c);
    setenv("KCACHE_MAX_SIZE", "lots", 1);
    kc_options o = KC_OPTIONS_INIT;
    kc_cache *bad;
    assert_int_equal(kc_cache_open(&bad, &o), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "KCACHE_MAX_SIZE"));
    unsetenv("KCACHE_MAX_SIZE");
    unsetenv("KCACHE_DIR");
    /* Default: $XDG_CACHE_HOME/kcache, else ~/.cache/kcache. */
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("XDG_CACHE_HOME", dir, 1);
    c = open_at(NULL, 0);
    snprintf(d2, sizeof d2, "%s/kcache", dir);
    assert_string_equal(kc_cache_dir(c), d2);
    kc_cache_close(c);
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", dir, 1);
    c = open_at(NULL, 0);
    snprintf(d2, sizeof d2, "%s/.cache/kcache", dir);
    assert_string_equal(kc_cache_dir(c), d2);
    kc_cache_close(c);
    if (old_xdg) setenv("XDG_CACHE_HOME", old_xdg, 1);
    if (old_home) setenv("HOME", old_home, 1);
    free(old_xdg);
    free(old_home);
}

static void test_readonly_and_disabled(void **state) {
    (void)state;
    kc_cache *c = open_at(dir, 0);
    kc_entry *e = entry_for(20, "sm_90", "x"), *f = entry_for(21, "sm_90", "y"), *g;
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_cache_close(c);

    setenv("KCACHE_READONLY", "1", 1);
    c = open_at(dir, 0);
    assert_int_equal(kc_cache_mode(c), 1);
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &g), KC_OK); /* reads work */
    kc_entry_free(g);
    assert_int_equal(kc_cache_put(c, f), KC_EREADONLY);
    assert_int_equal(kc_cache_exists(c, kc_entry_key(f), "sm_90"), 0);
    kc_stats s;
    kc_cache_stats(c, &s);
    assert_int_equal(s.v[KC_STAT_READONLY_SKIPS], 1);
    kc_cache_close(c);
    unsetenv("KCACHE_READONLY");

    setenv("KCACHE_DISABLE", "yes", 1);
    c = open_at(dir, 0);
    assert_int_equal(kc_cache_mode(c), 2);
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &g), KC_MISS);
    assert_int_equal(kc_cache_put(c, f), KC_EREADONLY);
    kc_cache_close(c);
    setenv("KCACHE_DISABLE", "0", 1); /* "0" means off */
    c = open_at(dir, 0);
    assert_int_equal(kc_cache_mode(c), 0);
    kc_cache_close(c);
    kc_entry_free(e);
    kc_entry_free(f);
}

static void test_allocation_failures_never_crash(void **state) {
    (void)state;
    kc_cache *c = open_at(dir, 0);
    kc_entry *e = entry_for(30, "sm_90", "payload"), *g;
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    for (long n = 1; n < 100; n++) {
        kc_alloc_fail_at(n, false);
        int rc = kc_cache_get(c, kc_entry_key(e), "sm_90", &g);
        kc_alloc_fail_at(0, false);
        if (rc == KC_OK) {
            kc_entry_free(g);
            break;
        }
        assert_int_equal(rc, KC_MISS);
        assert_null(g);
    }
    /* Nothing was quarantined by an allocation failure. */
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &g), KC_OK);
    kc_entry_free(g);
    kc_entry_free(e);
    kc_cache_close(c);
}

/* The mtime of an entry's file: its LRU time. */
static time_t entry_mtime(const kc_entry *e) {
    char hex[KC_KEY_HEX_LEN + 1], path[4096];
    kc_key_to_hex(kc_entry_key(e), hex);
    snprintf(path, sizeof path, "%s/v1/%.2s/%s.sm_90.kce", dir, hex, hex);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return st.st_mtime;
}

static void set_entry_mtime(const kc_entry *e, time_t t) {
    char hex[KC_KEY_HEX_LEN + 1], path[4096];
    kc_key_to_hex(kc_entry_key(e), hex);
    snprintf(path, sizeof path, "%s/v1/%.2s/%s.sm_90.kce", dir, hex, hex);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* Maintenance reads (verify, export, an import's comparison) are not uses: they leave the
 * LRU time alone, or one `kcache verify` would make the next gc evict recently used entries
 * instead of old ones.  A lookup is a use. */
static void test_maintenance_reads_keep_lru_order(void **state) {
    (void)state;
    kc_cache *c = open_at(dir, KC_OPEN_NO_ENV);
    kc_entry *e = entry_for(1, "sm_90", "kernels");
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    time_t old = time(NULL) - 3600;
    set_entry_mtime(e, old);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(c, &r), KC_OK);
    assert_int_equal(r.ok, 1);
    char bundle[4096];
    snprintf(bundle, sizeof bundle, "%s/b.kcb", dir);
    assert_int_equal(kc_bundle_export(c, bundle, NULL, NULL), KC_OK);
    kc_bundle_report br = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_import(c, bundle, 0, &br), KC_OK);
    assert_int_equal(br.unchanged, 1);
    assert_int_equal(entry_mtime(e), old);
    kc_entry *g;
    assert_int_equal(kc_cache_get(c, kc_entry_key(e), "sm_90", &g), KC_OK);
    kc_entry_free(g);
    assert_true(entry_mtime(e) > old + 3000);
    kc_entry_free(e);
    kc_cache_close(c);
}

/* What the options set beats KCACHE_DIR, KCACHE_MAX_SIZE and KCACHE_REMOTE, with or without
 * KC_OPEN_OPTIONS_WIN (kcache/config.h's order); what they leave unset, the environment still fills. */
static void test_options_win_over_environment(void **state) {
    (void)state;
    if (!kc_store_scheme_find("redis")) skip(); /* a build without the redis back end (KCACHE_WITH_REDIS) */
    char env_dir[600], opt_dir[600];
    snprintf(env_dir, sizeof env_dir, "%s/from-env", dir);
    snprintf(opt_dir, sizeof opt_dir, "%s/from-options", dir);
    setenv("KCACHE_DIR", env_dir, 1);
    setenv("KCACHE_MAX_SIZE", "10M", 1);
    setenv("KCACHE_REMOTE", "not a url", 1);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = opt_dir;
    o.max_size = 1ull << 30;
    o.remote = "redis://127.0.0.1:1/0"; /* nothing connects at open */
    kc_cache *c;
    for (int with_flag = 0; with_flag < 2; with_flag++) {
        o.flags = with_flag ? KC_OPEN_OPTIONS_WIN : 0;
        if (kc_cache_open(&c, &o) != KC_OK) fail_msg("%s", kc_error_last()->message); /* not the env's bad URL */
        assert_string_equal(kc_cache_dir(c), opt_dir);
        kc_cache_close(c);
    }
    if (kc_cache_open(&c, &o) != KC_OK) fail_msg("%s", kc_error_last()->message);
    assert_string_equal(kc_cache_dir(c), opt_dir);
    assert_int_equal(kc_cache_max_size(c), 1ull << 30);
    kc_remote_state rs;
    assert_int_equal(kc_cache_remote_state(c, &rs), KC_OK);
    assert_string_equal(rs.url, "redis://127.0.0.1:1/0");
    kc_cache_close(c);
    /* Fields left unset (NULL, 0) are still the environment's. */
    kc_options u = KC_OPTIONS_INIT;
    u.flags = KC_OPEN_OPTIONS_WIN;
    unsetenv("KCACHE_REMOTE");
    if (kc_cache_open(&c, &u) != KC_OK) fail_msg("%s", kc_error_last()->message);
    assert_string_equal(kc_cache_dir(c), env_dir);
    assert_int_equal(kc_cache_max_size(c), 10ull << 20);
    assert_int_equal(kc_cache_remote_state(c, &rs), KC_MISS);
    kc_cache_close(c);
    /* An empty dir is an error, never the default directory (issue 15, item 5: `kcache
     * --cache-dir '' clear` emptied ~/.cache/kcache); this assertion used to say the opposite. */
    char *old_xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    setenv("XDG_CACHE_HOME", dir, 1);
    u.dir = "";
    assert_int_equal(kc_cache_open(&c, &u), KC_EINVAL);
    assert_null(c);
    assert_non_null(strstr(kc_error_last()->message, "empty"));
    u.flags = KC_OPEN_NO_ENV; /* with or without the environment */
    assert_int_equal(kc_cache_open(&c, &u), KC_EINVAL);
    /* KCACHE_DIR set but empty is an error where it would be the directory... */
    setenv("KCACHE_DIR", "", 1);
    u.dir = NULL;
    u.flags = KC_OPEN_OPTIONS_WIN;
    assert_int_equal(kc_cache_open(&c, &u), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "KCACHE_DIR"));
    u.flags = 0;
    assert_int_equal(kc_cache_open(&c, &u), KC_EINVAL);
    /* ...and ignored where the options name one. */
    u.dir = opt_dir;
    if (kc_cache_open(&c, &u) != KC_OK) fail_msg("%s", kc_error_last()->message);
    assert_string_equal(kc_cache_dir(c), opt_dir);
    kc_cache_close(c);
    unsetenv("KCACHE_DIR");
    unsetenv("KCACHE_MAX_SIZE");
    if (old_xdg) setenv("XDG_CACHE_HOME", old_xdg, 1);
    else unsetenv("XDG_CACHE_HOME");
    free(old_xdg);
}

/* Issue 15, item 19: every KCACHE_* value kc_cache_open reads is parsed strictly — a bad one
 * fails the open with an error naming the variable, never a guess ("fasle" was on, "abc" and
 * "-5" seconds of KCACHE_LOCK_WAIT were accepted, inf cast out of range); a missing
 * KCACHE_HMAC_KEY_FILE says what is missing. */
static void test_bad_environment_values_are_errors(void **state) {
    (void)state;
    struct {
        const char *name, *value;
    } bad[] = {
        {"KCACHE_READONLY", "fasle"},     {"KCACHE_READONLY", "0 "},           {"KCACHE_DISABLE", "N"},
        {"KCACHE_ALLOW_UNSAFE_DIR", "y"}, {"KCACHE_REMOTE_READONLY", "2"},     {"KCACHE_LOCK_WAIT", "inf"},
        {"KCACHE_LOCK_WAIT", "1e300"},    {"KCACHE_LOCK_WAIT", "2e10"},        {"KCACHE_LOCK_WAIT", "abc"},
        {"KCACHE_LOCK_WAIT", "-5"},       {"KCACHE_REMOTE_DEADLINE_MS", " 5"}, {"KCACHE_REMOTE_QUEUE", "+5"},
        {"KCACHE_REMOTE_TTL", "1e3"},
    };
    kc_cache *c;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv(bad[i].name, bad[i].value, 1);
        int rc = kc_cache_open(&c, &(kc_options){.version = KC_OPTIONS_VERSION, .dir = dir});
        if (rc != KC_EINVAL) fail_msg("%s='%s' was accepted (%s)", bad[i].name, bad[i].value, kc_status_str(rc));
        if (!strstr(kc_error_last()->message, bad[i].name))
            fail_msg("%s='%s': the error does not name it: %s", bad[i].name, bad[i].value, kc_error_last()->message);
        unsetenv(bad[i].name);
    }
    setenv("KCACHE_READONLY", "TRUE", 1); /* the words, in any case */
    setenv("KCACHE_LOCK_WAIT", "0.5", 1);
    c = open_at(dir, 0);
    assert_int_equal(kc_cache_mode(c), KC_CACHE_READONLY);
    kc_cache_close(c);
    unsetenv("KCACHE_READONLY");
    unsetenv("KCACHE_LOCK_WAIT");
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no-such-key", dir);
    setenv("KCACHE_HMAC_KEY_FILE", missing, 1);
    assert_int_equal(kc_cache_open(&c, &(kc_options){.version = KC_OPTIONS_VERSION, .dir = dir}), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "KCACHE_HMAC_KEY_FILE"));
    assert_non_null(strstr(kc_error_last()->message, "no-such-key"));
    assert_non_null(strstr(kc_error_last()->message, "does not exist"));
    setenv("KCACHE_HMAC_KEY_FILE", "", 1);
    assert_int_equal(kc_cache_open(&c, &(kc_options){.version = KC_OPTIONS_VERSION, .dir = dir}), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "KCACHE_HMAC_KEY_FILE"));
    unsetenv("KCACHE_HMAC_KEY_FILE");
}

/* Profiles (guard.h) live where the cache says, under its own directory; a disabled cache has none. */
static void test_profile_dir(void **state) {
    (void)state;
    kc_cache *c = open_at(dir, KC_OPEN_NO_ENV);
    char p[4096], want[4096];
    assert_int_equal(kc_cache_profile_dir(c, p, sizeof p), KC_OK);
    snprintf(want, sizeof want, "%s/v1/profiles", kc_cache_dir(c));
    assert_string_equal(p, want);
    char tiny[8];
    assert_int_equal(kc_cache_profile_dir(c, tiny, sizeof tiny), KC_EINVAL);
    char exact[4096];
    assert_int_equal(kc_cache_profile_dir(c, exact, strlen(want)), KC_EINVAL); /* no room for its NUL */
    assert_int_equal(kc_cache_profile_dir(c, exact, strlen(want) + 1), KC_OK);
    assert_string_equal(exact, want);
    assert_int_equal(kc_cache_profile_dir(c, NULL, 10), KC_EINVAL);
    kc_cache_close(c);
    c = open_at(dir, KC_OPEN_NO_ENV | KC_OPEN_DISABLE);
    assert_int_equal(kc_cache_mode(c), KC_CACHE_DISABLED);
    assert_int_equal(kc_cache_profile_dir(c, p, sizeof p), KC_EREADONLY);
    kc_cache_close(c);
}

/* Put `n` entries (numbered from `first`) of about 4 KB that do not compress. */
static void put_incompressible(kc_cache *c, int first, int n) {
    static char payload[4097];
    for (int i = first; i < first + n; i++) {
        unsigned x = 2654435761u * (unsigned)(i + 1);
        for (size_t j = 0; j + 1 < sizeof payload; j++) {
            x = x * 1103515245u + 12345u;
            payload[j] = (char)('!' + (x >> 16) % 90);
        }
        kc_entry *e = entry_for(i, "sm_80", payload);
        if (kc_cache_put(c, e) != KC_OK) fail_msg("put %d: %s", i, kc_error_last()->message);
        kc_entry_free(e);
    }
}

/* Issue 15, item 9: the size limit is the directory's once recorded; a process with a smaller
 * KCACHE_MAX_SIZE (or kc_options.max_size) no longer evicts everyone's entries down to its own
 * (before: 30 entries became 13 after one put under 64K). */
static void test_recorded_limit_wins_over_the_process(void **state) {
    (void)state;
    kc_cache *a = open_at(dir, 0);
    assert_int_equal(kc_cache_record_set(a, "max_size", "10485760"), KC_OK); /* what `kcache limit 10M` records */
    put_incompressible(a, 0, 30);
    kc_cache_close(a);
    assert_int_equal(kct_count_files(dir, ".kce"), 30);
    setenv("KCACHE_MAX_SIZE", "64K", 1);
    kc_cache *b = open_at(dir, 0);
    assert_int_equal(kc_cache_max_size(b), 10485760);
    put_incompressible(b, 100, 1);
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(b, 0, &r), KC_OK); /* a gc at the limit in force evicts nothing either */
    assert_int_equal(r.evicted, 0);
    kc_cache_close(b);
    assert_int_equal(kct_count_files(dir, ".kce"), 31);
    /* Changed by the explicit call only; 0 records "no limit". */
    b = open_at(dir, 0);
    assert_int_equal(kc_cache_set_max_size(b, 0), KC_OK);
    assert_int_equal(kc_cache_max_size(b), 0);
    kc_cache_close(b);
    b = open_at(dir, 0);
    assert_int_equal(kc_cache_max_size(b), 0);
    assert_int_equal(kc_cache_set_max_size(b, 100000), KC_OK);
    assert_int_equal(kc_cache_max_size(b), 100000);
    put_incompressible(b, 200, 1); /* about 130 KB, over 100 KB: the recorded limit now holds */
    kc_cache_close(b);
    unsetenv("KCACHE_MAX_SIZE");
    assert_true(kct_count_files(dir, ".kce") < 31);
    /* Without a recorded limit, the process's own applies (as before). */
    char d2[600];
    snprintf(d2, sizeof d2, "%s/other", dir);
    setenv("KCACHE_MAX_SIZE", "64K", 1);
    b = open_at(d2, 0);
    assert_int_equal(kc_cache_max_size(b), 65536);
    kc_cache_close(b);
    unsetenv("KCACHE_MAX_SIZE");
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_options_version_is_checked),
        T(test_put_get_round_trip),
        T(test_corrupt_entry_is_a_quarantined_miss),
        T(test_misplaced_entry_is_a_miss),
        T(test_verify_finds_and_quarantines),
        T(test_environment_overrides),
        T(test_readonly_and_disabled),
        T(test_allocation_failures_never_crash),
        T(test_maintenance_reads_keep_lru_order),
        T(test_options_win_over_environment),
        T(test_bad_environment_values_are_errors),
        T(test_profile_dir),
        T(test_recorded_limit_wins_over_the_process),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

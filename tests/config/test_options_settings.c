/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_options_settings.c — kc_options version 5's settings by name ("name=value", config/config.c
 * and cache/settings.c): each kind of value (bool, count, milliseconds, seconds, size, path, string,
 * URL list) applied with its origin (options, kc_options.settings[i]); the settings win over the
 * environment, the system file and the directory's kcache.conf (the directory's recorded max_size
 * still wins) and only tighten what a lower layer set (a safety switch it turned on, its keyring or
 * HMAC key file: refused, naming the layer); every refusal (unknown name with its suggestion, `dir`, environment-only, the
 * process's rows, a duplicate, no '=', a bad value of each grammar, a field set too, NULL entries)
 * is KC_EINVAL naming the index and the name, opens nothing, and echoes no secret; a caller built
 * against version 4 (or 1..3) is read without a byte past its struct; hostile strings never crash.
 */
#include "helpers.h"

#include <sys/stat.h>

#include "config/config.h"
#include "kcache.h"

static char *dir;
KCT_TMPDIR_FIXTURE(dir, "options-settings")

static const char *const vars[] = {"KCACHE_CONFIG_SYSTEM", "KCACHE_LOCK_WAIT",      "KCACHE_REQUIRE_HIT",
                                   "KCACHE_REMOTE_TTL",    "KCACHE_READONLY",       "KCACHE_STRICT",
                                   "KCACHE_MAX_SIZE",      "KCACHE_REMOTE_LEASE_MS"};

static void clear_env(void) {
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

/* Open dir/sub with `flags` and the settings; *rc the open's status. */
static kc_cache *open_with(const char *sub, unsigned flags, const char *const *settings, size_t n, int *rc) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, sub);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = p;
    o.flags = flags;
    o.settings = settings;
    o.nsettings = n;
    kc_cache *c = NULL;
    *rc = kc_cache_open(&c, &o);
    return c;
}

static void expect(kc_cache *c, const char *name, const char *value, kc_config_origin origin, const char *where_is) {
    char v[4200], where[4200];
    kc_config_origin o;
    int id = kc_config_find(name);
    assert_true(id >= 0);
    assert_int_equal(kc_config_get(kc_cache_config(c), id, v, sizeof v, &o, where, sizeof where), KC_OK);
    if (strcmp(v, value) != 0) fail_msg("%s = '%s', not '%s'", name, v, value);
    if (o != origin) fail_msg("%s from %s, not %s", name, kc_config_origin_name(o), kc_config_origin_name(origin));
    if (strcmp(where, where_is) != 0) fail_msg("%s: where '%s', not '%s'", name, where, where_is);
}

/* Every kind of value a setting may hold, with its origin; a disabled cache: no directory, no remote opened. */
static void test_each_kind_applied(void **state) {
    (void)state;
    clear_env();
    const char *const s[] = {"require_hit=yes",
                             "remote_ttl=9",
                             "remote_lease_ms=250",
                             "lock_wait=2.5",
                             "remote_max_value=1M",
                             "toolkit_headers=0123456789abcdef0123456789abcdef",
                             "remote=redis://user:pw@cache-a:6379 redis://b:1|read-only",
                             "disable=1",
                             "strict=off"};
    int rc;
    kc_cache *c = open_with("c", KC_OPEN_NO_ENV, s, sizeof s / sizeof s[0], &rc);
    if (rc) fail_msg("open: %s", kc_error_last()->message);
    assert_int_equal(kc_cache_mode(c), KC_CACHE_DISABLED);
    expect(c, "require_hit", "true", KC_ORIGIN_OPTIONS, "kc_options.settings[0]");
    expect(c, "remote_ttl", "9", KC_ORIGIN_OPTIONS, "kc_options.settings[1]");
    expect(c, "remote_lease_ms", "250", KC_ORIGIN_OPTIONS, "kc_options.settings[2]");
    expect(c, "lock_wait", "2.5", KC_ORIGIN_OPTIONS, "kc_options.settings[3]");
    expect(c, "remote_max_value", "1048576", KC_ORIGIN_OPTIONS, "kc_options.settings[4]");
    expect(c, "toolkit_headers", "0123456789abcdef0123456789abcdef", KC_ORIGIN_OPTIONS, "kc_options.settings[5]");
    expect(c, "remote", "redis://user:***@cache-a:6379 redis://b:1|read-only", KC_ORIGIN_OPTIONS,
           "kc_options.settings[6]");
    expect(c, "disable", "true", KC_ORIGIN_OPTIONS, "kc_options.settings[7]");
    expect(c, "strict", "false", KC_ORIGIN_OPTIONS, "kc_options.settings[8]");
    expect(c, "remote_queue", "256", KC_ORIGIN_DEFAULT, ""); /* what no setting names keeps its layer */
    kc_cache_close(c);
    /* A path: the HMAC key's file, read at the open. */
    assert_int_equal(kct_put(dir, "mac.key", "0123456789abcdef0123\n"), 0);
    char kf[4200], line[4300];
    snprintf(kf, sizeof kf, "%s/mac.key", dir);
    assert_int_equal(chmod(kf, 0600), 0);
    snprintf(line, sizeof line, "hmac_key_file=%s", kf);
    const char *const p[] = {line};
    c = open_with("c", KC_OPEN_NO_ENV, p, 1, &rc);
    if (rc) fail_msg("open: %s", kc_error_last()->message);
    expect(c, "hmac_key_file", kf, KC_ORIGIN_OPTIONS, "kc_options.settings[0]");
    kc_cache_close(c);
    /* Its errors name the setting that gave it, not the variable. */
    assert_int_equal(chmod(kf, 0644), 0);
    assert_null(open_with("c", KC_OPEN_NO_ENV, p, 1, &rc));
    assert_int_equal(rc, KC_EPERM);
    if (!strstr(kc_error_last()->message, "kc_options.settings[0] hmac_key_file '"))
        fail_msg("'%s' does not name the setting", kc_error_last()->message);
    assert_null(strstr(kc_error_last()->message, "KCACHE_HMAC_KEY_FILE"));
}

/* The settings win over the environment, the system file and the directory's file; the directory's
 * recorded size limit still wins over them (as over kc_options.max_size). */
static void test_precedence(void **state) {
    (void)state;
    clear_env();
    char sys[4200];
    snprintf(sys, sizeof sys, "%s/system.conf", dir);
    assert_int_equal(kct_put(dir, "system.conf", "lock_wait = 12\nremote_lease_ms = 5\n"), 0);
    assert_int_equal(kct_put(dir, "c/kcache.conf", "remote_ttl = 6\nstrict = 0\nmax_size = 3M\n"), 0);
    setenv("KCACHE_CONFIG_SYSTEM", sys, 1);
    setenv("KCACHE_LOCK_WAIT", "7", 1);
    setenv("KCACHE_REQUIRE_HIT", "0", 1);
    setenv("KCACHE_READONLY", "0", 1);
    const char *const s[] = {"lock_wait=3",        "require_hit=1", "remote_ttl=8", "strict=yes",
                             "remote_lease_ms=40", "readonly=1",    "max_size=1M"};
    int rc;
    kc_cache *c = open_with("c", 0, s, sizeof s / sizeof s[0], &rc);
    if (rc) fail_msg("open: %s", kc_error_last()->message);
    expect(c, "lock_wait", "3", KC_ORIGIN_OPTIONS, "kc_options.settings[0]");
    expect(c, "require_hit", "true", KC_ORIGIN_OPTIONS, "kc_options.settings[1]");
    expect(c, "remote_ttl", "8", KC_ORIGIN_OPTIONS, "kc_options.settings[2]");
    expect(c, "strict", "true", KC_ORIGIN_OPTIONS, "kc_options.settings[3]");
    expect(c, "remote_lease_ms", "40", KC_ORIGIN_OPTIONS, "kc_options.settings[4]");
    expect(c, "readonly", "true", KC_ORIGIN_OPTIONS, "kc_options.settings[5]");
    assert_int_equal(kc_cache_mode(c), KC_CACHE_READONLY); /* KCACHE_READONLY=0 tightened by the setting */
    assert_int_equal(kc_cache_max_size(c), 3u << 20);      /* the directory's limit wins */
    kc_cache_close(c);
    clear_env();
}

/* A setting never loosens the operator's policy: a switch a lower layer turned on (the environment,
 * the directory's file, the system file), a keyring or key file it set; tightening and leaving it are fine. */
static void test_no_loosening(void **state) {
    (void)state;
    clear_env();
    char sys[4200];
    snprintf(sys, sizeof sys, "%s/system.conf", dir);
    assert_int_equal(kct_put(dir, "system.conf", "remote_readonly = 1\n"), 0);
    assert_int_equal(kct_put(dir, "d/kcache.conf", "strict = 1\nkeyring = /etc/kcache/ring\n"), 0);
    setenv("KCACHE_CONFIG_SYSTEM", sys, 1);
    setenv("KCACHE_REQUIRE_HIT", "1", 1);
    setenv("KCACHE_READONLY", "yes", 1);
    static const struct {
        const char *setting, *layer, *by;
    } cases[] = {
        {"require_hit=0", "environment", "KCACHE_REQUIRE_HIT"},
        {"readonly=off", "environment", "KCACHE_READONLY"},
        {"strict=0", "cache directory file", "kcache.conf"},
        {"keyring=", "cache directory file", "kcache.conf"},
        {"keyring=/tmp/mine", "cache directory file", "kcache.conf"},
        {"remote_readonly=0", "system file", "system.conf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc;
        const char *const s[] = {"lock_wait=3", cases[i].setting};
        kc_cache *c = open_with("d", 0, s, 2, &rc);
        if (rc != KC_EINVAL) fail_msg("%s: rc %d", cases[i].setting, rc);
        assert_null(c);
        const char *m = kc_error_last()->message;
        if (!strstr(m, "kc_options.settings[1]") || !strstr(m, cases[i].layer) || !strstr(m, cases[i].by) ||
            !strstr(m, "only tighten"))
            fail_msg("%s: %s", cases[i].setting, m);
    }
    /* the same values again, and tightening: allowed */
    assert_int_equal(kct_put(dir, "f/kcache.conf", "strict = 1\n"), 0); /* "d"'s keyring is not a file */
    const char *const ok[] = {"require_hit=1", "strict=1", "remote_readonly=1", "disable=0", "allow_unsafe_dir=0"};
    int rc;
    kc_cache *c = open_with("f", 0, ok, sizeof ok / sizeof ok[0], &rc);
    if (rc) fail_msg("open: %s", kc_error_last()->message);
    kc_cache_close(c);
    unsetenv("KCACHE_READONLY");
    const char *const on[] = {"readonly=1"};
    c = open_with("e", 0, on, 1, &rc); /* nothing set below: turning on is tightening */
    if (rc) fail_msg("open: %s", kc_error_last()->message);
    assert_int_equal(kc_cache_mode(c), KC_CACHE_READONLY);
    kc_cache_close(c);
    clear_env();
}

/* A bad remote given as a setting: its error names the setting (as other settings' do), no secret shown. */
static void test_remote_named(void **state) {
    (void)state;
    clear_env();
    const char *const s[] = {"lock_wait=3", "remote=redis://:hunter2@host:99999999"};
    int rc;
    kc_cache *c = open_with("r", KC_OPEN_NO_ENV, s, 2, &rc);
    assert_int_equal(rc, KC_EINVAL);
    assert_null(c);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "kc_options.settings[1] remote") || strstr(m, "hunter2")) fail_msg("%s", m);
}

/* One refusal: KC_EINVAL, the message holds every `has` and no `not`, and nothing was made. */
static void refused(kc_options *o, const char *const *has, const char * not ) {
    char p[4200];
    snprintf(p, sizeof p, "%s/never", dir);
    o->dir = p;
    o->flags |= KC_OPEN_NO_ENV;
    kc_cache *c = (kc_cache *)o;
    assert_int_equal(kc_cache_open(&c, o), KC_EINVAL);
    assert_null(c);
    const char *m = kc_error_last()->message;
    assert_int_equal(kc_error_last()->code, KC_EINVAL);
    for (; *has; has++)
        if (!strstr(m, *has)) fail_msg("'%s' lacks '%s'", m, *has);
    if (not &&strstr(m, not )) fail_msg("'%s' shows '%s'", m, not );
    struct stat st;
    assert_int_not_equal(stat(p, &st), 0); /* refused before the directory is made */
}

#define HAS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void one(const char *s, const char *const *has, const char * not ) {
    kc_options o = KC_OPTIONS_INIT;
    const char *const v[] = {"strict=1", s};
    o.settings = v, o.nsettings = 2;
    refused(&o, has, not );
}

static void test_refusals(void **state) {
    (void)state;
    clear_env();
    one("max_sise=1G", HAS("kc_options.settings[1]", "unknown setting 'max_sise'", "kcache config"), NULL);
    one("max-size=1G", HAS("settings[1]", "unknown setting 'max-size'", "did you mean 'max_size'"), NULL);
    one("KCACHE_LOCK_WAIT=5", HAS("settings[1]", "did you mean 'lock_wait'"), NULL);
    one("dir=/tmp/x", HAS("settings[1]", "'dir'", "kc_options.dir"), NULL);
    one("hmac_key=supersecretkeybytes0", HAS("settings[1]", "'hmac_key'", "kc_options.hmac_key", "hmac_key_file"),
        "supersecret");
    one("KCACHE_HMAC_KEY=supersecretkeybytes0", HAS("settings[1]", "unknown"), "supersecret");
    one("home=/x", HAS("settings[1]", "'home'", "environment variable only"), NULL);
    const char *const process[] = {"log=all",        "log_format=json", "nvrtc=/x",      "nvrtc_own_cache=1",
                                   "pch=0",          "pch_max_size=1M", "pch_dir=/tmp",  "cuda_include=/x",
                                   "cuda_driver=/x", "loaded_graphs=5", "loaded_bytes=5"};
    int nprocess = 0; /* every process's row is in the list above (and in docs/configuration.md's) */
    for (int id = 0; id < KC_CONFIG_COUNT; id++) nprocess += kc_config_is_process_(id);
    assert_int_equal(nprocess, sizeof process / sizeof process[0]);
    for (size_t i = 0; i < sizeof process / sizeof process[0]; i++)
        one(process[i], HAS("settings[1]", "belongs to the process", "environment or the system file"), NULL);
    one("strict=0", HAS("kc_options.settings[1]", "'strict'", "already given by kc_options.settings[0]", "once"), NULL);
    one("secret-without-equals", HAS("kc_options.settings[1]", "no '='", "name=value"), "secret");
    one("strict", HAS("settings[1]", "no '='"), NULL);
    one("require_hit=maybe", HAS("kc_options.settings[1] require_hit='maybe'", "1/true/yes/on or 0/false/no/off"),
        NULL);
    one("lock_wait=-1", HAS("settings[1] lock_wait", "seconds", "86400"), NULL);
    one("lock_wait=86401", HAS("settings[1] lock_wait", "0 to 86400"), NULL);
    one("remote_ttl=abc", HAS("settings[1] remote_ttl", "whole number"), NULL);
    one("remote_queue=86400001", HAS("settings[1] remote_queue", "at most 86400000"), NULL);
    one("remote_deadline_ms= 5", HAS("settings[1] remote_deadline_ms", "whole number"), NULL);
    one("max_size=5Q", HAS("settings[1] max_size", "not a size", "5G, 500M, 64K"), NULL);
    one("lock_wait=", HAS("settings[1] lock_wait", "has no value", "seconds"), NULL);
    one("toolchain=a\nb", HAS("settings[1] toolchain", "newline"), NULL);
    one("remote=redis://u:hunter2@h:1\nx", HAS("settings[1] remote", "newline"), "hunter2");
    /* A field and its setting both set: one of the two must go. */
    struct {
        const char *s;
        const char *field;
    } twins[] = {{"max_size=2M", "kc_options.max_size"},
                 {"readonly=0", "KC_OPEN_READONLY"},
                 {"remote=redis://h:1", "kc_options.remote"},
                 {"remote_deadline_ms=9", "kc_options.remote_config.deadline_ms"},
                 {"remote_queue=9", "kc_options.remote_queue"},
                 {"keyring=/x", "kc_options.keyring"},
                 {"signing_key_file=/x", "kc_options.signing_key_file"},
                 {"hmac_key_file=/x", "kc_options.hmac_key"}};
    for (size_t i = 0; i < sizeof twins / sizeof twins[0]; i++) {
        kc_options o = KC_OPTIONS_INIT;
        o.max_size = 1 << 20, o.flags = KC_OPEN_READONLY, o.remote = "redis://h:2";
        o.remote_config.deadline_ms = 5, o.remote_queue = 3, o.keyring = "/k", o.signing_key_file = "/s";
        o.hmac_key = "0123456789abcdef0123", o.hmac_key_len = 20;
        const char *const v[] = {twins[i].s};
        o.settings = v, o.nsettings = 1;
        refused(&o, HAS("kc_options.settings[0]", "both set it", twins[i].field, "keep one"), NULL);
    }
    /* `dir` is refused as a setting even when the field is unset (it would name the directory). */
    kc_options o = KC_OPTIONS_INIT;
    char other[4200], line[4300];
    snprintf(other, sizeof other, "%s/other", dir);
    snprintf(line, sizeof line, "dir=%s", other);
    const char *const d[] = {line};
    o.settings = d, o.nsettings = 1, o.flags = KC_OPEN_NO_ENV;
    kc_cache *c = NULL;
    assert_int_equal(kc_cache_open(&c, &o), KC_EINVAL);
    assert_null(c);
    assert_non_null(strstr(kc_error_last()->message, "kc_options.settings[0]: 'dir'"));
    assert_non_null(strstr(kc_error_last()->message, "is kc_options.dir, not a setting"));
    struct stat st;
    assert_int_not_equal(stat(other, &st), 0);
    /* NULL where strings are expected. */
    o = (kc_options)KC_OPTIONS_INIT;
    const char *const holes[] = {"strict=1", NULL};
    o.settings = holes, o.nsettings = 2;
    refused(&o, HAS("kc_options.settings[1] is NULL"), NULL);
    o = (kc_options)KC_OPTIONS_INIT;
    o.nsettings = 3;
    refused(&o, HAS("kc_options.settings is NULL", "nsettings is 3"), NULL);
}

/* A caller built against version 4 has no settings fields: whatever lies past its struct is never read.
 * Versions 1..3 still open; kc_options_init(4) writes nothing past version 4's fields. */
static void test_older_versions(void **state) {
    (void)state;
    clear_env();
    char p[4200];
    snprintf(p, sizeof p, "%s/v4", dir);
    kc_options o;
    memset(&o, 0xAB, sizeof o);
    assert_int_equal(kc_options_init(&o, 4), KC_OK);
    assert_int_equal(o.version, 4);
    const unsigned char *tail = (const unsigned char *)&o + offsetof(kc_options, settings);
    for (size_t i = 0; i < sizeof o - offsetof(kc_options, settings); i++) assert_int_equal(tail[i], 0xAB);
    o.dir = p;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    if (kc_cache_open(&c, &o) != KC_OK) fail_msg("version 4: %s", kc_error_last()->message);
    expect(c, "strict", "false", KC_ORIGIN_DEFAULT, "");
    kc_cache_close(c);
    /* The same bytes as version 5 would be read as settings: garbage, refused. */
    o.version = 5;
    o.settings = NULL, o.nsettings = 7;
    assert_int_equal(kc_cache_open(&c, &o), KC_EINVAL);
    for (unsigned v = 1; v <= 3; v++) {
        kc_options old;
        assert_int_equal(kc_options_init(&old, v), KC_OK);
        old.dir = p, old.flags = KC_OPEN_NO_ENV;
        if (kc_cache_open(&c, &old) != KC_OK) fail_msg("version %u: %s", v, kc_error_last()->message);
        kc_cache_close(c);
    }
    assert_int_equal(kc_options_init(&o, KC_OPTIONS_VERSION + 1), KC_EVERSION);
    kc_options init = KC_OPTIONS_INIT;
    assert_int_equal(init.version, 5);
    assert_null(init.settings);
    assert_int_equal(init.nsettings, 0);
}

/* Hostile strings: names of the table with edge values, and random bytes; never a crash, only OK or
 * KC_EINVAL with a message naming kc_options.settings. */
static void test_hostile_strings(void **state) {
    (void)state;
    clear_env();
    static const char *const values[] = {"",
                                         "0",
                                         "1",
                                         "maybe",
                                         "-5",
                                         "1e300",
                                         "inf",
                                         "nan",
                                         "5G",
                                         "5Q",
                                         " 1",
                                         "1 ",
                                         "==",
                                         "\t",
                                         "\xff",
                                         "18446744073709551616",
                                         "redis://u:p@h:1|ttl=9|bogus",
                                         "0.5",
                                         "/tmp/x"};
    unsigned seed = 12345;
    char buf[8][96];
    const char *s[8];
    for (int round = 0; round < 1500; round++) {
        size_t n = 1 + (seed = seed * 1103515245u + 12345u) % 8;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            int id = (int)((seed >> 8) % KC_CONFIG_COUNT);
            if (id == KC_CONFIG_signing_key_file || id == KC_CONFIG_keyring || id == KC_CONFIG_hmac_key_file)
                id = KC_CONFIG_strict; /* files read at the open: their own tests */
            const kc_config_row *r = kc_config_row_of(id);
            if (seed % 5 == 0) { /* random bytes, NUL-terminated */
                size_t len = (seed >> 4) % 40;
                for (size_t j = 0; j < len; j++) buf[i][j] = (char)(1 + (seed = seed * 1103515245u + 12345u) % 255);
                buf[i][len] = '\0';
            } else {
                snprintf(buf[i], sizeof buf[i], "%s%s%s", r->name, seed % 7 ? "=" : "",
                         values[(seed >> 12) % (sizeof values / sizeof values[0])]);
            }
            s[i] = buf[i];
        }
        int rc;
        kc_cache *c = open_with("h", KC_OPEN_NO_ENV | KC_OPEN_DISABLE, s, n, &rc);
        if (rc == KC_OK) {
            kc_cache_close(c);
            continue;
        }
        if (rc != KC_EINVAL) fail_msg("round %d: status %d: %s", round, rc, kc_error_last()->message);
        if (!strstr(kc_error_last()->message, "kc_options.settings"))
            fail_msg("round %d: '%s' names no setting", round, kc_error_last()->message);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_each_kind_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_precedence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_loosening, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remote_named, setup, teardown),
        cmocka_unit_test_setup_teardown(test_older_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_strings, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config.c — src/config/ and the cache's use of it (cache/settings.c): a value from each
 * origin (default, system file, cache directory file, environment, options) with that origin
 * said; a bad line of a file is an error naming FILE:LINE; KC_OPEN_NO_ENV reads no environment
 * (not even a bad value, nor the system file's name); an older directory's v1/record limit is
 * still read and kcache.conf wins over it; the directory's limit wins over the environment and
 * the options; a write checks first and keeps the file's other lines; the toolchain pin in
 * kcache.conf decides the keys' toolchain as the record's did; the process's settings.
 */
#include <sys/wait.h>

#include "helpers.h"

#include "cache/internal.h"
#include "config/config.h"

static char *dir;
KCT_TMPDIR_FIXTURE(dir, "config")

static const char *const vars[] = {"KCACHE_CONFIG_SYSTEM", "KCACHE_LOCK_WAIT",  "KCACHE_STRICT",
                                   "KCACHE_REMOTE_TTL",    "KCACHE_MAX_SIZE",   "KCACHE_TOOLKIT_HEADERS",
                                   "KCACHE_TOOLCHAIN",     "KCACHE_DIR",        "KCACHE_LOG",
                                   "KCACHE_REMOTE",        "KCACHE_REQUIRE_HIT"};

static void clear_env(void) {
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

/* Open the cache in dir/sub with `flags` and the options' max_size; *rc the open's status. */
static kc_cache *open_in(const char *sub, unsigned flags, uint64_t max_size, int *rc) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, sub);
    mkdir(p, 0700);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = p;
    o.flags = flags;
    o.max_size = max_size;
    kc_cache *c = NULL;
    *rc = kc_cache_open(&c, &o);
    return c;
}

/* A file's text, NUL-terminated (the caller frees it); fails the test when it cannot be read. */
static char *read_text(const char *path) {
    size_t len;
    uint8_t *data = kct_read(path, &len);
    assert_non_null(data);
    char *text = malloc(len + 1);
    assert_non_null(text);
    memcpy(text, data, len);
    text[len] = '\0';
    free(data);
    return text;
}

static void expect(kc_cache *c, int id, const char *value, kc_config_origin origin, const char *where_has) {
    char v[4200], where[4200];
    memset(v, 'x', sizeof v - 1), v[sizeof v - 1] = '\0'; /* what kc_config_get leaves unwritten shows */
    kc_config_origin o;
    assert_int_equal(kc_config_get(kc_cache_config(c), id, v, sizeof v, &o, where, sizeof where), KC_OK);
    if (strcmp(v, value) != 0) fail_msg("%s = '%s', not '%s'", kc_config_row_of(id)->name, v, value);
    if (o != origin)
        fail_msg("%s from %s, not %s", kc_config_row_of(id)->name, kc_config_origin_name(o),
                 kc_config_origin_name(origin));
    if (where_has && !strstr(where, where_has))
        fail_msg("%s: where '%s' lacks '%s'", kc_config_row_of(id)->name, where, where_has);
}

static void test_each_origin(void **state) {
    (void)state;
    clear_env();
    char sys[4200];
    snprintf(sys, sizeof sys, "%s/system.conf", dir);
    assert_int_equal(kct_put(dir, "system.conf", "# the system file\n\nlock_wait = 12.5\nremote_ttl = 5\n"), 0);
    assert_int_equal(kct_put(dir, "c/kcache.conf", "strict = yes\n  remote_ttl=6  \n"), 0);
    setenv("KCACHE_CONFIG_SYSTEM", sys, 1);
    setenv("KCACHE_REMOTE_TTL", "7", 1);
    setenv("KCACHE_MAX_SIZE", "2M", 1); /* the options' 1M wins over it, without KC_OPEN_OPTIONS_WIN */
    int rc;
    kc_cache *c = open_in("c", KC_OPEN_REQUIRE_HIT, 1ull << 20, &rc);
    assert_int_equal(rc, KC_OK);
    expect(c, KC_CONFIG_loaded_graphs, "512", KC_ORIGIN_DEFAULT, NULL);
    expect(c, KC_CONFIG_remote, "", KC_ORIGIN_DEFAULT, NULL); /* an empty list, shown empty */
    expect(c, KC_CONFIG_lock_wait, "12.5", KC_ORIGIN_SYSTEM_FILE, "system.conf:3");
    expect(c, KC_CONFIG_strict, "true", KC_ORIGIN_DIR_FILE, "c/kcache.conf:1");
    expect(c, KC_CONFIG_remote_ttl, "7", KC_ORIGIN_ENVIRONMENT, "KCACHE_REMOTE_TTL");
    expect(c, KC_CONFIG_max_size, "1048576", KC_ORIGIN_OPTIONS, NULL);
    expect(c, KC_CONFIG_require_hit, "true", KC_ORIGIN_OPTIONS, NULL);
    expect(c, KC_CONFIG_config_system, sys, KC_ORIGIN_ENVIRONMENT, "KCACHE_CONFIG_SYSTEM");
    assert_true(kc_cache_strict_(c)); /* the parts see the typed value */
    assert_true(kc_cache_settings_(c)->lock_wait == 12.5);
    kc_cache_close(c);
    unsetenv("KCACHE_REMOTE_TTL"); /* the directory's file, then the system file's */
    c = open_in("c", 0, 0, &rc);
    expect(c, KC_CONFIG_remote_ttl, "6", KC_ORIGIN_DIR_FILE, "kcache.conf:2");
    kc_cache_close(c);
    clear_env();
}

/* Open with the directory's kcache.conf (or the system file) holding `text`: an error naming `want`. */
static void bad_file(const char *text, int system, const char *want) {
    char sys[4200];
    snprintf(sys, sizeof sys, "%s/bad-system.conf", dir);
    assert_int_equal(kct_put(dir, system ? "bad-system.conf" : "b/kcache.conf", text), 0);
    if (system) setenv("KCACHE_CONFIG_SYSTEM", sys, 1);
    int rc;
    kc_cache *c = open_in("b", 0, 0, &rc);
    if (rc != KC_EINVAL) fail_msg("'%s' was accepted (%d)", text, rc);
    assert_null(c);
    if (!strstr(kc_error_last()->message, want))
        fail_msg("'%s': the error '%s' lacks '%s'", text, kc_error_last()->message, want);
    unsetenv("KCACHE_CONFIG_SYSTEM");
    char p[4200];
    snprintf(p, sizeof p, "%s/b/kcache.conf", dir);
    unlink(p);
}

static void test_bad_lines(void **state) {
    (void)state;
    clear_env();
    bad_file("# fine\nmax_sise = 5G\n", 0, "kcache.conf:2: unknown key 'max_sise'");
    bad_file("strict = maybe\n", 0, "kcache.conf:1: strict='maybe' is not a boolean");
    bad_file("\n\nlock_wait = 1e300\n", 0, "kcache.conf:3: lock_wait");
    bad_file("max_size = 5Q\n", 0, "kcache.conf:1: max_size: not a size");
    bad_file("just words\n", 0, "kcache.conf:1: not a `key = value` line");
    bad_file("dir = /elsewhere\n", 0, "kcache.conf:1: the cache directory cannot be set in its own");
    bad_file("home = /x\n", 0, "'home' cannot be set in a file");
    bad_file("hmac_key = 0123456789abcdef0123\n", 0, "'hmac_key' cannot be set in a file");  /* files are 0644 */
    bad_file("nvrtc = /opt/nvrtc.so\n", 0, "kcache.conf:1: 'nvrtc' belongs to the process"); /* never used there */
    bad_file("remote_queue = \n", 0, "remote_queue has no value");
    bad_file("loaded_graphs = -1\n", 1, "bad-system.conf:1: loaded_graphs");
    char p[4200]; /* a directory file anyone may write is refused, not read */
    snprintf(p, sizeof p, "%s/b/kcache.conf", dir);
    assert_int_equal(kct_put(dir, "b/kcache.conf", "strict = 1\n"), 0);
    assert_int_equal(chmod(p, 0666), 0);
    int rc;
    assert_null(open_in("b", 0, 0, &rc));
    assert_int_equal(rc, KC_EPERM);
    assert_non_null(strstr(kc_error_last()->message, "can be written by anyone"));
    /* One another member of a shared directory's group wrote is read, as the old v1/record was (the
     * directory's own safety is store/safedir.c's; a file of another owner once failed every open). */
    assert_int_equal(chmod(p, 0644), 0);
    if (geteuid() == 0 && chown(p, 65534, 65534) == 0) {
        kc_cache *c = open_in("b", 0, 0, &rc);
        if (!c) fail_msg("a kcache.conf of another owner: %s", kc_error_last()->message);
        expect(c, KC_CONFIG_strict, "true", KC_ORIGIN_DIR_FILE, "kcache.conf:1");
        kc_cache_close(c);
    }
    clear_env();
}

static void test_no_env_reads_no_environment(void **state) {
    (void)state;
    clear_env();
    char sys[4200];
    snprintf(sys, sizeof sys, "%s/system.conf", dir);
    assert_int_equal(kct_put(dir, "system.conf", "strict = 1\n"), 0);
    setenv("KCACHE_CONFIG_SYSTEM", sys, 1); /* not even the system file's name */
    setenv("KCACHE_LOCK_WAIT", "abc", 1);   /* a bad value is not even read */
    setenv("KCACHE_REQUIRE_HIT", "1", 1);
    setenv("KCACHE_TOOLKIT_HEADERS", "0123456789abcdef0123456789abcdef", 1);
    setenv("KCACHE_TOOLCHAIN", "build-id:00000000000000000000000000000000000000aa", 1);
    setenv("KCACHE_MAX_SIZE", "1K", 1);
    int rc;
    kc_cache *c = open_in("n", KC_OPEN_NO_ENV, 0, &rc);
    assert_int_equal(rc, KC_OK);
    expect(c, KC_CONFIG_lock_wait, "600", KC_ORIGIN_DEFAULT, NULL);
    expect(c, KC_CONFIG_strict, "false", KC_ORIGIN_DEFAULT, NULL);
    expect(c, KC_CONFIG_require_hit, "false", KC_ORIGIN_DEFAULT, NULL);
    expect(c, KC_CONFIG_max_size, "5368709120", KC_ORIGIN_DEFAULT, NULL);
    expect(c, KC_CONFIG_home, "", KC_ORIGIN_DEFAULT, NULL);
    assert_string_equal(kc_cache_settings_(c)->toolkit_headers, ""); /* the graph key's pin */
    assert_false(kc_cache_require_hit_(c));
    kc_toolchain_choice ch;
    if (kc_cache_toolchain(c, &ch) == KC_OK) assert_int_not_equal(ch.from, KC_TOOLCHAIN_PIN_ENV);
    kc_cache_close(c);
    c = open_in("n", 0, 0, &rc); /* the same, with the environment: its bad value fails the open */
    assert_int_equal(rc, KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "KCACHE_LOCK_WAIT='abc'"));
    clear_env();
}

static void test_old_record_and_the_directory_limit(void **state) {
    (void)state;
    clear_env();
    assert_int_equal(kct_put(dir, "r/v1/record", "pin=x\nmax_size=12345\n"), 0); /* what an older kcache wrote */
    setenv("KCACHE_MAX_SIZE", "1G", 1);
    int rc;
    kc_cache *c = open_in("r", 0, 2ull << 30, &rc);
    assert_int_equal(rc, KC_OK);
    expect(c, KC_CONFIG_max_size, "12345", KC_ORIGIN_DIR_FILE, "v1/record"); /* the directory's wins */
    assert_int_equal(kc_cache_max_size(c), 12345);
    assert_int_equal(kc_cache_set_max_size(c, 65536), KC_OK); /* written to kcache.conf, which wins */
    assert_int_equal(kc_cache_max_size(c), 65536);
    kc_cache_close(c);
    char p[4200];
    snprintf(p, sizeof p, "%s/r/kcache.conf", dir);
    char *text = read_text(p);
    assert_non_null(strstr(text, "max_size = 65536\n"));
    free(text);
    c = open_in("r", KC_OPEN_OPTIONS_WIN, 1ull << 20, &rc);
    assert_int_equal(rc, KC_OK);
    expect(c, KC_CONFIG_max_size, "65536", KC_ORIGIN_DIR_FILE, "kcache.conf:1");
    assert_int_equal(kc_cache_max_size(c), 65536);
    kc_cache_close(c);
    clear_env();
}

static void test_writes_check_first_and_keep_lines(void **state) {
    (void)state;
    clear_env();
    assert_int_equal(kct_put(dir, "w/kcache.conf", "# mine\nstrict = 1\n\nlock_wait = 3\n"), 0);
    int rc;
    kc_cache *c = open_in("w", 0, 0, &rc);
    assert_int_equal(rc, KC_OK);
    assert_int_equal(kc_cache_config_set(c, "lock_wait", "nope"), KC_EINVAL); /* nothing written */
    assert_int_equal(kc_cache_config_set(c, "no_such_key", "1"), KC_EINVAL);
    assert_int_equal(kc_cache_config_set(c, "dir", "/x"), KC_EINVAL);
    assert_int_equal(kc_cache_config_set(c, "lock_wait", "4"), KC_OK);
    assert_true(kc_cache_settings_(c)->lock_wait == 4); /* applied to the open cache too */
    assert_int_equal(kc_cache_config_set(c, "strict", NULL), KC_OK);
    assert_int_equal(kc_cache_config_set(c, "remote_ttl", "9"), KC_OK);
    kc_cache_close(c);
    char p[4200];
    snprintf(p, sizeof p, "%s/w/kcache.conf", dir);
    char *text = read_text(p);
    assert_string_equal(text, "# mine\n\nlock_wait = 4\nremote_ttl = 9\n");
    free(text);
    clear_env();
}

static void test_toolchain_pin_in_the_file(void **state) {
    (void)state;
    clear_env();
    const char *a = "build-id:00000000000000000000000000000000000000aa";
    const char *b = "build-id:00000000000000000000000000000000000000bb";
    char line[200];
    snprintf(line, sizeof line, "toolchain = %s\n", a);
    assert_int_equal(kct_put(dir, "t/kcache.conf", line), 0);
    int rc;
    kc_cache *c = open_in("t", 0, 0, &rc);
    assert_int_equal(rc, KC_OK);
    kc_toolchain_choice ch;
    assert_int_equal(kc_cache_toolchain(c, &ch), KC_OK);
    assert_int_equal(ch.from, KC_TOOLCHAIN_PIN);
    assert_string_equal(ch.id, a);
    kc_cache_close(c);
    setenv("KCACHE_TOOLCHAIN", b, 1); /* the environment beats the file, as it beat the record */
    c = open_in("t2", 0, 0, &rc);
    assert_int_equal(kc_cache_toolchain(c, &ch), KC_OK);
    assert_int_equal(ch.from, KC_TOOLCHAIN_PIN_ENV);
    assert_string_equal(ch.id, b);
    kc_cache_close(c);
    clear_env();
}

/* In a child (this process has read no setting yet): the process's settings, read without the
 * environment, keep the driver's default; read with it, a bad value keeps its default. */
static void test_process_settings(void **state) {
    (void)state;
    pid_t pid = fork();
    if (pid == 0) {
        setenv("KCACHE_CUDA_DRIVER", "/nowhere/libcuda.so", 1);
        setenv("KCACHE_LOADED_GRAPHS", "7", 1);
        if (kc_config_process_init(KC_CONFIG_NO_ENV) != KC_OK) _exit(2);
        if (kc_config_process_init(0) != KC_EBUSY) _exit(3); /* read once */
        const kc_config *p = kc_config_process();
        if (strcmp(p->v.cuda_driver, "libcuda.so.1") != 0 || p->v.loaded_graphs != 512) _exit(4);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    pid = fork();
    if (pid == 0) { /* with the environment: its value, and a bad one keeps the default */
        setenv("KCACHE_CUDA_DRIVER", "/nowhere/libcuda.so", 1);
        setenv("KCACHE_LOADED_GRAPHS", "lots", 1);
        const kc_config *p = kc_config_process();
        if (strcmp(p->v.cuda_driver, "/nowhere/libcuda.so") != 0 || p->v.loaded_graphs != 512) _exit(4);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_secrets_not_shown(void **state) {
    (void)state;
    clear_env();
    setenv("KCACHE_REMOTE", "redis://:hunter2@host:6379/0 redis://user:pw@other/1|read-only=true redis://plain:1", 1);
    setenv("KCACHE_HMAC_KEY", "0123456789abcdef0123", 1);
    int rc;
    kc_cache *c = open_in("s", KC_OPEN_DISABLE, 0, &rc); /* disabled: no remote is opened */
    assert_int_equal(rc, KC_OK);
    expect(c, KC_CONFIG_remote, "redis://:***@host:6379/0 redis://user:***@other/1|read-only=true redis://plain:1",
           KC_ORIGIN_ENVIRONMENT, "KCACHE_REMOTE");
    expect(c, KC_CONFIG_hmac_key, "***", KC_ORIGIN_ENVIRONMENT, NULL);
    kc_cache_close(c);
    /* A URL without a password says nothing of the next one (it once ended the hiding there), and a
     * tab separates URLs as a space does; a user-less password is hidden whole. */
    setenv("KCACHE_REMOTE",
           "redis://cache-a:6379 redis://:s3cret@fleet:6379\tredis://u:pw@h/0|read-only "
           "redis://justsecret@h2",
           1);
    c = open_in("s", KC_OPEN_DISABLE, 0, &rc);
    assert_int_equal(rc, KC_OK);
    expect(c, KC_CONFIG_remote,
           "redis://cache-a:6379 redis://:***@fleet:6379\tredis://u:***@h/0|read-only "
           "redis://:***@h2",
           KC_ORIGIN_ENVIRONMENT, "KCACHE_REMOTE");
    kc_cache_close(c);
    unsetenv("KCACHE_HMAC_KEY");
    clear_env();
}

static void test_table(void **state) {
    (void)state;
    assert_int_equal(kc_config_find("max_size"), KC_CONFIG_max_size);
    assert_int_equal(kc_config_find("KCACHE_MAX_SIZE"), KC_CONFIG_max_size);
    assert_int_equal(kc_config_find("nope"), -1);
    for (int i = 0; i < KC_CONFIG_COUNT; i++) { /* every default parses by its own row */
        const kc_config_row *r = kc_config_row_of(i);
        assert_non_null(r->doc);
        assert_true(strlen(r->doc) > 10);
        for (int j = 0; j < i; j++) assert_string_not_equal(r->env, kc_config_row_of(j)->env);
    }
    assert_null(kc_config_row_of(KC_CONFIG_COUNT));
    /* kc_config_check: a value by its row's parser, as a file's line; nothing read or written */
    assert_int_equal(kc_config_check("max_size", "5G"), KC_OK);
    assert_int_equal(kc_config_check("lock_wait", "30"), KC_OK);
    assert_int_equal(kc_config_check("max_size", "lots"), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "not a size"));
    assert_int_equal(kc_config_check("strict", "perhaps"), KC_EINVAL);
    assert_int_equal(kc_config_check("no_such_key", "1"), KC_EINVAL);
    assert_int_equal(kc_config_check("max_size", NULL), KC_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_process_settings), /* first: before anything here reads the process's settings */
        cmocka_unit_test_setup_teardown(test_each_origin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_env_reads_no_environment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_record_and_the_directory_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writes_check_first_and_keep_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_toolchain_pin_in_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secrets_not_shown, setup, teardown),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

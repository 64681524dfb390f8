/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_record.c — the cache directory's record (cache/record.c): fields set, replaced and
 * removed; walked by prefix; lines that do not parse ignored and dropped by the next
 * writer; names and values checked; a read-only or disabled cache never written; a capped
 * prefix keeps its newest fields; and four processes writing at once lose nothing.
 */
#include "helpers.h"

#include <sys/wait.h>

#include "cache/record.h"
#include "kcache.h"

static char *tmp;

static int setup(void **state) {
    (void)state;
    tmp = kct_tmpdir("record");
    return tmp ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kct_rmtree(tmp);
    free(tmp);
    return 0;
}

static kc_cache *open_at(const char *name, unsigned flags) {
    char d[4096];
    snprintf(d, sizeof d, "%s/%s", tmp, name);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = d;
    o.flags = flags | KC_OPEN_NO_ENV;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    return c;
}

static void record_path(kc_cache *c, char *out, size_t cap) { snprintf(out, cap, "%s/v1/record", kc_cache_dir(c)); }

typedef struct walk {
    char seen[1024];
    int n;
} walk;

static int collect(const char *name, const char *value, void *ctx) {
    walk *w = ctx;
    size_t l = strlen(w->seen);
    snprintf(w->seen + l, sizeof w->seen - l, "%s=%s;", name, value);
    w->n++;
    return 0;
}

static int stop_at_two(const char *name, const char *value, void *ctx) {
    (void)name, (void)value;
    return ++*(int *)ctx == 2 ? 42 : 0;
}

static void test_set_get_remove_walk(void **state) {
    (void)state;
    kc_cache *c = open_at("basic", 0);
    char v[64];
    assert_int_equal(kc_cache_record_get(c, "headers", v, sizeof v), KC_MISS);
    assert_int_equal(kc_cache_record_set(c, "headers", "abc"), KC_OK);
    assert_int_equal(kc_cache_record_set(c, "toolchain.build-id:aa", "one = two"), KC_OK);
    assert_int_equal(kc_cache_record_set(c, "toolchain.build-id:bb", ""), KC_OK);
    assert_int_equal(kc_cache_record_get(c, "headers", v, sizeof v), KC_OK);
    assert_string_equal(v, "abc");
    assert_int_equal(kc_cache_record_set(c, "headers", "def"), KC_OK); /* replaced, not repeated */
    assert_int_equal(kc_cache_record_get(c, "headers", v, sizeof v), KC_OK);
    assert_string_equal(v, "def");
    assert_int_equal(kc_cache_record_get(c, "toolchain.build-id:aa", v, sizeof v), KC_OK);
    assert_string_equal(v, "one = two");                                  /* '=' in a value is the value's */
    assert_int_equal(kc_cache_record_get(c, "headers", v, 3), KC_EINVAL); /* does not fit */
    walk w = {"", 0};
    assert_int_equal(kc_cache_record_foreach(c, "toolchain.", collect, &w), KC_OK);
    assert_string_equal(w.seen, "toolchain.build-id:aa=one = two;toolchain.build-id:bb=;");
    memset(&w, 0, sizeof w);
    assert_int_equal(kc_cache_record_foreach(c, NULL, collect, &w), KC_OK);
    assert_int_equal(w.n, 3);
    int calls = 0;
    assert_int_equal(kc_cache_record_foreach(c, NULL, stop_at_two, &calls), 42);
    assert_int_equal(kc_cache_record_set(c, "headers", NULL), KC_OK);
    assert_int_equal(kc_cache_record_get(c, "headers", v, sizeof v), KC_MISS);
    /* The file is the grammar's: name=value lines. */
    char p[4200];
    record_path(c, p, sizeof p);
    size_t len;
    uint8_t *b = kct_read(p, &len);
    assert_non_null(b);
    b[len] = '\0';
    assert_string_equal((char *)b, "toolchain.build-id:aa=one = two\ntoolchain.build-id:bb=\n");
    free(b);
    kc_cache_close(c);
}

static void test_names_and_values_are_checked(void **state) {
    (void)state;
    kc_cache *c = open_at("checked", 0);
    char v[16];
    const char *bad[] = {"", "a=b", "a b", "a\nb", "ä"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(kc_cache_record_set(c, bad[i], "x"), KC_EINVAL);
        assert_int_equal(kc_cache_record_get(c, bad[i], v, sizeof v), KC_EINVAL);
    }
    char longname[200];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(kc_cache_record_set(c, longname, "x"), KC_EINVAL);
    assert_int_equal(kc_cache_record_set(c, "ok", "two\nlines"), KC_EINVAL);
    char *big = malloc(9000);
    memset(big, 'v', 8999);
    big[8999] = '\0';
    assert_int_equal(kc_cache_record_set(c, "ok", big), KC_EINVAL);
    free(big);
    assert_int_equal(kc_cache_record_set(NULL, "ok", "x"), KC_EINVAL);
    kc_cache_close(c);
}

static void test_bad_lines_are_ignored_then_dropped(void **state) {
    (void)state;
    kc_cache *c = open_at("bad", 0);
    char p[4200], v[64];
    record_path(c, p, sizeof p);
    const char junk[] = "no equals sign\n=empty name\nbad name=1\ngood=1\ngood=2\nx\0y=3\nalso.good:-_=4\ncut=short";
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(junk, 1, sizeof junk - 1, f), sizeof junk - 1);
    fclose(f);
    walk w = {"", 0};
    assert_int_equal(kc_cache_record_foreach(c, NULL, collect, &w), KC_OK);
    assert_string_equal(w.seen, "good=1;also.good:-_=4;");                 /* the first of a repeated name */
    assert_int_equal(kc_cache_record_get(c, "cut", v, sizeof v), KC_MISS); /* no LF: cut short */
    assert_int_equal(kc_cache_record_set(c, "new", "5"), KC_OK);
    size_t len;
    uint8_t *b = kct_read(p, &len);
    assert_non_null(b);
    b[len] = '\0';
    assert_string_equal((char *)b, "good=1\nalso.good:-_=4\nnew=5\n");
    free(b);
    /* An oversized record reads as empty, and the next writer starts afresh. */
    f = fopen(p, "wb");
    for (int i = 0; i < 30000; i++) fprintf(f, "f%d=0123456789\n", i);
    fclose(f);
    assert_int_equal(kc_cache_record_get(c, "f1", v, sizeof v), KC_MISS);
    assert_int_equal(kc_cache_record_set(c, "after", "1"), KC_OK);
    assert_int_equal(kc_cache_record_get(c, "after", v, sizeof v), KC_OK);
    kc_cache_close(c);
}

static void test_readonly_and_disabled_are_not_written(void **state) {
    (void)state;
    kc_cache *c = open_at("ro", 0);
    assert_int_equal(kc_cache_record_set(c, "a", "1"), KC_OK);
    kc_cache_close(c);
    c = open_at("ro", KC_OPEN_READONLY);
    char v[8];
    assert_int_equal(kc_cache_record_get(c, "a", v, sizeof v), KC_OK);
    assert_int_equal(kc_cache_record_set(c, "a", "2"), KC_EREADONLY);
    kc_cache_close(c);
    c = open_at("ro", KC_OPEN_DISABLE);
    assert_int_equal(kc_cache_record_get(c, "a", v, sizeof v), KC_MISS);
    assert_int_equal(kc_cache_record_set(c, "a", "2"), KC_EREADONLY);
    kc_cache_close(c);
}

static void test_a_capped_prefix_keeps_the_newest(void **state) {
    (void)state;
    kc_cache *c = open_at("cap", 0);
    assert_int_equal(kc_cache_record_set(c, "other", "kept"), KC_OK);
    char name[32], v[16];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "memo.%d", i);
        assert_int_equal(kc_record_set_(c, name, "x", "memo.", 4), KC_OK);
    }
    walk w = {"", 0};
    assert_int_equal(kc_cache_record_foreach(c, "memo.", collect, &w), KC_OK);
    assert_string_equal(w.seen, "memo.6=x;memo.7=x;memo.8=x;memo.9=x;");
    assert_int_equal(kc_record_set_(c, "memo.7", "y", "memo.", 4), KC_OK); /* a replaced one is no new one */
    memset(&w, 0, sizeof w);
    assert_int_equal(kc_cache_record_foreach(c, "memo.", collect, &w), KC_OK);
    assert_string_equal(w.seen, "memo.6=x;memo.8=x;memo.9=x;memo.7=y;");
    assert_int_equal(kc_cache_record_get(c, "other", v, sizeof v), KC_OK);
    kc_cache_close(c);
}

static void test_concurrent_writers_lose_nothing(void **state) {
    (void)state;
    kc_cache *c = open_at("many", 0);
    kc_cache_close(c);
    pid_t pids[4];
    for (int p = 0; p < 4; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] == 0) {
            kc_cache *cc = open_at("many", 0);
            int bad = 0;
            for (int i = 0; i < 25; i++) {
                char name[32];
                snprintf(name, sizeof name, "w%d.%d", p, i);
                bad |= kc_cache_record_set(cc, name, "v") != KC_OK;
            }
            kc_cache_close(cc);
            _exit(bad);
        }
    }
    for (int p = 0; p < 4; p++) {
        int st;
        assert_int_equal(waitpid(pids[p], &st, 0), pids[p]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    c = open_at("many", 0);
    walk w = {"", 0};
    assert_int_equal(kc_cache_record_foreach(c, "w", stop_at_two, &w.n), 42); /* readable */
    int n = 0;
    char v[8], name[32];
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 25; i++) {
            snprintf(name, sizeof name, "w%d.%d", p, i);
            n += kc_cache_record_get(c, name, v, sizeof v) == KC_OK;
        }
    assert_int_equal(n, 100);
    kc_cache_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_get_remove_walk),
        cmocka_unit_test(test_names_and_values_are_checked),
        cmocka_unit_test(test_bad_lines_are_ignored_then_dropped),
        cmocka_unit_test(test_readonly_and_disabled_are_not_written),
        cmocka_unit_test(test_a_capped_prefix_keeps_the_newest),
        cmocka_unit_test(test_concurrent_writers_lose_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_shards_lazy.c — shard folders made when first written ([Note: shards made when
 * written] in local.c) and counters flushed in one pass ([Note: one flush] in local_stats.c):
 *   - opening an existing cache makes no folder: a v1/ without shards stays without them; a put,
 *     a compile lock and a quarantine each make only their own; get, iterate, gc, stats and clear
 *     take the missing ones as empty and make none;
 *   - a link planted where a shard would be made is refused, never followed;
 *   - hits counted in 64 shards are flushed into one stats file, and stats stay exact with two
 *     handles (two processes' worth) adding at once.
 */
#include <sys/wait.h>

#include "common/fs.h"
#include "common/internal.h"
#include "helpers.h"
#include "kcache.h"
#include "store/local.h"

static char *dir;

KCT_TMPDIR_FIXTURE(dir, "shards")

/* How many of v1/'s 256 shard folders exist. */
static int shards_present(const char *root) {
    int n = 0;
    for (int s = 0; s < KC_SHARDS; s++) {
        char p[700];
        struct stat st;
        snprintf(p, sizeof p, "%s/v1/%02x", root, s);
        n += lstat(p, &st) == 0;
    }
    return n;
}

static void strip_shards(const char *root) {
    char p[700];
    for (int s = 0; s < KC_SHARDS; s++) {
        snprintf(p, sizeof p, "%s/v1/%02x", root, s);
        kct_rmtree(p);
    }
    snprintf(p, sizeof p, "%s/v1/quarantine", root);
    kct_rmtree(p);
}

static void name_for(int shard, int i, char out[KC_NAME_MAX + 1]) {
    snprintf(out, KC_NAME_MAX + 1, "%02x%030x.sm_90", shard, i);
}

static int count_item(const kc_store_item *it, void *ctx) {
    (void)it;
    (*(int *)ctx)++;
    return 0;
}

static void test_open_makes_nothing(void **state) {
    (void)state;
    char root[600], p[800];
    snprintf(root, sizeof root, "%s/c", dir);
    kc_local *l;
    assert_int_equal(kc_local_open(&l, root, 0, 0), KC_OK); /* a new cache gets its folders, once */
    kc_local_free(l);
    assert_int_equal(shards_present(root), KC_SHARDS);
    strip_shards(root);
    assert_int_equal(kc_local_open(&l, root, 0, 0), KC_OK);
    assert_int_equal(shards_present(root), 0); /* opening an existing cache makes nothing */
    /* Readers take missing shards as empty and make none. */
    char name[KC_NAME_MAX + 1];
    name_for(0x3c, 1, name);
    void *data;
    size_t len;
    assert_int_equal(kc_local_get(l, name, &data, &len), KC_MISS);
    assert_int_equal(kc_local_exists(l, name), 0);
    assert_int_equal(kc_local_remove(l, name), KC_MISS);
    int n = 0;
    assert_int_equal(kc_local_iterate(l, count_item, &n), KC_OK);
    assert_int_equal(n, 0);
    kc_stats s;
    assert_int_equal(kc_local_stats(l, &s), KC_OK);
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_local_gc(l, 0, &r), KC_OK);
    assert_int_equal(kc_local_clear(l), KC_OK);
    assert_int_equal(kc_local_stats_zero(l), KC_OK);
    assert_int_equal(shards_present(root), 0);
    /* A put makes its own shard, only. */
    assert_int_equal(kc_local_put(l, name, "data", 4), KC_OK);
    assert_int_equal(shards_present(root), 1);
    snprintf(p, sizeof p, "%s/v1/3c", root);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(kc_local_get(l, name, &data, &len), KC_OK);
    free(data);
    /* A compile lock makes its shard. */
    char lname[KC_NAME_MAX + 1], lpath[800];
    name_for(0x4d, 2, lname);
    int fd = -1;
    assert_int_equal(kc_local_trylock(l, lname, &fd, lpath, sizeof lpath), KC_OK);
    kc_local_unlock(fd, lpath);
    assert_int_equal(shards_present(root), 2);
    /* A quarantine makes quarantine/. */
    assert_int_equal(kc_local_quarantine(l, name), KC_OK);
    snprintf(p, sizeof p, "%s/v1/quarantine", root);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    kc_local_free(l);
}

static void test_planted_link_refused(void **state) {
    (void)state;
    char root[600], p[800], elsewhere[700];
    snprintf(root, sizeof root, "%s/c", dir);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", dir);
    assert_int_equal(mkdir(elsewhere, 0700), 0);
    kc_local *l;
    assert_int_equal(kc_local_open(&l, root, 0, 0), KC_OK);
    kc_local_free(l);
    strip_shards(root);
    assert_int_equal(kc_local_open(&l, root, 0, 0), KC_OK);
    snprintf(p, sizeof p, "%s/v1/5e", root);
    assert_int_equal(symlink(elsewhere, p), 0); /* planted after open, before the first write */
    char name[KC_NAME_MAX + 1];
    name_for(0x5e, 1, name);
    assert_int_equal(kc_local_put(l, name, "data", 4), KC_EIO);
    int fd = -1;
    char lpath[800];
    assert_int_equal(kc_local_trylock(l, name, &fd, lpath, sizeof lpath), KC_EIO);
    kc_local_count(l, 0x5e, KC_STAT_HITS, 1);
    kc_local_flush(l);
    assert_int_equal(kct_count_files(elsewhere, ""), 0); /* nothing written through the link */
    snprintf(p, sizeof p, "%s/v1/quarantine", root);
    assert_int_equal(symlink(elsewhere, p), 0);
    snprintf(p, sizeof p, "%s/v1/61", root);
    assert_int_equal(mkdir(p, 0700), 0);
    name_for(0x61, 1, name);
    assert_int_equal(kc_local_put(l, name, "data", 4), KC_OK);
    assert_int_equal(kc_local_quarantine(l, name), KC_EIO);
    assert_int_equal(kct_count_files(elsewhere, ""), 0);
    kc_local_free(l);
}

/* How many shards hold a stats file. */
static int stats_files(const char *root) {
    int n = 0;
    for (int s = 0; s < KC_SHARDS; s++) {
        char p[700];
        struct stat st;
        snprintf(p, sizeof p, "%s/v1/%02x/stats", root, s);
        n += lstat(p, &st) == 0;
    }
    return n;
}

static void test_one_flush(void **state) {
    (void)state;
    char root[600];
    snprintf(root, sizeof root, "%s/c", dir);
    kc_local *a, *b;
    assert_int_equal(kc_local_open(&a, root, 0, 0), KC_OK);
    assert_int_equal(kc_local_open(&b, root, 0, 0), KC_OK);
    assert_int_equal(stats_files(root), 0);
    for (int s = 0; s < 64; s++) {
        kc_local_count(a, s * 4, KC_STAT_HITS, 1);
        kc_local_count(b, s * 4 + 1, KC_STAT_HITS, 2);
        kc_local_count(b, s * 4 + 2, KC_STAT_MISSES, 1);
    }
    kc_local_flush(a);
    assert_int_equal(stats_files(root), 1); /* 64 shards' hits, one file written */
    kc_local_flush(b);
    assert_int_equal(stats_files(root), 2);
    kc_stats st;
    assert_int_equal(kc_local_stats(a, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_HITS], 64 * 3);
    assert_int_equal(st.v[KC_STAT_MISSES], 64);
    /* Sizes stay in their shards: a put's bytes and entry are its shard's. */
    char name[KC_NAME_MAX + 1];
    name_for(0x9a, 1, name);
    kc_local_count(a, 0x10, KC_STAT_HITS, 5);
    assert_int_equal(kc_local_put(a, name, "abcdef", 6), KC_OK);
    kc_local_flush(a);
    assert_int_equal(kc_local_stats(b, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_HITS], 64 * 3 + 5);
    assert_int_equal(st.v[KC_STAT_PUTS], 1);
    assert_int_equal(st.v[KC_STAT_BYTES], 6);
    assert_int_equal(st.v[KC_STAT_ENTRIES], 1);
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_local_gc(b, 0, &r), KC_OK); /* a recount agrees */
    assert_int_equal(kc_local_stats(a, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_BYTES], 6);
    assert_int_equal(st.v[KC_STAT_ENTRIES], 1);
    assert_int_equal(st.v[KC_STAT_HITS], 64 * 3 + 5);
    /* Two processes adding at once lose nothing. */
    kc_local_free(b);
    pid_t pid = fork();
    if (pid == 0) {
        kc_local *x;
        if (kc_local_open(&x, root, 0, 0)) _exit(1);
        for (int i = 0; i < 2000; i++) {
            kc_local_count(x, i % KC_SHARDS, KC_STAT_HITS, 1);
            if (i % 50 == 0) kc_local_flush(x);
        }
        kc_local_free(x);
        _exit(0);
    }
    for (int i = 0; i < 2000; i++) {
        kc_local_count(a, (i * 7) % KC_SHARDS, KC_STAT_HITS, 1);
        if (i % 50 == 0) kc_local_flush(a);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_int_equal(WEXITSTATUS(status), 0);
    kc_local_flush(a);
    assert_int_equal(kc_local_stats(a, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_HITS], 64 * 3 + 5 + 4000);
    kc_local_free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_makes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_planted_link_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_flush, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

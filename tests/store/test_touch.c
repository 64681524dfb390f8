/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_touch.c (label unit) — the local store's LRU clock with [Note: the touch memo]
 * and [Note: the folder held open] (store/local_hit.c): a hit of an old file
 * refreshes its time; a second hit in the same handle within TOUCH_AFTER_S reads no time; the
 * memo is per handle (another process's hit refreshes what this one remembers); after the window
 * the time is read again; and hits still find their files after v1/ was moved aside or replaced.
 */
#include "helpers.h"

#include <pthread.h>
#include <sys/stat.h>
#include <utime.h>

#include "common/fs.h"
#include "common/internal.h"
#include "kcache.h"
#include "store/local.h"

#define NAME "0123456789abcdef0123456789abcdef.sm_90"

static char *dir;
KCT_TMPDIR_FIXTURE(dir, "touch")

/* The entry's time set `age` seconds back; its path in p. */
static void age(kc_local *l, time_t secs, char p[4096]) {
    kc_local_path(l, NAME, p, 4096);
    struct utimbuf t = {time(NULL) - secs, time(NULL) - secs};
    assert_int_equal(utime(p, &t), 0);
}

static time_t mtime_of(const char *p) {
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    return st.st_mtime;
}

static void hit(kc_local *l, const char *want) {
    void *d;
    size_t n;
    assert_int_equal(kc_local_get(l, NAME, &d, &n), KC_OK);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(d, want, n);
    free(d);
}

static void test_memo_per_handle_and_window(void **state) {
    (void)state;
    kc_local *a, *b;
    assert_int_equal(kc_local_open(&a, dir, 0, 0), KC_OK);
    assert_int_equal(kc_local_open(&b, dir, 0, 0), KC_OK);
    assert_int_equal(kc_local_put(a, NAME, "bytes", 5), KC_OK);
    char p[4096];
    age(a, 1000, p);
    time_t t0 = time(NULL);
    hit(a, "bytes"); /* first hit in this handle: the time is read, and refreshed */
    assert_true(mtime_of(p) >= t0);
    age(a, 1000, p);
    hit(a, "bytes");                                              /* within the window: no time read, none refreshed */
    if (time(NULL) - t0 < 2) assert_true(mtime_of(p) < t0 - 900); /* a slower machine passed the window */
    hit(b, "bytes"); /* another handle (as another process) reads it: refreshed */
    assert_true(mtime_of(p) >= t0);
    age(a, 1000, p);
    sleep(3); /* past TOUCH_AFTER_S (2): the handle reads the time again */
    time_t t1 = time(NULL);
    hit(a, "bytes");
    assert_true(mtime_of(p) >= t1);
    kc_local_free(a);
    kc_local_free(b);
}

static void test_read_only_never_touches(void **state) {
    (void)state;
    kc_local *w, *r;
    assert_int_equal(kc_local_open(&w, dir, 0, 0), KC_OK);
    assert_int_equal(kc_local_put(w, NAME, "bytes", 5), KC_OK);
    assert_int_equal(kc_local_open(&r, dir, 0, KC_OPEN_READONLY), KC_OK);
    char p[4096];
    age(w, 1000, p);
    time_t t0 = time(NULL);
    hit(r, "bytes");
    assert_true(mtime_of(p) < t0 - 900);
    kc_local_free(r);
    kc_local_free(w);
}

static void test_hits_after_v1_moved_or_replaced(void **state) {
    (void)state;
    kc_local *l, *other;
    assert_int_equal(kc_local_open(&l, dir, 0, 0), KC_OK);
    assert_int_equal(kc_local_put(l, NAME, "first", 5), KC_OK);
    hit(l, "first");
    char v1[4096], aside[4096];
    snprintf(v1, sizeof v1, "%s/v1", dir);
    snprintf(aside, sizeof aside, "%s/v1-aside", dir);
    assert_int_equal(rename(v1, aside), 0); /* moved aside, and a new v1/ made by another opener */
    assert_int_equal(kc_local_open(&other, dir, 0, 0), KC_OK);
    assert_int_equal(kc_local_put(other, NAME, "second", 6), KC_OK);
    /* within the window the held folder may still answer (a good entry); this handle's quarantine
     * checks it first, finds it is not the path's, moves nothing, and reads the path's from then on */
    assert_int_equal(kc_local_quarantine(l, NAME), KC_OK);
    hit(l, "second");
    hit(other, "second");
    /* removed under a held folder: found under the path (a name absent there is looked for) */
    assert_int_equal(kc_local_put(l, NAME, "first", 5), KC_OK);
    kct_rmtree(aside);
    hit(l, "first");
    snprintf(aside, sizeof aside, "%s/v1-again", dir);
    assert_int_equal(rename(v1, aside), 0);
    kc_local_free(other);
    assert_int_equal(kc_local_open(&other, dir, 0, 0), KC_OK); /* a third v1/ */
    assert_int_equal(kc_local_put(other, NAME, "third", 5), KC_OK);
    (void)kc_local_remove(l,
                          "ffffffffffffffffffffffffffffffff.sm_90"); /* absent: its check of the folder is the point */
    hit(l, "third");
    kc_local_free(other);
    kc_local_free(l);
}

/* Hitters on several threads while the folder is moved aside and copied back, and this handle
 * checks it at once (its removes): every hit answers the bytes stored, never an error (TSan lane). */
typedef struct hitter {
    kc_local *l;
    int stop, bad, hits;
} hitter;

static void *hit_loop(void *arg) {
    hitter *h = arg;
    while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
        void *d;
        size_t n;
        int rc = kc_local_get(h->l, NAME, &d, &n);
        if (rc == KC_OK && (n != 5 || memcmp(d, "bytes", 5) != 0)) __atomic_add_fetch(&h->bad, 1, __ATOMIC_RELAXED);
        if (rc != KC_OK && rc != KC_MISS) __atomic_add_fetch(&h->bad, 1, __ATOMIC_RELAXED);
        if (rc == KC_OK) free(d), __atomic_add_fetch(&h->hits, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

static void test_hits_while_the_folder_moves(void **state) {
    (void)state;
    kc_local *l;
    assert_int_equal(kc_local_open(&l, dir, 0, 0), KC_OK);
    assert_int_equal(kc_local_put(l, NAME, "bytes", 5), KC_OK);
    hitter h = {l, 0, 0, 0};
    pthread_t t[3];
    for (int i = 0; i < 3; i++) assert_int_equal(pthread_create(&t[i], NULL, hit_loop, &h), 0);
    char v1[4096], aside[4096], cmd[9000];
    for (int round = 0; round < 12; round++) { /* more rounds than the folders a handle holds */
        snprintf(v1, sizeof v1, "%s/v1", dir);
        snprintf(aside, sizeof aside, "%s/v1-%d", dir, round);
        assert_int_equal(rename(v1, aside), 0);
        snprintf(cmd, sizeof cmd, "cp -a '%s' '%s.tmp' && mv '%s.tmp' '%s'", aside, v1, v1, v1); /* whole, at once */
        assert_int_equal(system(cmd), 0);
        (void)kc_local_remove(l, "ffffffffffffffffffffffffffffffff.sm_90"); /* the check, now */
    }
    __atomic_store_n(&h.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    assert_int_equal(h.bad, 0);
    assert_true(h.hits > 0);
    hit(l, "bytes");
    kc_local_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_memo_per_handle_and_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_never_touches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hits_after_v1_moved_or_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hits_while_the_folder_moves, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_touch.c (label unit) — the local store's LRU clock with [Note: the touch memo]
 * (store/local_touch.c) and [Note: the folder held open] (store/local.c): a hit of an old file
 * refreshes its time; a second hit in the same handle within TOUCH_AFTER_S reads no time; the
 * memo is per handle (another process's hit refreshes what this one remembers); after the window
 * the time is read again; and hits still find their files after v1/ was moved aside or replaced.
 */
#include "helpers.h"

#include <sys/stat.h>
#include <utime.h>

#include "common/fs.h"
#include "common/internal.h"
#include "kcache.h"
#include "store/local.h"

#define NAME "0123456789abcdef0123456789abcdef.sm_90"

static char *dir;

static int setup(void **state) {
    (void)state;
    dir = kct_tmpdir("touch");
    return dir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kct_rmtree(dir);
    free(dir);
    return 0;
}

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
    hit(a, "bytes"); /* within the window: no time read, none refreshed */
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
    kc_local *l;
    assert_int_equal(kc_local_open(&l, dir, 0, 0), KC_OK);
    assert_int_equal(kc_local_put(l, NAME, "first", 5), KC_OK);
    hit(l, "first");
    char v1[4096], aside[4096];
    snprintf(v1, sizeof v1, "%s/v1", dir);
    snprintf(aside, sizeof aside, "%s/v1-aside", dir);
    assert_int_equal(rename(v1, aside), 0); /* moved: the held folder still has the good entry */
    hit(l, "first");
    kct_rmtree(aside); /* removed, and a new v1/ made by another opener: found under the path */
    kc_local *other;
    assert_int_equal(kc_local_open(&other, dir, 0, 0), KC_OK);
    assert_int_equal(kc_local_put(other, NAME, "second", 6), KC_OK);
    hit(l, "second");
    kc_local_free(other);
    kc_local_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_memo_per_handle_and_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_never_touches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hits_after_v1_moved_or_replaced, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

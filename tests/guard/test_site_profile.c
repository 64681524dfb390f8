/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_site_profile.c — profiles merge on write (issue 19): two processes that opened the
 * same site's profile before either saved each learn a different dynamic dimension; the
 * second's save must not drop the first's, so a third process starts with both dynamic.
 */
#include <sys/wait.h>

#include "kcache.h"
#include "helpers.h"

static kc_tensor_meta t2(int64_t a, int64_t b) {
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{a, NULL}, {b, NULL}}, {{b, NULL}, {1, NULL}}, 0};
    return t;
}

/* A child: open the site, say "ready" on `up`, wait for "go" on `down`, then see two calls that
 * differ only in dimension `dim` (so it becomes dynamic and the profile is saved). */
static int learner(kc_cache *cache, int dim, int up, int down) {
    kc_site *s;
    if (kc_site_new(&s, cache, "merge.forward", NULL) != KC_OK) return 2;
    char b = 'r';
    if (write(up, &b, 1) != 1 || read(down, &b, 1) != 1) return 3;
    kc_tensor_meta x = dim ? t2(8, 64) : t2(64, 8), y = dim ? t2(8, 32) : t2(32, 8);
    kc_call cx = {&x, 1, NULL, 0, 0, NULL}, cy = {&y, 1, NULL, 0, 0, NULL};
    kc_site_answer a;
    if (kc_site_lookup(s, &cx, &a) != KC_OK || a.result != KC_SITE_MISS) return 4;
    kc_site_insert(s, &cx, a.dynamic, NULL, NULL);
    if (kc_site_lookup(s, &cy, &a) != KC_OK || a.result != KC_SITE_MISS || !(a.dynamic[0] >> dim & 1)) return 5;
    kc_site_free(s);
    return 0;
}

static void test_two_learners_leave_both(void **state) {
    (void)state;
    char *dir;
    kc_cache *cache;
    assert_int_equal(kct_open_cache("profile-merge", &dir, &cache), 0);
    int up[2][2], down[2][2];
    pid_t pid[2];
    fflush(NULL);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pipe(up[i]), 0);
        assert_int_equal(pipe(down[i]), 0);
        pid[i] = fork();
        if (pid[i] == 0) _exit(learner(cache, i, up[i][1], down[i][0]));
    }
    char b;
    for (int i = 0; i < 2; i++) assert_int_equal(read(up[i][0], &b, 1), 1); /* both read the (empty) profile */
    for (int i = 0; i < 2; i++) {                                           /* then each learns and saves, in turn */
        assert_int_equal(write(down[i][1], "g", 1), 1);
        int st = 0;
        assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    /* The third process starts with both dimensions dynamic. */
    kc_site *s;
    assert_int_equal(kc_site_new(&s, cache, "merge.forward", NULL), KC_OK);
    kc_tensor_meta t = t2(5, 5);
    kc_call c = {&t, 1, NULL, 0, 0, NULL};
    kc_site_answer a;
    assert_int_equal(kc_site_lookup(s, &c, &a), KC_OK);
    assert_int_equal(a.result, KC_SITE_MISS);
    assert_int_equal(a.dynamic[0], 3);
    kc_site_free(s);
    for (int i = 0; i < 2; i++) close(up[i][0]), close(up[i][1]), close(down[i][0]), close(down[i][1]);
    kct_close_cache(dir, cache);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_learners_leave_both),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

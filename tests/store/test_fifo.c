/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_fifo.c (label unit) — FIFOs where the cache expects regular files never block it:
 * a file read whole (an HMAC key file, an entry), a shard's stats file (read by stats,
 * read-modify-written by every flush) and a compile lock.  Each call must return, with
 * an error or a miss, at once; an alarm kills the test if any waits (the bug: forever).
 */
#include "helpers.h"
#include "conformance.h"

#include <sys/stat.h>

#include "common/fs.h"
#include "common/internal.h"
#include "kcache.h"
#include "store/local.h"

#define NAME "0123456789abcdef0123456789abcdef.sm_90"

static void test_read_file_refuses_a_fifo(void **state) {
    (void)state;
    char *d = kct_tmpdir("fifo");
    char p[1024];
    snprintf(p, sizeof p, "%s/key", d);
    assert_int_equal(mkfifo(p, 0600), 0);
    alarm(10); /* a blocked open never returns: the alarm ends the test */
    void *data;
    size_t len;
    assert_int_equal(kc_fs_read_file(p, 4096, &data, &len, NULL), KC_ECORRUPT);
    alarm(0);
    kct_rmtree(d);
    free(d);
}

static void test_local_store_with_fifos(void **state) {
    (void)state;
    char *d = kct_tmpdir("fifo");
    kc_local *l;
    assert_int_equal(kc_local_open(&l, d, 0, 0), KC_OK);
    uint8_t v[64] = {1};
    assert_int_equal(kc_local_put(l, NAME, v, sizeof v), KC_OK); /* makes the shard's directory */
    char p[1024];
    kc_local_path(l, NAME, p, sizeof p);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(mkfifo(p, 0600), 0); /* the entry */
    char *slash = strrchr(p, '/');
    snprintf(slash + 1, (size_t)(p + sizeof p - slash - 1), "stats");
    unlink(p);
    assert_int_equal(mkfifo(p, 0600), 0); /* the shard's stats file */
    alarm(10);
    void *data;
    size_t len;
    assert_true(kc_local_get(l, NAME, &data, &len) != KC_OK); /* the entry: refused, not waited on */
    kc_stats st;
    assert_int_equal(kc_local_stats(l, &st), KC_OK);         /* flush (read-modify-write) and read */
    char other[] = "01ffffffffffffffffffffffffffffff.sm_90"; /* same shard */
    assert_int_equal(kc_local_put(l, other, v, sizeof v), KC_OK);
    kc_local_flush(l);
    int fd;
    char lp[1024];
    snprintf(lp, sizeof lp, "%s", p);
    slash = strrchr(lp, '/');
    snprintf(slash + 1, (size_t)(lp + sizeof lp - slash - 1), ".lock.%s", NAME);
    assert_int_equal(mkfifo(lp, 0600), 0); /* a compile lock */
    char got[1024];
    assert_true(kc_local_trylock(l, NAME, &fd, got, sizeof got) != KC_OK);
    alarm(0);
    kc_local_free(l);
    kct_rmtree(d);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_file_refuses_a_fifo),
        cmocka_unit_test(test_local_store_with_fifos),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

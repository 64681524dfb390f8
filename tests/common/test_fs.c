/* SPDX-License-Identifier: Apache-2.0 */
/* test_fs.c — atomic replacement, whole-file reads, and injected faults at each step. */
#include "helpers.h"

#include <errno.h>

#include "common/fs.h"
#include "common/internal.h"

static char *dir;

static int setup(void **state) {
    (void)state;
    dir = kct_tmpdir("fs");
    return dir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kc_fs_fault_clear();
    kct_rmtree(dir);
    free(dir);
    return 0;
}

static void test_write_then_read(void **state) {
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/a/b/c", dir);
    assert_int_equal(kc_fs_mkdirs(p, 0700), KC_OK);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    snprintf(p, sizeof p, "%s/a/file", dir);
    assert_int_equal(kc_fs_write_atomic(p, "hello", 5), KC_OK);
    void *data;
    size_t len;
    assert_int_equal(kc_fs_read_file(p, 100, &data, &len, &st), KC_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(data, "hello", 5);
    assert_int_equal(st.st_mode & 0777, 0600);
    free(data);
    assert_int_equal(kc_fs_read_file(p, 4, &data, &len, NULL), KC_ECORRUPT); /* over the cap */
    snprintf(p, sizeof p, "%s/a/missing", dir);
    assert_int_equal(kc_fs_read_file(p, 100, &data, &len, NULL), KC_MISS);
}

/* Every failing step leaves the old content and no temporary file. */
static void test_faults_keep_old_content(void **state) {
    (void)state;
    char p[512], a[512];
    snprintf(a, sizeof a, "%s/f", dir);
    kc_fs_mkdirs(a, 0700);
    snprintf(p, sizeof p, "%s/f/file", dir);
    assert_int_equal(kc_fs_write_atomic(p, "old", 3), KC_OK);
    const kc_fs_op ops[] = {KC_FS_OPEN, KC_FS_WRITE, KC_FS_FSYNC, KC_FS_RENAME};
    const int errs[] = {EIO, ENOSPC, EACCES, EROFS};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        for (size_t e = 0; e < sizeof errs / sizeof errs[0]; e++) {
            kc_fs_fault_set(ops[i], 1, errs[e], false);
            int rc = kc_fs_write_atomic(p, "new!", 4);
            assert_int_not_equal(rc, KC_OK);
            assert_non_null(strstr(kc_error_last()->message, strerror(errs[e])));
            size_t len;
            uint8_t *d = kct_read(p, &len);
            assert_non_null(d);
            assert_int_equal(len, 3);
            assert_memory_equal(d, "old", 3);
            free(d);
            assert_int_equal(kct_count_files(a, ".tmp."), 0);
        }
    }
    kc_fs_fault_clear();
    assert_int_equal(kc_fs_write_atomic(p, "new!", 4), KC_OK);
}

static void test_fault_every_from_n(void **state) {
    (void)state;
    kc_fs_fault_set(KC_FS_WRITE, 2, EIO, true);
    char p[512];
    snprintf(p, sizeof p, "%s/g", dir);
    assert_int_equal(kc_fs_write_atomic(p, "x", 1), KC_OK);  /* 1st write ok */
    assert_int_equal(kc_fs_write_atomic(p, "y", 1), KC_EIO); /* 2nd fails */
    assert_int_equal(kc_fs_write_atomic(p, "z", 1), KC_EIO); /* and every one after */
    assert_true(kc_fs_fault_count() >= 2);
    kc_fs_fault_clear();
    assert_int_equal(kc_fs_write_atomic(p, "z", 1), KC_OK);
}

static void test_temp_names(void **state) {
    (void)state;
    assert_true(kc_fs_is_temp_name(".tmp.abc"));
    assert_false(kc_fs_is_temp_name("abc.kce"));
}

/* Issue 15 items 16, 17: a link inside the cache is refused (kc_fs_read_file, kc_fs_real_dir,
 * kc_fs_opendir_nofollow); an input the user names is followed through it (kc_fs_read_input). */
static void test_links_inputs_followed_cache_refused(void **state) {
    (void)state;
    char f[512], l[512], d[512], dl[512];
    snprintf(f, sizeof f, "%s/file", dir);
    snprintf(l, sizeof l, "%s/link", dir);
    snprintf(d, sizeof d, "%s/folder", dir);
    snprintf(dl, sizeof dl, "%s/folder-link", dir);
    assert_int_equal(kc_fs_write_atomic(f, "hello", 5), KC_OK);
    assert_int_equal(symlink("file", l), 0);
    void *data;
    size_t len;
    assert_int_not_equal(kc_fs_read_file(l, 100, &data, &len, NULL), KC_OK);
    assert_int_equal(kc_fs_read_input(l, 100, &data, &len, NULL), KC_OK);
    assert_int_equal(len, 5);
    assert_memory_equal(data, "hello", 5);
    free(data);
    assert_int_equal(mkdir(d, 0700), 0);
    assert_int_equal(symlink("folder", dl), 0);
    assert_int_equal(kc_fs_real_dir(d), KC_OK);
    assert_int_equal(kc_fs_real_dir(dl), KC_EIO);
    assert_non_null(strstr(kc_error_last()->message, "symbolic link"));
    assert_int_equal(kc_fs_real_dir(f), KC_EIO);
    DIR *dp = kc_fs_opendir_nofollow(d);
    assert_non_null(dp);
    closedir(dp);
    assert_null(kc_fs_opendir_nofollow(dl));
    assert_true(errno == ENOTDIR || errno == ELOOP); /* Linux: ENOTDIR (O_DIRECTORY meets the link) */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_then_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_faults_keep_old_content, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_every_from_n, setup, teardown),
        cmocka_unit_test(test_temp_names),
        cmocka_unit_test_setup_teardown(test_links_inputs_followed_cache_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* test_fs.c — atomic replacement, whole-file reads, and injected faults at each step. */
#include "helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

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

/* The path of `name` in the test's folder into f[512], and n bytes of a pattern (`salt`) to write there. */
static uint8_t *file_and_bytes(char f[512], const char *name, size_t n, unsigned salt) {
    snprintf(f, 512, "%s/%s", dir, name);
    uint8_t *b = malloc(n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(i * salt + i / 251);
    return b;
}

/* kc_fs_read_file_at with its kc_fs_read_how spelt out. */
static int read_at(int dirfd, const char *rel, const char *path, size_t max, size_t hint, void *lent, size_t lent_cap,
                   void **out, size_t *len, struct stat *st) {
    kc_fs_read_how how = {max, hint, lent, lent_cap};
    return kc_fs_read_file_at(dirfd, rel, path, &how, out, len, st);
}

/* [Note: the reader without fstat]: every size around its first read's buffer reads whole and
 * the same as the reader with a stat; over the cap, a folder and an absent file as that one says. */
static void test_read_without_stat(void **state) {
    (void)state;
    static const size_t sizes[] = {0, 1, 4095, 16383, 16384, 16385, 100000};
    char f[512];
    uint8_t *want = file_and_bytes(f, "file", 100000, 7);
    for (size_t k = 0; k < KC_ARRAY_LEN(sizes); k++) {
        size_t n = sizes[k];
        assert_int_equal(kc_fs_write_atomic(f, want, n), KC_OK);
        void *a, *b;
        size_t la, lb;
        struct stat st;
        assert_int_equal(read_at(AT_FDCWD, f, f, n, 0, NULL, 0, &a, &la, NULL), KC_OK);
        assert_int_equal(kc_fs_read_file(f, n, &b, &lb, &st), KC_OK);
        assert_int_equal(la, n);
        assert_int_equal(lb, n);
        ((uint8_t *)a)[n] = 0; /* room for a terminator, as read_file leaves: out of bounds under ASan if not */
        free(b);
        if (n == 0) {
            free(a);
            continue;
        }
        assert_memory_equal(a, want, n);
        free(a);
        static const size_t hints[] = {1, 2, 4096, 16384, 200000}; /* a hint, right or wrong, reads it whole */
        for (size_t h = 0; h < KC_ARRAY_LEN(hints) + 1; h++) {
            size_t hint = h < KC_ARRAY_LEN(hints) ? hints[h] : n;
            assert_int_equal(read_at(AT_FDCWD, f, f, n, hint, NULL, 0, &a, &la, NULL), KC_OK);
            assert_int_equal(la, n);
            assert_memory_equal(a, want, n);
            ((uint8_t *)a)[n] = 0;
            free(a);
            assert_int_equal(read_at(AT_FDCWD, f, f, n - 1, hint, NULL, 0, &a, &la, NULL), KC_ECORRUPT);
            assert_null(a);
        }
        assert_int_equal(read_at(AT_FDCWD, f, f, n - 1, 0, NULL, 0, &a, &la, NULL), KC_ECORRUPT); /* one over the cap */
        assert_non_null(strstr(kc_error_last()->message, "over the cap"));
        assert_null(a);
        assert_int_equal(kc_fs_read_file(f, n - 1, &a, &la, &st), KC_ECORRUPT); /* and with a stat */
        assert_non_null(strstr(kc_error_last()->message, "over the cap"));
        assert_null(a);
    }
    free(want);
    void *a;
    size_t la;
    assert_int_equal(read_at(AT_FDCWD, dir, dir, 4096, 0, NULL, 0, &a, &la, NULL), KC_ECORRUPT); /* a folder */
    assert_non_null(strstr(kc_error_last()->message, "not a regular file"));
    snprintf(f, sizeof f, "%s/absent", dir);
    assert_int_equal(read_at(AT_FDCWD, f, f, 4096, 0, NULL, 0, &a, &la, NULL), KC_MISS);
    snprintf(f, sizeof f, "%s/file", dir);
    kc_fs_fault_set(KC_FS_READ, 1, EIO, false); /* a failed read is the error, named */
    assert_int_equal(read_at(AT_FDCWD, f, f, 1 << 20, 0, NULL, 0, &a, &la, NULL), KC_EIO);
    assert_non_null(strstr(kc_error_last()->message, "reading"));
    assert_null(a);
    kc_fs_fault_set(KC_FS_READ, 2, EIO, false); /* the rest of a file longer than the first read */
    assert_int_equal(read_at(AT_FDCWD, f, f, 1 << 20, 0, NULL, 0, &a, &la, NULL), KC_EIO);
    kc_fs_fault_clear();
}

/* The caller's lent buffer: a file with room to spare in it is read there (nothing to free), any
 * other into a buffer of its own; the bytes are the file's either way, with or without a hint, and a
 * failure leaves nothing of either. */
static void test_read_into_lent(void **state) {
    (void)state;
    static const size_t sizes[] = {1, 100, 1022, 1023, 1024, 4095, 16383, 16384, 16385, 70000};
    static const size_t caps[] = {1, 2, 1024, 1025, 16384, 16386, 70002}; /* 1: too small to lend */
    char f[512];
    uint8_t *want = file_and_bytes(f, "lent", 70000, 13);
    for (size_t k = 0; k < KC_ARRAY_LEN(sizes); k++) {
        size_t n = sizes[k];
        assert_int_equal(kc_fs_write_atomic(f, want, n), KC_OK);
        for (size_t c = 0; c < KC_ARRAY_LEN(caps); c++) {
            uint8_t *lent = malloc(caps[c]); /* exactly its size: a write past it is ASan's */
            size_t hints[] = {0, n, n / 2 + 1, n + 5000};
            for (size_t h = 0; h < KC_ARRAY_LEN(hints); h++) {
                void *a;
                size_t la;
                assert_int_equal(read_at(AT_FDCWD, f, f, 1 << 20, hints[h], lent, caps[c], &a, &la, NULL), KC_OK);
                assert_int_equal(la, n);
                assert_memory_equal(a, want, n);
                /* lent exactly when the file fits with room, and so does the size it was said to have */
                assert_int_equal(a == (void *)lent, n + 2 <= caps[c] && hints[h] + 2 <= caps[c]);
                ((uint8_t *)a)[n] = 0; /* room for a terminator, lent or not */
                if (a != (void *)lent) free(a);
                assert_int_equal(read_at(AT_FDCWD, f, f, n - 1, hints[h], lent, caps[c], &a, &la, NULL),
                                 KC_ECORRUPT); /* over the cap: nothing handed out */
                assert_null(a);
            }
            free(lent);
        }
    }
    free(want);
    uint8_t lent[64];
    void *a;
    size_t la;
    kc_fs_fault_set(KC_FS_READ, 1, EIO, false);
    assert_int_equal(read_at(AT_FDCWD, f, f, 1 << 20, 0, lent, sizeof lent, &a, &la, NULL), KC_EIO);
    assert_null(a);
    kc_fs_fault_clear();
}

/* A FIFO someone writes into: the reader with a stat refuses it; the hits' reader without one reads
 * its bytes as a file's, never more than the cap ([Note: the reader without fstat]). */
static void test_fifo_with_a_writer(void **state) {
    (void)state;
    char f[512];
    snprintf(f, sizeof f, "%s/fifo", dir);
    assert_int_equal(mkfifo(f, 0600), 0);
    int w = open(f, O_RDWR | O_NONBLOCK); /* a writer that never blocks the test */
    assert_true(w >= 0);
    char bytes[100];
    memset(bytes, 'x', sizeof bytes);
    assert_int_equal(write(w, bytes, sizeof bytes), (ssize_t)sizeof bytes);
    void *a;
    size_t la;
    assert_int_equal(kc_fs_read_file(f, 4096, &a, &la, NULL), KC_ECORRUPT);
    assert_non_null(strstr(kc_error_last()->message, "not a regular file"));
    assert_int_equal(read_at(AT_FDCWD, f, f, 4096, 0, NULL, 0, &a, &la, NULL), KC_OK);
    assert_int_equal(la, sizeof bytes);
    free(a);
    assert_int_equal(write(w, bytes, sizeof bytes), (ssize_t)sizeof bytes);
    assert_int_equal(read_at(AT_FDCWD, f, f, 50, 0, NULL, 0, &a, &la, NULL), KC_ECORRUPT); /* over the cap */
    assert_null(a);
    close(w);
}

/* kc_fs_read_file_at: by a name under a folder held open; a folder moved since still answers from
 * where it went; one replaced under its path answers from the path. */
static void test_read_at_folder_held_open(void **state) {
    (void)state;
    char sub[512], f[600], moved[512];
    snprintf(sub, sizeof sub, "%s/v1", dir);
    snprintf(f, sizeof f, "%s/v1/entry", dir);
    snprintf(moved, sizeof moved, "%s/v1-moved", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(kc_fs_write_atomic(f, "first", 5), KC_OK);
    int fd = open(sub, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    void *a;
    size_t la;
    assert_int_equal(read_at(fd, "entry", f, 4096, 0, NULL, 0, &a, &la, NULL), KC_OK);
    assert_int_equal(la, 5);
    assert_memory_equal(a, "first", 5);
    free(a);
    struct stat st;
    assert_int_equal(read_at(fd, "entry", f, 4096, 0, NULL, 0, &a, &la, &st), KC_OK); /* with its stat */
    assert_int_equal(st.st_size, 5);
    assert_memory_equal(a, "first", 5);
    free(a);
    assert_int_equal(read_at(fd, "entry", f, 4, 0, NULL, 0, &a, &la, &st), KC_ECORRUPT);
    assert_int_equal(rename(sub, moved), 0);
    assert_int_equal(mkdir(sub, 0700), 0);
    assert_int_equal(read_at(fd, "entry", f, 4096, 0, NULL, 0, &a, &la, NULL), KC_OK); /* the moved folder's */
    assert_memory_equal(a, "first", 5);
    free(a);
    snprintf(f, sizeof f, "%s/v1-moved/entry", dir);
    assert_int_equal(unlink(f), 0);
    snprintf(f, sizeof f, "%s/v1/entry", dir);
    assert_int_equal(kc_fs_write_atomic(f, "second", 6), KC_OK);
    assert_int_equal(read_at(fd, "entry", f, 4096, 0, NULL, 0, &a, &la, NULL), KC_OK); /* absent there: the path's */
    assert_int_equal(la, 6);
    assert_memory_equal(a, "second", 6);
    free(a);
    assert_int_equal(unlink(f), 0);
    assert_int_equal(read_at(fd, "entry", f, 4096, 0, NULL, 0, &a, &la, NULL), KC_MISS);
    close(fd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_then_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_faults_keep_old_content, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_every_from_n, setup, teardown),
        cmocka_unit_test(test_temp_names),
        cmocka_unit_test_setup_teardown(test_links_inputs_followed_cache_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_into_lent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_without_stat, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_at_folder_held_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_with_a_writer, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

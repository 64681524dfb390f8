/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_readonly_dir.c — a directory that refuses writes (issue 19): its failures are
 * KC_EREADONLY (or KC_EIO where it is not read-only-ness), never KC_EPERM, which is kept for
 * safety refusals; and the process's counts are never lost when the stats files cannot be
 * written — kc_cache_stats shows them, from memory.
 *
 * The 0500 directory runs in a child process: as root (where mode bits do not stop writes)
 * the child first becomes the user nobody; where it cannot, that part is skipped and says why.
 * The other cases inject EACCES/EROFS at the file-system boundary (common/fs.h), which works
 * for every user.
 */
#include <grp.h>
#include <sys/wait.h>

#include "kcache.h"
#include "helpers.h"
#include "common/fs.h"

#define NOBODY 65534

static kc_entry *entry_for(int i, const char *payload) {
    kc_key_builder *kb;
    kc_key_builder_new(&kb);
    kc_key_add_u64(kb, KC_COMP_EXTRA, "readonly-dir", (uint64_t)i);
    kc_key k;
    kc_key_finish(kb, &k);
    kc_entry *e = NULL;
    if (kc_entry_new(&e, &k, "v") || kc_entry_add_key_digests(e, kb) ||
        kc_entry_set_section(e, KC_SECTION_KERNELS, payload, strlen(payload))) {
        kc_entry_free(e);
        e = NULL;
    }
    kc_key_builder_free(kb);
    return e;
}

static kc_cache *open_dir(const char *dir, unsigned flags) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV | flags;
    kc_cache *c = NULL;
    if (kc_cache_open(&c, &o) != KC_OK) return NULL;
    return c;
}

/* Two hits on entry 1 and one miss on entry 2; 0 when each lookup answered as it should. */
static int lookups(kc_cache *c) {
    kc_entry *hit = entry_for(1, "payload"), *miss = entry_for(2, "absent"), *got = NULL;
    int bad = !hit || !miss;
    for (int i = 0; !bad && i < 2; i++) {
        bad |= kc_cache_get(c, kc_entry_key(hit), "v", &got) != KC_OK;
        kc_entry_free(got);
        got = NULL;
    }
    if (!bad) bad |= kc_cache_get(c, kc_entry_key(miss), "v", &got) != KC_MISS;
    kc_entry_free(hit);
    kc_entry_free(miss);
    return bad;
}

/* ---- a stats file that cannot be written (injected) ---- */

static void stats_survive(int err) {
    char *dir;
    kc_cache *c;
    assert_int_equal(kct_open_cache("rostats", &dir, &c), 0);
    kc_entry *e = entry_for(1, "payload");
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_entry_free(e);
    kc_stats s0, s1, s2, s3;
    assert_int_equal(kc_cache_stats(c, &s0), KC_OK);
    assert_int_equal(lookups(c), 0);
    kc_fs_fault_set(KC_FS_OPEN, 1, err, true); /* every stats file refuses the flush */
    assert_int_equal(kc_cache_stats(c, &s1), KC_OK);
    assert_true(kc_fs_fault_count() > 0); /* the flush did try, and failed */
    kc_fs_fault_clear();
    assert_int_equal(s1.v[KC_STAT_HITS], s0.v[KC_STAT_HITS] + 2);
    assert_int_equal(s1.v[KC_STAT_MISSES], s0.v[KC_STAT_MISSES] + 1);
    /* Once the files take writes again, the kept counts are saved, not counted twice. */
    assert_int_equal(kc_cache_stats(c, &s2), KC_OK);
    assert_int_equal(s2.v[KC_STAT_HITS], s1.v[KC_STAT_HITS]);
    assert_int_equal(s2.v[KC_STAT_MISSES], s1.v[KC_STAT_MISSES]);
    kc_cache_close(c);
    c = open_dir(dir, 0);
    assert_non_null(c);
    assert_int_equal(kc_cache_stats(c, &s3), KC_OK);
    assert_int_equal(s3.v[KC_STAT_HITS], s1.v[KC_STAT_HITS]);
    kct_close_cache(dir, c);
}

static void test_stats_kept_on_eacces(void **state) {
    (void)state;
    stats_survive(EACCES);
}

static void test_stats_kept_on_erofs(void **state) {
    (void)state;
    stats_survive(EROFS);
}

/* ---- a put refused by the file system is not a safety refusal ---- */

static void test_put_failure_is_not_eperm(void **state) {
    (void)state;
    char *dir;
    kc_cache *c;
    assert_int_equal(kct_open_cache("roput", &dir, &c), 0);
    int errs[] = {EACCES, EROFS, EPERM};
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
        kc_entry *e = entry_for(10 + (int)i, "payload");
        kc_fs_fault_set(KC_FS_OPEN, 1, errs[i], false); /* the temporary file's creation */
        int rc = kc_cache_put(c, e);
        kc_fs_fault_clear();
        kc_entry_free(e);
        /* The directory itself takes writes: whatever the errno, this is an I/O failure. */
        if (rc != KC_EIO)
            fail_msg("errno %d: put gave %s (%s), expected KC_EIO", errs[i], kc_status_str(rc),
                     kc_error_last()->message);
    }
    kct_close_cache(dir, c);
}

/* ---- KCACHE_READONLY: counts kept in memory ---- */

static void test_readonly_flag_counts(void **state) {
    (void)state;
    char *dir;
    kc_cache *c;
    assert_int_equal(kct_open_cache("roflag", &dir, &c), 0);
    kc_entry *e = entry_for(1, "payload");
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_cache_close(c);
    c = open_dir(dir, KC_OPEN_READONLY);
    assert_non_null(c);
    kc_stats s0, s1;
    assert_int_equal(kc_cache_stats(c, &s0), KC_OK);
    assert_int_equal(lookups(c), 0);
    assert_int_equal(kc_cache_put(c, e), KC_EREADONLY);
    assert_int_equal(kc_cache_stats(c, &s1), KC_OK);
    assert_int_equal(s1.v[KC_STAT_HITS], s0.v[KC_STAT_HITS] + 2);
    assert_int_equal(s1.v[KC_STAT_MISSES], s0.v[KC_STAT_MISSES] + 1);
    kc_entry_free(e);
    kct_close_cache(dir, c);
}

/* ---- a 0500 directory (in a child, as nobody when we are root) ---- */

#define CHECK(cond)                                                                                  \
    do {                                                                                             \
        if (!(cond)) {                                                                               \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    kc_error_last()->message);                                                       \
            return 1;                                                                                \
        }                                                                                            \
    } while (0)

static void chmod_tree(const char *root, mode_t mode) {
    char p[PATH_MAX];
    chmod(root, mode);
    snprintf(p, sizeof p, "%s/v1", root);
    chmod(p, mode);
    snprintf(p, sizeof p, "%s/v1/quarantine", root);
    chmod(p, mode);
    for (int s = 0; s < 256; s++) {
        snprintf(p, sizeof p, "%s/v1/%02x", root, s);
        chmod(p, mode);
    }
}

static int readonly_dir_child(const char *dir, const char *empty) {
    kc_cache *c = open_dir(dir, 0);
    CHECK(c);
    kc_entry *e = entry_for(1, "payload");
    CHECK(e && kc_cache_put(c, e) == KC_OK);
    kc_cache_close(c);
    chmod_tree(dir, 0500);

    c = open_dir(dir, 0);
    CHECK(c);
    CHECK(kc_cache_mode(c) == KC_CACHE_READONLY);
    kc_stats s0, s1, s2;
    CHECK(kc_cache_stats(c, &s0) == KC_OK);
    CHECK(lookups(c) == 0);
    int rc = kc_cache_put(c, e);
    CHECK(rc == KC_EREADONLY);
    CHECK(kc_cache_stats(c, &s1) == KC_OK);
    CHECK(s1.v[KC_STAT_HITS] == s0.v[KC_STAT_HITS] + 2);
    CHECK(s1.v[KC_STAT_MISSES] == s0.v[KC_STAT_MISSES] + 1);
    CHECK(kc_cache_stats(c, &s2) == KC_OK); /* asking again loses nothing */
    CHECK(s2.v[KC_STAT_HITS] == s1.v[KC_STAT_HITS]);
    kc_cache_close(c);

    /* An empty directory that refuses writes opens read-only too: puts are KC_EREADONLY. */
    chmod(empty, 0500);
    c = open_dir(empty, 0);
    CHECK(c);
    CHECK(kc_cache_mode(c) == KC_CACHE_READONLY);
    rc = kc_cache_put(c, e);
    CHECK(rc == KC_EREADONLY);
    kc_cache_close(c);
    kc_entry_free(e);
    return 0;
}

static void test_0500_directory(void **state) {
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0) {
            if (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0 || geteuid() == 0) {
                printf("skip: running as root, where mode 0500 does not stop writes, and cannot become nobody: %s\n",
                       strerror(errno));
                _exit(KC_SKIP_CODE);
            }
        }
        char *dir = kct_tmpdir("ro0500"), *empty = kct_tmpdir("ro0500e");
        if (!dir || !empty) _exit(2);
        int rc = readonly_dir_child(dir, empty);
        chmod_tree(dir, 0700);
        chmod(empty, 0700);
        kct_rmtree(dir);
        kct_rmtree(empty);
        _exit(rc);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == KC_SKIP_CODE) skip();
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_kept_on_eacces),     cmocka_unit_test(test_stats_kept_on_erofs),
        cmocka_unit_test(test_put_failure_is_not_eperm), cmocka_unit_test(test_readonly_flag_counts),
        cmocka_unit_test(test_0500_directory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

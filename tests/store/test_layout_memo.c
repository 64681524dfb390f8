/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_layout_memo.c — the check at open that v1/ holds real folders only, and the memo that
 * vouches for it while v1/ is unchanged ([Note: the layout vouched] in src/store/local_layout.c):
 *   - a settled v1/ is read once, then vouched for: later opens read nothing;
 *   - a shard replaced by a link is refused at open, also when v1/'s mtime is put back (its ctime
 *     moves), and a v1/ changed within the settle window is read at every open until it settles;
 *   - a memo of an older v1/ is removed when a new one is written; no toolkits/, no memo; no memo
 *     for a read-only handle or a cache that allows an unsafe directory; a FIFO in the memo's place
 *     is not trusted, and is replaced;
 *   - on a file system whose stamps the memo does not trust (not a local one), every open reads.
 * The settle window is shortened to 50 ms, and the tests wait for a file written after v1/'s
 * change to carry a time past it (what the window asks), never for a fixed time; where a change
 * must stay within the window, the window is an hour.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>

#include "common/internal.h"
#include "helpers.h"
#include "kcache.h"
#include "store/local_impl.h"

static char *dir;
KCT_TMPDIR_FIXTURE(dir, "layout")

#define SETTLE_NS 50000000LL

static int64_t ns_of(struct timespec t) { return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec; }

/* Wait until a file written now carries a time past v1/'s mtime and ctime plus the window. */
static void wait_settled(const char *root) {
    char v1[700], probe[700];
    snprintf(v1, sizeof v1, "%s/v1", root);
    snprintf(probe, sizeof probe, "%s/probe", dir);
    struct stat vs, ps;
    assert_int_equal(lstat(v1, &vs), 0);
    int64_t changed = ns_of(vs.st_mtim) > ns_of(vs.st_ctim) ? ns_of(vs.st_mtim) : ns_of(vs.st_ctim);
    for (;;) {
        FILE *f = fopen(probe, "w");
        assert_non_null(f);
        fclose(f);
        assert_int_equal(lstat(probe, &ps), 0);
        if (ns_of(ps.st_mtim) > changed + SETTLE_NS) return;
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/* Open the cache at root for writing: its status, and the reads of v1/ it took in *reads. */
static int open_counted(const char *root, int *reads) {
    int before = kc_local_layout_reads_();
    kc_local *l = NULL;
    int rc = kc_local_open(&l, root, 0, 0);
    *reads = kc_local_layout_reads_() - before;
    kc_local_free(l);
    char p[700];
    snprintf(p, sizeof p, "%s/v1/toolkits", root);
    assert_int_equal(kct_count_files(p, "layout1.tmp-"), 0); /* no probe left, whatever the open found */
    return rc;
}

static size_t memos(const char *root) {
    char p[700];
    snprintf(p, sizeof p, "%s/v1/toolkits", root);
    return kct_count_files(p, "layout1-");
}

/* Whether this file system gets memos at all ([Note: the layout vouched]: local ones only); where it
 * does not, every open reads v1/, which the tests check instead, and say so. */
static int trusted(void) {
    int t = kc_local_layout_fs_(dir);
    if (!t) print_message("note: %s is not a local file system: the memo is not exercised here\n", dir);
    return t;
}

/* A cache with toolkits/ (made by its first compile in real life) and a file v1/sp (which a test
 * makes a folder of the same name), settled. */
static void make_cache(const char *root) {
    kc_local *l;
    assert_int_equal(kc_local_open(&l, root, 0, 0), KC_OK);
    kc_local_free(l);
    char p[700];
    snprintf(p, sizeof p, "%s/v1/toolkits", root);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/v1/sp", root);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
    wait_settled(root);
}

static void test_vouched_once_read(void **state) {
    (void)state;
    kc_local_layout_settle_set_(SETTLE_NS);
    char root[600];
    snprintf(root, sizeof root, "%s/c", dir);
    make_cache(root);
    int reads;
    assert_int_equal(open_counted(root, &reads), KC_OK);
    assert_int_equal(reads, 1);
    assert_int_equal(memos(root), trusted() ? 1 : 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(open_counted(root, &reads), KC_OK);
        assert_int_equal(reads, trusted() ? 0 : 1); /* vouched: v1/ is as it was read */
    }
    /* A read-only handle and one that allows an unsafe directory neither read nor write a memo. */
    kc_local *l;
    int before = kc_local_layout_reads_();
    assert_int_equal(kc_local_open(&l, root, 0, KC_OPEN_READONLY), KC_OK);
    kc_local_free(l);
    assert_int_equal(kc_local_layout_reads_() - before, 0); /* a reader reads nothing here */
    before = kc_local_layout_reads_();
    assert_int_equal(kc_local_open(&l, root, 0, KC_OPEN_ALLOW_UNSAFE_DIR), KC_OK);
    kc_local_free(l);
    assert_int_equal(kc_local_layout_reads_() - before, 1); /* others may write it: read every time */
    assert_int_equal(memos(root), trusted() ? 1 : 0);
    /* toolkits/ writable by the group: the memo there is not believed (nor rewritten there). */
    char tk[700];
    snprintf(tk, sizeof tk, "%s/v1/toolkits", root);
    assert_int_equal(chmod(tk, 0770), 0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(open_counted(root, &reads), KC_OK);
        assert_int_equal(reads, 1);
    }
    assert_int_equal(chmod(tk, 0700), 0);
    assert_int_equal(open_counted(root, &reads), KC_OK);
    assert_int_equal(reads, trusted() ? 0 : 1);
    kc_local_layout_settle_set_(-1);
}

static void test_link_refused_and_window(void **state) {
    (void)state;
    kc_local_layout_settle_set_(SETTLE_NS);
    char root[600], shard[700], elsewhere[700], v1[700];
    snprintf(root, sizeof root, "%s/c", dir);
    snprintf(v1, sizeof v1, "%s/v1", root);
    snprintf(shard, sizeof shard, "%s/v1/5e", root);
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", dir);
    assert_int_equal(mkdir(elsewhere, 0700), 0);
    char spare[700];
    snprintf(spare, sizeof spare, "%s/v1/sp", root);
    make_cache(root);
    int reads;
    assert_int_equal(open_counted(root, &reads), KC_OK); /* the memo of v1/ as it is */
    assert_int_equal(memos(root), trusted() ? 1 : 0);    /* there: the stale memo below is a real one */
    struct stat old;
    assert_int_equal(lstat(v1, &old), 0);
    /* A link in a shard's place, the file "sp" made a folder (v1/'s entries, names and link count as
     * they were), and v1/'s mtime put back: only its ctime moved. */
    assert_int_equal(rmdir(shard), 0);
    assert_int_equal(symlink(elsewhere, shard), 0);
    assert_int_equal(unlink(spare), 0);
    assert_int_equal(mkdir(spare, 0700), 0);
    struct timespec back[2] = {old.st_atim, old.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, v1, back, AT_SYMLINK_NOFOLLOW), 0);
    struct stat now;
    assert_int_equal(lstat(v1, &now), 0);
    if (now.st_nlink != old.st_nlink || now.st_size != old.st_size) /* some file system counts otherwise */
        print_message("note: v1/'s link count or size moved too: ctime is not the only change here\n");
    assert_int_equal(open_counted(root, &reads), KC_EIO);
    assert_int_equal(reads, 1);
    assert_non_null(strstr(kc_error_last()->message, "symbolic link"));
    wait_settled(root); /* refused again and again, settled or not: a refusal vouches for nothing */
    for (int i = 0; i < 2; i++) {
        assert_int_equal(open_counted(root, &reads), KC_EIO);
        assert_int_equal(reads, 1);
    }
    /* Put right within the window (an hour long here, so that no delay of this machine ends it):
     * read, not vouched, and read again at the next open. */
    assert_int_equal(unlink(shard), 0);
    assert_int_equal(mkdir(shard, 0700), 0);
    kc_local_layout_settle_set_(3600 * 1000000000LL);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(open_counted(root, &reads), KC_OK);
        assert_int_equal(reads, 1);
    }
    /* Settled: read once more, vouched from then on, and the older memo gone. */
    kc_local_layout_settle_set_(SETTLE_NS);
    wait_settled(root);
    assert_int_equal(open_counted(root, &reads), KC_OK);
    assert_int_equal(reads, 1);
    assert_int_equal(memos(root), trusted() ? 1 : 0);
    assert_int_equal(open_counted(root, &reads), KC_OK);
    assert_int_equal(reads, trusted() ? 0 : 1);
    kc_local_layout_settle_set_(-1);
}

/* v1/'s mtime put back an hour and more while its ctime is now: still too new to vouch for. */
static void test_ctime_decides(void **state) {
    (void)state;
    kc_local_layout_settle_set_(3600 * 1000000000LL);
    char root[600], v1[700];
    snprintf(root, sizeof root, "%s/c", dir);
    snprintf(v1, sizeof v1, "%s/v1", root);
    make_cache(root);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= 86400;
    t[1] = t[0];
    assert_int_equal(utimensat(AT_FDCWD, v1, t, AT_SYMLINK_NOFOLLOW), 0);
    int reads;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(open_counted(root, &reads), KC_OK);
        assert_int_equal(reads, 1);
    }
    assert_int_equal(memos(root), 0);
    kc_local_layout_settle_set_(-1);
}

/* A FIFO where the memo goes: not trusted (the memo is never opened, only its stat read), and a file
 * replaces it. */
static void test_memo_not_a_file(void **state) {
    (void)state;
    kc_local_layout_settle_set_(SETTLE_NS);
    char root[600], p[800];
    snprintf(root, sizeof root, "%s/c", dir);
    make_cache(root);
    int reads;
    assert_int_equal(open_counted(root, &reads), KC_OK);
    if (!trusted()) {
        kc_local_layout_settle_set_(-1);
        skip();
    }
    snprintf(p, sizeof p, "%s/v1/toolkits", root);
    DIR *d = opendir(p);
    assert_non_null(d);
    char memo[800] = "";
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (!strncmp(de->d_name, "layout1-", 8)) snprintf(memo, sizeof memo, "%s/%s", p, de->d_name);
    closedir(d);
    assert_int_equal(unlink(memo), 0);
    assert_int_equal(mkfifo(memo, 0600), 0);
    assert_int_equal(open_counted(root, &reads), KC_OK);
    assert_int_equal(reads, 1);
    struct stat st;
    assert_int_equal(lstat(memo, &st), 0);
    assert_true(S_ISREG(st.st_mode)); /* renamed over the FIFO */
    assert_int_equal(open_counted(root, &reads), KC_OK);
    assert_int_equal(reads, 0);
    kc_local_layout_settle_set_(-1);
}

static void test_no_toolkits_no_memo(void **state) {
    (void)state;
    kc_local_layout_settle_set_(SETTLE_NS);
    char root[600], p[700];
    snprintf(root, sizeof root, "%s/c", dir);
    kc_local *l;
    assert_int_equal(kc_local_open(&l, root, 0, 0), KC_OK);
    kc_local_free(l);
    wait_settled(root);
    int reads;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(open_counted(root, &reads), KC_OK);
        assert_int_equal(reads, 1);
    }
    snprintf(p, sizeof p, "%s/v1/toolkits", root);
    struct stat st;
    assert_int_equal(lstat(p, &st), -1); /* not made here: making it would change v1/ */
    kc_local_layout_settle_set_(-1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_vouched_once_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_link_refused_and_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_toolkits_no_memo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ctime_decides, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memo_not_a_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

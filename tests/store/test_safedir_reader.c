/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_safedir_reader.c — [Note: a reader of another's cache] (src/store/safedir.c): a process that
 * only reads accepts a cache another user owns when no one but that owner can write it (the
 * directory, its parents, v1/ and the folders in it); a writer keeps the rule that the directory is
 * its own, and its refusal says how to read such a cache.  Another ordinary user's cache is read only
 * when asked (not merely because it refuses writes), and never under a folder others can write; an
 * entry file others could have written is a miss.  And KC_OPEN_INSPECT (kcache/cache.h):
 * a directory that does not exist is not made, parents included; KC_OPEN_DISABLE hides nothing from
 * kc_cache_stats and kc_cache_foreach.
 *
 * The other-owner cases need root (chown); as another user they are skipped and say so.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "kcache.h"
#include "helpers.h"
#include "store/local.h"
#include "store/local_impl.h" /* kc_local_dir_check_ */

#define NOBODY 65534

static char *dir;
KCT_TMPDIR_FIXTURE(dir, "safedir-reader")

/* kc_local_open of `path` with `flags`: KC_OK, or `want` with `why` in the message. */
static void expect_open(const char *path, unsigned flags, int want, const char *why) {
    kc_local *l = NULL;
    int rc = kc_local_open(&l, path, 0, flags);
    if (rc != want)
        fail_msg("'%s' flags %#x: %s, not %s: %s", path, flags, kc_status_str(rc), kc_status_str(want),
                 kc_error_last()->message);
    if (why && !strstr(kc_error_last()->message, why))
        fail_msg("'%s': '%s' lacks '%s'", path, kc_error_last()->message, why);
    kc_local_free(l);
}

/* A folder for another user's cache: not under /tmp, whose sticky, world-writable folder refuses it to a
 * reader ([Note: a reader of another's cache]); root's / (or the working directory) instead, 0755. */
static char *private_base(void) {
    char t[PATH_MAX] = "/kctest-safedir-reader-XXXXXX";
    char *d = mkdtemp(t);
    if (!d) {
        char cwd[PATH_MAX - 64];
        assert_non_null(getcwd(cwd, sizeof cwd));
        snprintf(t, sizeof t, "%s/kctest-safedir-reader-XXXXXX", cwd);
        d = mkdtemp(t);
    }
    assert_non_null(d);
    assert_int_equal(chmod(d, 0755), 0);
    return strdup(d);
}

/* A cache as an image's build leaves it: made (v1/ and its shards) by us, then given to `owner`, 0755. */
static void make_cache(const char *path, uid_t owner) {
    kc_local *l = NULL;
    assert_int_equal(kc_local_open(&l, path, 0, 0), KC_OK);
    assert_int_equal(kc_local_put(l, "00112233445566778899aabbccddeeff.sm_90", "entry", 5), KC_OK);
    kc_local_free(l);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "chmod -R a+rX,go-w '%s' && chown -R %u '%s'", path, (unsigned)owner, path);
    assert_int_equal(system(cmd), 0);
}

static void test_reader_accepts_anothers_cache(void **state) {
    (void)state;
    if (geteuid() != 0) {
        fprintf(stderr, "not root: another user's cache needs chown; the cases were not run\n");
        return;
    }
    char *base = private_base();
    char p[512], v1[600], shard[600], parent[512];
    snprintf(parent, sizeof parent, "%s/opt", base);
    assert_int_equal(mkdir(parent, 0755), 0);
    snprintf(p, sizeof p, "%s/opt/cache", base);
    make_cache(p, NOBODY);
    /* A reader: accepted.  A writer (root writes anywhere, so it is one without KC_OPEN_READONLY): refused,
     * told how to read it. */
    expect_open(p, KC_OPEN_READONLY, KC_OK, NULL);
    expect_open(p, 0, KC_EPERM, "owned by uid 65534, not by us");
    expect_open(p, 0, KC_EPERM, "KCACHE_READONLY=1");
    /* A parent owned by the cache's owner: as trusted as the cache (the owner can write it already). */
    assert_int_equal(chown(parent, NOBODY, NOBODY), 0);
    expect_open(p, KC_OPEN_READONLY, KC_OK, NULL);
    assert_int_equal(chown(parent, 12345, 12345), 0); /* a third user's: refused */
    expect_open(p, KC_OPEN_READONLY, KC_EPERM, "owned by uid 12345");
    assert_int_equal(chown(parent, 0, 0), 0);
    /* Writable by others: the directory, v1/, a shard. */
    assert_int_equal(chmod(p, 0775), 0);
    expect_open(p, KC_OPEN_READONLY, KC_EPERM, "writable by group or others");
    expect_open(p, KC_OPEN_READONLY, KC_EPERM, "go-w");
    assert_int_equal(chmod(p, 0755), 0);
    snprintf(v1, sizeof v1, "%s/v1", p);
    assert_int_equal(chmod(v1, 0757), 0);
    expect_open(p, KC_OPEN_READONLY, KC_EPERM, "in the cache is writable by group or others");
    assert_int_equal(chmod(v1, 0755), 0);
    snprintf(shard, sizeof shard, "%s/v1/00", p);
    assert_int_equal(chmod(shard, 0775), 0);
    expect_open(p, KC_OPEN_READONLY, KC_EPERM, "v1/00' in the cache is writable");
    assert_int_equal(chmod(shard, 0755), 0);
    /* A folder inside owned by a third user; a link in a shard's place. */
    assert_int_equal(chown(shard, 12345, 12345), 0);
    expect_open(p, KC_OPEN_READONLY, KC_EPERM, "owned by uid 12345, neither the cache's owner");
    assert_int_equal(chown(shard, NOBODY, NOBODY), 0);
    char moved[700];
    snprintf(moved, sizeof moved, "%s/elsewhere", base);
    assert_int_equal(rename(shard, moved), 0);
    assert_int_equal(symlink(moved, shard), 0);
    expect_open(p, KC_OPEN_READONLY, KC_EPERM, "not a real folder");
    assert_int_equal(unlink(shard), 0);
    assert_int_equal(rename(moved, shard), 0);
    expect_open(p, KC_OPEN_READONLY, KC_OK, NULL);
    /* Our own cache keeps today's rules for a reader too (a group-writable one of ours is refused). */
    char own[512];
    snprintf(own, sizeof own, "%s/own", base);
    make_cache(own, 0);
    assert_int_equal(chmod(own, 0770), 0);
    expect_open(own, KC_OPEN_READONLY, KC_EPERM, "KCACHE_ALLOW_UNSAFE_DIR");
    kct_rmtree(base);
    free(base);
}

/* Who reads, and where: a reader only because the directory refuses it writes accepts root's cache,
 * not another ordinary user's (it did not ask to trust them); one that asked does; under a folder
 * others can write (sticky or not), another user's cache is refused to every reader, ours is not.
 * An entry file others could have written is a miss to a reader of another's cache. */
static void test_reader_who_and_where(void **state) {
    (void)state;
    if (geteuid() != 0) {
        fprintf(stderr, "not root: another user's cache needs chown; the cases were not run\n");
        return;
    }
    char *base = private_base();
    char p[512], sticky[512], q[600], own[600], entry[1200];
    snprintf(p, sizeof p, "%s/c", base);
    make_cache(p, 12345);
    expect_open(p, KC_OPEN_READONLY, KC_OK, NULL);
    assert_int_equal(kc_local_dir_check_(p, KC_DIR_READER), KC_OK);
    assert_int_equal(kc_local_dir_check_(p, KC_DIR_FOUND_READER), KC_EPERM);
    assert_non_null(strstr(kc_error_last()->message, "KCACHE_READONLY=1"));
    assert_int_equal(kc_local_dir_check_(p, KC_DIR_WRITER), KC_EPERM);
    /* Entry files of another's cache: writable by others, or a third user's, is a miss (unusable). */
    const char *name = "00112233445566778899aabbccddeeff.sm_90";
    kc_local *l = NULL;
    assert_int_equal(kc_local_open(&l, p, 0, KC_OPEN_READONLY), KC_OK);
    kc_local_path(l, name, entry, sizeof entry);
    void *data = NULL;
    size_t len = 0;
    assert_int_equal(kc_local_get(l, name, &data, &len), KC_OK);
    free(data);
    assert_int_equal(chmod(entry, 0666), 0);
    assert_int_equal(kc_local_get(l, name, &data, &len), KC_ECORRUPT);
    assert_null(data);
    assert_non_null(strstr(kc_error_last()->message, "writable by group or others"));
    assert_int_equal(chmod(entry, 0644), 0);
    assert_int_equal(chown(entry, 4242, 4242), 0);
    assert_int_equal(kc_local_get(l, name, &data, &len), KC_ECORRUPT);
    assert_int_equal(chown(entry, 0, 0), 0); /* root's: fine */
    assert_int_equal(kc_local_get(l, name, &data, &len), KC_OK);
    free(data);
    kc_local_free(l);
    /* Under a sticky, world-writable folder (/tmp's kind). */
    snprintf(sticky, sizeof sticky, "%s/tmp", base);
    assert_int_equal(mkdir(sticky, 0755), 0);
    assert_int_equal(chmod(sticky, 01777), 0);
    snprintf(q, sizeof q, "%s/theirs", sticky);
    make_cache(q, 12345);
    expect_open(q, KC_OPEN_READONLY, KC_EPERM, "sticky or not");
    snprintf(own, sizeof own, "%s/ours", sticky);
    make_cache(own, 0);
    expect_open(own, 0, KC_OK, NULL);
    expect_open(own, KC_OPEN_READONLY, KC_OK, NULL);
    kct_rmtree(base);
    free(base);
}

/* An inspection of a directory that does not exist makes nothing, parents included, and sees an empty cache. */
static void test_inspect_makes_nothing(void **state) {
    (void)state;
    char p[512], top[512];
    snprintf(top, sizeof top, "%s/nonexistent", dir);
    snprintf(p, sizeof p, "%s/nonexistent/x", dir);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = p;
    o.flags = KC_OPEN_NO_ENV | KC_OPEN_INSPECT;
    kc_cache *c = NULL;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    assert_int_equal(kc_cache_mode(c), KC_CACHE_READONLY);
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_ENTRIES], 0);
    kc_cache_close(c);
    struct stat sb;
    assert_int_not_equal(lstat(top, &sb), 0);
}

static int count_item(const kc_cache_item *it, void *ctx) {
    (void)it;
    ++*(int *)ctx;
    return 0;
}

/* KC_OPEN_DISABLE with KC_OPEN_INSPECT: lookups miss, the directory is reported as it is. */
static void test_disable_hides_nothing_from_inspection(void **state) {
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s/cache", dir);
    kc_local *l = NULL;
    assert_int_equal(kc_local_open(&l, p, 0, 0), KC_OK);
    assert_int_equal(kc_local_put(l, "00112233445566778899aabbccddeeff.sm_90", "entry", 5), KC_OK);
    assert_int_equal(kc_local_put(l, "10112233445566778899aabbccddeeff.sm_90", "entry", 5), KC_OK);
    kc_local_free(l);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = p;
    o.flags = KC_OPEN_NO_ENV | KC_OPEN_DISABLE | KC_OPEN_INSPECT;
    kc_cache *c = NULL;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    assert_int_equal(kc_cache_mode(c), KC_CACHE_DISABLED);
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_ENTRIES], 2);
    int n = 0;
    assert_int_equal(kc_cache_foreach(c, count_item, &n), KC_OK);
    assert_int_equal(n, 2);
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, "00112233445566778899aabbccddeeff"), KC_OK);
    kc_entry *e = NULL;
    assert_int_equal(kc_cache_get(c, &k, "sm_90", &e), KC_MISS); /* a lookup: disabled */
    kc_cache_close(c);
    o.flags = KC_OPEN_NO_ENV | KC_OPEN_DISABLE; /* without KC_OPEN_INSPECT: as before, an empty cache */
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_ENTRIES], 0);
    kc_cache_close(c);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_reader_accepts_anothers_cache),
        T(test_reader_who_and_where),
        T(test_inspect_makes_nothing),
        T(test_disable_hides_nothing_from_inspection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gc_refs.c — gc over two levels (store/local_gc.c; [Note: two levels] in kcache/entry.h):
 * orphan images are swept and referenced ones kept (by a graph entry or by a unit record alone),
 * a just-written orphan is spared for the grace period, graph entries and unit records whose
 * image is gone are removed, objects of an older format are removed as stale (never
 * quarantined), undecodable ones are left for verify, LRU eviction under a size limit leaves no
 * graph pointing at nothing after an explicit gc while the automatic cleanup stays LRU only,
 * and the shard counters stay exact through all of it.
 */
#include "kcache.h"
#include "helpers.h"

#include <dirent.h>

#include "common/fs.h"
#include "store/two_level.h"

#define HOURS(n) ((long)(n)*3600)

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("gcrefs", &dir, &cache) == KC_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

/* An old cache: everything two hours old, as if written in an earlier session. */
static void age_all(const kc_key *keys, const char *const *variants, size_t n) {
    for (size_t i = 0; i < n; i++) tl_age(dir, &keys[i], variants[i], HOURS(2));
}

static void test_gc_removes_orphans_keeps_referenced(void **state) {
    (void)state;
    kc_image_ref a, b, u;
    tl_image(cache, 1, 3000, "sm_90", &a); /* a graph's */
    tl_image(cache, 2, 3000, "sm_90", &b); /* nobody's */
    tl_image(cache, 3, 3000, "sm_90", &u); /* only a unit record's */
    kc_key g = kct_key("graph", 1), unit = kct_key("unit", 1);
    tl_graph(cache, &g, &a, 1);
    tl_unit(cache, &unit, &u);
    kc_key keys[] = {a.id, b.id, u.id, g, unit};
    const char *vars[] = {"img", "img", "img", "sm_90", "unit"};
    age_all(keys, vars, 5);
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(cache, 0, &r), KC_OK);
    assert_int_equal(r.entries_before, 5);
    assert_int_equal(r.orphans_removed, 1);
    assert_int_equal(r.dangling_removed, 0);
    assert_int_equal(r.stale_removed, 0);
    assert_int_equal(r.evicted, 0);
    assert_int_equal(r.entries_after, 4);
    assert_false(tl_exists(dir, &b.id, "img"));
    assert_true(tl_exists(dir, &a.id, "img"));
    assert_true(tl_exists(dir, &u.id, "img")); /* a unit record's image is kept: a new shape compiles nothing */
    assert_true(tl_exists(dir, &g, "sm_90"));
    assert_true(tl_exists(dir, &unit, "unit"));
    tl_assert_counts_exact(cache, dir);
    /* The graph is still whole: its image reads back. */
    kc_entry *e;
    assert_int_equal(kc_cache_get(cache, &a.id, "img", &e), KC_OK);
    assert_int_equal(kc_image_entry_read(e, &a, 1, NULL, NULL, NULL), KC_OK);
    kc_entry_free(e);
}

/* A writer stores image -> unit record -> graph entry: an image written a moment ago, whose
 * referrers are not written yet, is no orphan; once past the grace period it is. */
static void test_gc_spares_a_fresh_orphan(void **state) {
    (void)state;
    kc_image_ref a;
    tl_image(cache, 4, 2000, "sm_90", &a);
    tl_age(dir, &a.id, "img", 60); /* a minute old: its unit's record may be on its way */
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(cache, 0, &r), KC_OK);
    assert_int_equal(r.orphans_removed, 0);
    assert_true(tl_exists(dir, &a.id, "img"));
    tl_age(dir, &a.id, "img", HOURS(2));
    assert_int_equal(kc_cache_gc(cache, 0, &r), KC_OK);
    assert_int_equal(r.orphans_removed, 1);
    assert_false(tl_exists(dir, &a.id, "img"));
    tl_assert_counts_exact(cache, dir);
}

static void test_gc_removes_dangling_entries(void **state) {
    (void)state;
    kc_image_ref two[2], other;
    tl_image(cache, 5, 2500, "sm_90", &two[0]);
    tl_image(cache, 6, 2500, "sm_90", &two[1]);
    tl_image(cache, 7, 2500, "sm_90", &other);
    kc_key g = kct_key("graph", 2), whole = kct_key("graph", 3), u1 = kct_key("unit", 2), u2 = kct_key("unit", 3);
    tl_unit(cache, &u1, &two[1]);
    tl_unit(cache, &u2, &other);
    tl_graph(cache, &g, two, 2);
    tl_graph(cache, &whole, &other, 1);
    /* Image two[1] is deleted by hand (or lost): its graph and its unit record point at nothing. */
    char p[1024];
    tl_path(dir, &two[1].id, "img", p, sizeof p);
    assert_int_equal(unlink(p), 0);
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(cache, 0, &r), KC_OK);
    assert_int_equal(r.dangling_removed, 2);
    assert_false(tl_exists(dir, &g, "sm_90"));
    assert_false(tl_exists(dir, &u1, "unit"));
    assert_true(tl_exists(dir, &whole, "sm_90")); /* whole graphs and records stay */
    assert_true(tl_exists(dir, &u2, "unit"));
    assert_true(tl_exists(dir, &other.id, "img"));
    tl_assert_counts_exact(cache, dir);
    /* The dangling graph's other image is nobody's now: the next gc past the grace takes it. */
    tl_age(dir, &two[0].id, "img", HOURS(2));
    tl_age(dir, &other.id, "img", HOURS(2));
    assert_int_equal(kc_cache_gc(cache, 0, &r), KC_OK);
    assert_int_equal(r.orphans_removed, 1);
    assert_false(tl_exists(dir, &two[0].id, "img"));
    assert_true(tl_exists(dir, &other.id, "img"));
    tl_assert_counts_exact(cache, dir);
}

static size_t quarantined(void) {
    char q[1024];
    snprintf(q, sizeof q, "%s/v1/quarantine", dir);
    DIR *d = opendir(q);
    size_t n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) n += de->d_name[0] != '.';
    if (d) closedir(d);
    return n;
}

/* An older cache's objects (format v2) are stale: removed and counted as such, never quarantined
 * as corrupt — a graph entry and an image alike.  An undecodable object is left for verify. */
static void test_gc_removes_stale_leaves_corrupt(void **state) {
    (void)state;
    kc_key old_graph = kct_key("old graph", 1), old_image = kct_key("old image", 1), junk = kct_key("junk", 1);
    tl_write_v2(dir, &old_graph, "sm_90");
    tl_write_v2(dir, &old_image, "img");
    char p[1024];
    tl_path(dir, &junk, "sm_90", p, sizeof p);
    assert_int_equal(
        kct_write(p,
                  "not an entry at all, not even its header................................................"
                  "...............",
                  100),
        0);
    kc_image_ref a;
    tl_image(cache, 8, 1000, "sm_90", &a);
    kc_key g = kct_key("graph", 4);
    tl_graph(cache, &g, &a, 1);
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(cache, 0, &r), KC_OK);
    assert_int_equal(r.stale_removed, 2);
    assert_int_equal(r.corrupt, 1);
    assert_int_equal(r.dangling_removed + r.orphans_removed, 0);
    assert_false(tl_exists(dir, &old_graph, "sm_90"));
    assert_false(tl_exists(dir, &old_image, "img"));
    assert_true(tl_exists(dir, &junk, "sm_90")); /* verify or a read quarantines it, not gc */
    assert_true(tl_exists(dir, &g, "sm_90"));
    assert_true(tl_exists(dir, &a.id, "img"));
    assert_int_equal(quarantined(), 0);
    kc_stats s;
    assert_int_equal(kc_cache_stats(cache, &s), KC_OK);
    assert_int_equal(s.v[KC_STAT_CORRUPT], 0);
    tl_assert_counts_exact(cache, dir);
}

/* LRU under a size limit: images are LRU items like graph entries.  An explicit gc that evicts
 * an image also removes the graphs that refer to it (no graph left pointing at nothing); the
 * graphs used since stay whole. */
static void test_gc_lru_under_a_limit(void **state) {
    (void)state;
    enum { N = 6 };
    kc_image_ref img[N];
    kc_key g[N], u[N];
    for (int i = 0; i < N; i++) {
        tl_image(cache, 20 + i, 4000, "sm_90", &img[i]);
        g[i] = kct_key("lru graph", i);
        u[i] = kct_key("lru unit", i);
        tl_unit(cache, &u[i], &img[i]);
        tl_graph(cache, &g[i], &img[i], 1);
        /* Graph i was used 60 - i minutes ago; its image and unit record with it... */
        tl_age(dir, &img[i].id, "img", 3600 - i * 60);
        tl_age(dir, &u[i], "unit", 3600 - i * 60);
        tl_age(dir, &g[i], "sm_90", 3600 - i * 60 - 1);
    }
    /* ...except image 1, unused longer than any graph (its graph's hit did not refresh it). */
    tl_age(dir, &img[1].id, "img", HOURS(5));
    uint64_t files, bytes;
    tl_count(dir, &files, &bytes);
    uint64_t img_bytes = 0;
    {
        char p[1024];
        struct stat st;
        tl_path(dir, &img[1].id, "img", p, sizeof p);
        assert_int_equal(stat(p, &st), 0);
        img_bytes = (uint64_t)st.st_size;
    }
    kc_gc_report r = KC_GC_REPORT_INIT;
    /* A limit that evicts image 1 alone (the least recently used) and nothing after it. */
    assert_int_equal(kc_cache_gc(cache, bytes - img_bytes, &r), KC_OK);
    assert_int_equal(r.evicted, 1);
    assert_false(tl_exists(dir, &img[1].id, "img"));
    assert_false(tl_exists(dir, &g[1], "sm_90")); /* dangling after the eviction: removed */
    assert_false(tl_exists(dir, &u[1], "unit"));
    assert_int_equal(r.dangling_removed, 2);
    for (int i = 0; i < N; i++)
        if (i != 1) assert_true(tl_exists(dir, &g[i], "sm_90") && tl_exists(dir, &img[i].id, "img"));
    assert_true(r.bytes_after <= bytes - img_bytes);
    tl_assert_counts_exact(cache, dir);
    /* Half the size: the least recently used graphs go, with their images and records. */
    tl_count(dir, &files, &bytes);
    assert_int_equal(kc_cache_gc(cache, bytes / 2, &r), KC_OK);
    assert_true(r.bytes_after <= bytes / 2);
    assert_true(r.evicted > 0);
    assert_true(tl_exists(dir, &g[N - 1], "sm_90") && tl_exists(dir, &img[N - 1].id, "img"));
    assert_false(tl_exists(dir, &g[0], "sm_90"));
    for (int i = 0; i < N; i++) /* never a graph without its image, nor a record without its image */
        if (i != 1) {
            assert_true(!tl_exists(dir, &g[i], "sm_90") || tl_exists(dir, &img[i].id, "img"));
            assert_true(!tl_exists(dir, &u[i], "unit") || tl_exists(dir, &img[i].id, "img"));
        }
    tl_assert_counts_exact(cache, dir);
}

/* The automatic cleanup after a put is LRU only (it reads no object): it may leave a graph whose
 * image it evicted — a miss, noticed at the next lookup — and an explicit gc then removes it. */
static void test_automatic_cleanup_is_lru_only(void **state) {
    (void)state;
    kct_close_cache(dir, cache);
    dir = kct_tmpdir("gcauto");
    assert_non_null(dir);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    o.max_size = 60000;
    assert_int_equal(kc_cache_open(&cache, &o), KC_OK);
    kc_image_ref a;
    tl_image(cache, 40, 20000, "sm_90", &a); /* big: evicting it alone takes the cache well under the limit */
    kc_key g = kct_key("auto graph", 1);
    tl_graph(cache, &g, &a, 1);
    tl_age(dir, &a.id, "img", HOURS(3)); /* the least recently used of all */
    tl_age(dir, &g, "sm_90", HOURS(2));
    kc_key old = kct_key("auto old", 1);
    tl_write_v2(dir, &old, "sm_90"); /* recent, small: LRU keeps it, only a sweep would take it */
    for (int i = 0; i < 30 && tl_exists(dir, &a.id, "img"); i++) {
        kc_image_ref x;
        tl_image(cache, 41 + i, 5000, "sm_90", &x); /* young orphans: the fill that triggers the cleanup */
    }
    assert_false(tl_exists(dir, &a.id, "img")); /* evicted by the automatic cleanup */
    assert_true(tl_exists(dir, &g, "sm_90"));   /* left dangling: no mark-and-sweep after a put */
    assert_true(tl_exists(dir, &old, "sm_90"));
    kc_entry *e;
    assert_int_equal(kc_cache_get(cache, &a.id, "img", &e), KC_MISS); /* a miss, not an error */
    kc_gc_report r = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(cache, 0, &r), KC_OK);
    assert_false(tl_exists(dir, &g, "sm_90"));
    assert_false(tl_exists(dir, &old, "sm_90"));
    assert_int_equal(r.dangling_removed, 1);
    assert_int_equal(r.stale_removed, 1);
    assert_int_equal(r.orphans_removed, 0); /* the young ones are spared */
    tl_assert_counts_exact(cache, dir);
}

/* A gc that cannot read a referrer (an injected read fault) sweeps no orphan: the images it
 * refers to would look unreferenced. */
static void test_unreadable_referrer_sweeps_no_orphan(void **state) {
    (void)state;
    kc_image_ref a, b;
    tl_image(cache, 50, 1500, "sm_90", &a);
    tl_image(cache, 51, 1500, "sm_90", &b);
    /* A graph key in a shard before both images': gc reads it first, so the first read fails. */
    uint8_t first = a.id.bytes[0] < b.id.bytes[0] ? a.id.bytes[0] : b.id.bytes[0];
    assert_true(first > 0);
    kc_key g;
    for (int i = 0;; i++)
        if ((g = kct_key("graph", 1000 + i)).bytes[0] < first) break;
    tl_graph(cache, &g, &a, 1);
    kc_key keys[] = {a.id, b.id, g};
    const char *vars[] = {"img", "img", "sm_90"};
    age_all(keys, vars, 3);
    kc_fs_fault_set(KC_FS_READ, 1, EIO, false); /* the graph entry's read fails; the images' headers read */
    kc_gc_report r = KC_GC_REPORT_INIT;
    int rc = kc_cache_gc(cache, 0, &r);
    kc_fs_fault_clear();
    assert_int_equal(rc, KC_OK);
    assert_int_equal(r.orphans_removed + r.dangling_removed + r.stale_removed, 0);
    assert_true(tl_exists(dir, &a.id, "img") && tl_exists(dir, &b.id, "img") && tl_exists(dir, &g, "sm_90"));
    assert_int_equal(kc_cache_gc(cache, 0, &r), KC_OK); /* readable again: b is an orphan */
    assert_int_equal(r.orphans_removed, 1);
    assert_false(tl_exists(dir, &b.id, "img"));
    assert_true(tl_exists(dir, &a.id, "img"));
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_gc_removes_orphans_keeps_referenced),
        T(test_gc_spares_a_fresh_orphan),
        T(test_gc_removes_dangling_entries),
        T(test_gc_removes_stale_leaves_corrupt),
        T(test_gc_lru_under_a_limit),
        T(test_automatic_cleanup_is_lru_only),
        T(test_unreadable_referrer_sweeps_no_orphan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

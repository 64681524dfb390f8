/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_faults.c — injected faults at the cache's boundaries, for every operation that
 * touches the disk: put, get, gc, import, prewarm and compile (kc_graph_compile, the path
 * a runtime takes on a miss).
 *
 * For each operation, each file-system call that can fail (open, write, fsync, rename,
 * unlink, read) fails with EIO, ENOSPC, EACCES and EROFS at its Nth call, N = 1, 2, … until
 * the operation completes with no fault injected — once as a single failure, once failing
 * every call from N on; then the Nth allocation fails, the same two ways.  After each run,
 * with the faults off: the operation either succeeded or said why (the errno's text, or
 * KC_ENOMEM); a get is a hit or a miss, never an error; a compile still hands the caller its
 * compiled graph; no temporary file is left; verify finds nothing corrupt; the entries
 * stored before the run are intact; what the run stored is whole.  Under ASan, LeakSanitizer
 * checks every path at exit.
 *
 *   test_faults store     put, get, gc, import
 *   test_faults compile   prewarm, compile (NVRTC compiles in every run: the slow half)
 */
#include <errno.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "common/fs.h"
#include "common/internal.h"
#include "kcache.h"
#include "helpers.h"

static char *dir, *work;
static kc_cache *cache;
static kc_key target_key; /* computed before any fault is armed: kct_key allocates */

#define EARLIER 3    /* entries stored before every run, which must survive it */
#define PAYLOAD 1500 /* bytes of an entry's kernels section (incompressible) */
#define VICTIMS 6    /* old entries a gc must evict */
#define BUNDLED 4    /* entries in the bundle an import writes */

/* ---- entries whose bytes are a function of (label, i, version) ---- */

static void fill(uint8_t *b, size_t n, const char *label, int i, int version) {
    uint64_t x = XXH3_64bits(label, strlen(label)) ^ ((uint64_t)i << 32) ^ (uint64_t)version;
    for (size_t k = 0; k < n; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[k] = (uint8_t)x;
    }
}

static void put_entry(const char *label, int i, int version) {
    uint8_t b[PAYLOAD];
    fill(b, sizeof b, label, i, version);
    kc_key k = kct_key(label, i);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, "sm_90"), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, b, sizeof b), KC_OK);
    if (kc_cache_put(cache, e) != KC_OK) fail_msg("put %s/%d: %s", label, i, kc_error_last()->message);
    kc_entry_free(e);
}

/* The version stored for (label, i): 0 if absent, -1 if its bytes are none of ours. */
static int stored_version(const char *label, int i, int max_version) {
    kc_key k = kct_key(label, i);
    kc_entry *e;
    int rc = kc_cache_peek(cache, &k, "sm_90", &e);
    if (rc == KC_MISS) return 0;
    if (rc != KC_OK) return -1;
    const void *p;
    size_t n;
    int v = -1;
    if (kc_entry_section(e, KC_SECTION_KERNELS, &p, &n) == KC_OK && n == PAYLOAD)
        for (int ver = 1; ver <= max_version && v < 0; ver++) {
            uint8_t b[PAYLOAD];
            fill(b, sizeof b, label, i, ver);
            if (memcmp(b, p, n) == 0) v = ver;
        }
    kc_entry_free(e);
    return v;
}

static void remove_entry(const char *label, int i) {
    kc_key k = kct_key(label, i);
    kc_cache_remove(cache, &k, "sm_90");
}

/* ---- the loop ---- */

typedef struct fault_op {
    const char *name;
    void (*prep)(void);               /* bring the cache to the state before the run */
    int (*run)(void);                 /* the operation; returns its status */
    void (*check)(int rc, int fault); /* its own checks, faults off (fault: one was injected) */
} fault_op;

typedef struct tally {
    long runs, faulted, injected;
} tally;

static int want_errno; /* the errno being injected; 0 for allocation faults */
static char now[128];  /* the fault being injected, for failure messages */
#define FAIL(...)                             \
    do {                                      \
        char m_[1024];                        \
        snprintf(m_, sizeof m_, __VA_ARGS__); \
        fail_msg("[%s] %s", now, m_);         \
    } while (0)

/* What every run owes, checked with the faults off. */
static void common_checks(const fault_op *op, int rc, int fault) {
    if (fault && rc != KC_OK && rc != KC_MISS) {
        const char *msg = kc_error_last()->message;
        if (want_errno ? !strstr(msg, strerror(want_errno)) : rc != KC_ENOMEM)
            FAIL("%s: status %s without a clear reason: '%s'", op->name, kc_status_str(rc), msg);
    }
    op->check(rc, fault);
    if (kct_count_files(dir, ".tmp.") != 0) FAIL("%s: a temporary file was left", op->name);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(cache, &r), KC_OK);
    if (r.corrupt) FAIL("%s: verify found %llu corrupt entries", op->name, (unsigned long long)r.corrupt);
    for (int i = 0; i < EARLIER; i++)
        if (stored_version("earlier", i, 1) != 1) FAIL("%s: earlier entry %d was lost or changed", op->name, i);
}

static const char *const OPS[] = {"open", "write", "fsync", "rename", "unlink", "read"};
static kc_fs_op fs_op; /* the call being failed by fs_arm */

static void fs_arm(long nth, int every) {
    snprintf(now, sizeof now, "%s #%ld%s with %s", OPS[fs_op], nth, every ? " and after" : "", strerror(want_errno));
    kc_fs_fault_set(fs_op, nth, want_errno, every);
}
static void alloc_arm(long nth, int every) {
    snprintf(now, sizeof now, "allocation #%ld%s", nth, every ? " and after" : "");
    kc_alloc_fail_at(nth, every);
}
static void disarm(void) {
    kc_fs_fault_clear();
    kc_alloc_fail_at(0, false);
}

/* Fail the Nth call (arm), N = 1, 2, … until a run injects nothing; check every run. */
static void loop_until_clean(const fault_op *op, tally *t, int every, long limit, void (*arm)(long, int),
                             long (*count)(void)) {
    for (long nth = 1;; nth++) {
        if (nth > limit) FAIL("%s: still faulting at call %ld", op->name, nth);
        op->prep();
        arm(nth, every);
        long before = count();
        int rc = op->run();
        long injected = count() - before;
        disarm();
        t->runs++;
        t->faulted += injected > 0;
        t->injected += injected;
        common_checks(op, rc, injected > 0);
        if (injected == 0) {
            if (rc != KC_OK) FAIL("%s: failed with no fault: %s", op->name, kc_error_last()->message);
            return;
        }
    }
}

static void fs_loops(const fault_op *op, tally *t) {
    const kc_fs_op ops[] = {KC_FS_OPEN, KC_FS_WRITE, KC_FS_FSYNC, KC_FS_RENAME, KC_FS_UNLINK, KC_FS_READ};
    const int errs[] = {EIO, ENOSPC, EACCES, EROFS};
    for (size_t o = 0; o < KC_ARRAY_LEN(ops); o++)
        for (size_t e = 0; e < KC_ARRAY_LEN(errs); e++)
            for (int every = 0; every < 2; every++) {
                fs_op = ops[o];
                want_errno = errs[e];
                loop_until_clean(op, t, every, 2000, fs_arm, kc_fs_fault_count);
            }
}

static void alloc_loops(const fault_op *op, tally *t) {
    want_errno = 0;
    for (int every = 0; every < 2; every++) loop_until_clean(op, t, every, 20000, alloc_arm, kc_alloc_fail_count);
}

static void run_loops(const fault_op *op) {
    tally fs = {0, 0, 0}, mem = {0, 0, 0};
    fs_loops(op, &fs);
    alloc_loops(op, &mem);
    fprintf(stderr,
            "%-8s %5ld runs with a file-system fault (%ld injected), %5ld with an allocation failure "
            "(%ld injected); nothing lost\n",
            op->name, fs.faulted, fs.injected, mem.faulted, mem.injected);
    /* Every kind of call the operation makes was reached (else the loop proved nothing). */
    assert_true(fs.faulted > 0);
    assert_true(mem.faulted > 0);
}

/* ---- put: an entry is replaced; the old one stays if the put fails ---- */

static void put_prep(void) { put_entry("target", 0, 1); }
static int put_run(void) {
    uint8_t b[PAYLOAD];
    fill(b, sizeof b, "target", 0, 2);
    kc_entry *e;
    int rc = kc_entry_new(&e, &target_key, "sm_90");
    if (rc == KC_OK) rc = kc_entry_set_section(e, KC_SECTION_KERNELS, b, sizeof b);
    if (rc == KC_OK) rc = kc_cache_put(cache, e);
    kc_entry_free(e);
    return rc;
}
static void put_check(int rc, int fault) {
    (void)fault;
    int v = stored_version("target", 0, 2);
    if (rc == KC_OK && v != 2) FAIL("put: succeeded but the entry is version %d", v);
    if (rc != KC_OK && v != 1) FAIL("put: failed and the old entry is version %d", v);
}

/* ---- get: a hit or a miss, never an error, and a fault quarantines nothing ---- */

static int get_got; /* the version a successful get returned */
static kc_stats get_before;
static void get_prep(void) {
    put_entry("target", 0, 1);
    kc_cache_stats(cache, &get_before);
}
static int get_run(void) {
    kc_entry *e;
    int rc = kc_cache_get(cache, &target_key, "sm_90", &e);
    get_got = 0;
    if (rc == KC_OK) {
        const void *p;
        size_t n;
        uint8_t b[PAYLOAD];
        fill(b, sizeof b, "target", 0, 1);
        if (kc_entry_section(e, KC_SECTION_KERNELS, &p, &n) == KC_OK && n == PAYLOAD && memcmp(p, b, n) == 0)
            get_got = 1;
        kc_entry_free(e);
    }
    return rc;
}
static void get_check(int rc, int fault) {
    (void)fault;
    if (rc != KC_OK && rc != KC_MISS) FAIL("get: status %s is neither a hit nor a miss", kc_status_str(rc));
    if (rc == KC_OK && get_got != 1) FAIL("get: a hit returned wrong bytes");
    if (stored_version("target", 0, 1) != 1) FAIL("get: the entry did not survive a failed read");
    kc_stats s;
    kc_cache_stats(cache, &s);
    if (s.v[KC_STAT_CORRUPT] != get_before.v[KC_STAT_CORRUPT]) FAIL("get: a read fault was taken for corruption");
}

/* ---- gc: least recently used evicted down to the limit; nothing torn, the newest kept ---- */

static uint64_t gc_limit;
static void touch_at(const char *label, int i, time_t t) {
    kc_key k = kct_key(label, i);
    kc_entry *e;
    assert_int_equal(kc_cache_peek(cache, &k, "sm_90", &e), KC_OK);
    kc_entry_free(e);
    char hex[KC_KEY_HEX_LEN + 1], path[4096];
    kc_key_to_hex(&k, hex);
    snprintf(path, sizeof path, "%s/v1/%.2s/%s.sm_90.kce", dir, hex, hex);
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}
static void gc_prep(void) {
    time_t now = time(NULL);
    for (int i = 0; i < VICTIMS; i++) {
        put_entry("victim", i, 1);
        touch_at("victim", i, now - 1000 + i); /* least recently used first */
    }
    for (int i = 0; i < EARLIER; i++) touch_at("earlier", i, now);
    char stale[4096];
    snprintf(stale, sizeof stale, "%s/v1/00/.tmp.stale-by-a-crash", dir);
    assert_int_equal(kct_write(stale, "x", 1), 0);
    struct timespec ts[2] = {{now - 7200, 0}, {now - 7200, 0}};
    assert_int_equal(utimensat(AT_FDCWD, stale, ts, 0), 0);
    if (!gc_limit) { /* room for the earlier entries and one victim: at least five victims must go */
        uint64_t all = kct_dir_bytes(dir, ".kce");
        gc_limit = all / (VICTIMS + EARLIER) * (EARLIER + 1) + all / (VICTIMS + EARLIER) / 2;
    }
}
static int gc_run(void) {
    kc_gc_report r = KC_GC_REPORT_INIT;
    return kc_cache_gc(cache, gc_limit, &r);
}
static void gc_check(int rc, int fault) {
    (void)fault;
    for (int i = 0; i < VICTIMS; i++)
        if (stored_version("victim", i, 1) < 0) FAIL("gc: victim %d is damaged", i);
    if (rc == KC_OK && kct_dir_bytes(dir, ".kce") > gc_limit)
        FAIL("gc: succeeded but the store is over its limit (%llu > %llu)",
             (unsigned long long)kct_dir_bytes(dir, ".kce"), (unsigned long long)gc_limit);
    /* The crash's temporary file is collected by this gc or, if its removal failed, the next. */
    assert_int_equal(kc_cache_gc(cache, gc_limit, NULL), KC_OK);
    assert_true(kct_dir_bytes(dir, ".kce") <= gc_limit);
}

/* ---- import: all of a verified bundle, or a clear error; what was written is whole ---- */

static char bundle[4096];
static void import_prep(void) {
    for (int i = 1; i < BUNDLED; i++) remove_entry("bundled", i);
    put_entry("bundled", 0, 1); /* one already present with the same bytes: left alone */
}
static int import_run(void) {
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    return kc_bundle_import(cache, bundle, 0, &r);
}
static void import_check(int rc, int fault) {
    (void)fault;
    for (int i = 0; i < BUNDLED; i++) {
        int v = stored_version("bundled", i, 1);
        if (v < 0 || (rc == KC_OK && v != 1))
            FAIL("import: bundled entry %d is version %d after status %s", i, v, kc_status_str(rc));
    }
}

static void make_bundle(void) {
    kc_cache *main_cache = cache;
    char *src;
    assert_int_equal(kct_open_cache("faults-src", &src, &cache), KC_OK);
    for (int i = 0; i < BUNDLED; i++) put_entry("bundled", i, 1);
    snprintf(bundle, sizeof bundle, "%s/warm.kcb", work);
    assert_int_equal(kc_bundle_export(cache, bundle, NULL, NULL), KC_OK);
    kct_close_cache(src, cache);
    cache = main_cache;
}

/* ---- prewarm and compile: a tiny graph, compiled by NVRTC in every run ---- */

static char manifest[4096];
static kc_graph_desc *tiny;
static kc_key tiny_key;
static const char *const TARGETS[] = {"sm_90", "compute_90"};

static void write_tiny(void) {
    char p[4096];
    snprintf(p, sizeof p, "%s/tiny.cu", work);
    const char *cu =
        "extern \"C\" __global__ void tiny_fwd(const float *x, float *y) { y[threadIdx.x] = 2.f * x[threadIdx.x]; }\n";
    assert_int_equal(kct_write(p, cu, strlen(cu)), 0);
    snprintf(p, sizeof p, "%s/tiny.json", work);
    const char *spec =
        "{\"name\": \"tiny\", \"kernels\": [{\"id\": \"f\", \"file\": \"tiny.cu\", \"entry\": \"tiny_fwd\"}],\n"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],\n"
        " \"forward\": [{\"kernel\": \"f\", \"grid\": [1, 1, 1], \"block\": [\"N\", 1, 1], \"args\": [\"input:0\", \"output:0\"]}]}\n";
    assert_int_equal(kct_write(p, spec, strlen(spec)), 0);
    assert_int_equal(kc_graph_desc_load(&tiny, p), KC_OK);
    assert_int_equal(kc_graph_key(tiny, &tiny_key, NULL), KC_OK);
    snprintf(manifest, sizeof manifest, "%s/m.json", work);
    const char *m = "{\"graphs\": [\"tiny.json\"], \"archs\": [\"sm_90\", \"compute_90\"]}\n";
    assert_int_equal(kct_write(manifest, m, strlen(m)), 0);
}

/* 1 if the variant is stored and whole (decodes, its own key and variant, and every image it refers
 * to is stored and passes its checks: [Note: two levels]), 0 if absent. */
static int tiny_stored(const char *target) {
    kc_entry *e;
    int rc = kc_cache_peek(cache, &tiny_key, target, &e);
    if (rc != KC_OK && rc != KC_MISS) FAIL("%s of the tiny graph is unreadable: %s", target, kc_error_last()->message);
    if (rc == KC_OK && kc_entry_resolve(cache, e) != KC_OK)
        FAIL("%s of the tiny graph is stored without its images: %s", target, kc_error_last()->message);
    if (rc == KC_OK) kc_entry_free(e);
    return rc == KC_OK;
}

typedef struct second_level {
    kc_key keys[64];
    char variants[64][8];
    size_t n;
} second_level;
static int collect_second_level(const kc_cache_item *it, void *ctx) {
    second_level *s = ctx;
    if ((strcmp(it->variant, KC_VARIANT_IMAGE) == 0 || strcmp(it->variant, KC_VARIANT_UNIT) == 0) && s->n < 64) {
        s->keys[s->n] = it->key;
        snprintf(s->variants[s->n++], 8, "%s", it->variant);
    }
    return 0;
}
/* Prewarm: the graph entries go, the units stay (found: a graph entry over stored images, fast). */
static void tiny_prep(void) {
    for (size_t t = 0; t < KC_ARRAY_LEN(TARGETS); t++) kc_cache_remove(cache, &tiny_key, TARGETS[t]);
}
/* Compile: everything goes, so each run writes image, unit record and graph entry under its faults. */
static void tiny_prep_all(void) {
    tiny_prep();
    second_level s = {.n = 0};
    assert_int_equal(kc_cache_foreach(cache, collect_second_level, &s), KC_OK);
    for (size_t i = 0; i < s.n; i++) kc_cache_remove(cache, &s.keys[i], s.variants[i]);
}

static kc_prewarm_report *pw_report;
static int prewarm_run(void) {
    kc_manifest *m;
    int rc = kc_manifest_load(&m, manifest);
    if (rc) return rc;
    kc_prewarm_options o = KC_PREWARM_OPTIONS_INIT;
    o.jobs = 1;
    rc = kc_prewarm(cache, m, &o, &pw_report);
    kc_manifest_free(m);
    return rc;
}
static void prewarm_check(int rc, int fault) {
    (void)fault;
    int stored = 0;
    for (size_t t = 0; t < KC_ARRAY_LEN(TARGETS); t++) stored += tiny_stored(TARGETS[t]);
    if (rc == KC_OK && stored != 2) FAIL("prewarm: succeeded with %d of 2 variants stored", stored);
    if (pw_report) { /* each variant reported failed is one that is not in the cache, and vice versa */
        for (size_t k = 0; k < pw_report->variants; k++) {
            const kc_prewarm_result *r = &pw_report->results[k];
            int in = tiny_stored(TARGETS[r->arch]);
            if (r->status == KC_OK && !in) FAIL("prewarm: %s reported done but not stored", TARGETS[r->arch]);
            if (r->status != KC_OK && !r->error[0]) FAIL("prewarm: %s failed without a reason", TARGETS[r->arch]);
        }
        if (pw_report->done != pw_report->variants)
            FAIL("prewarm: %zu of %zu variants ran", pw_report->done, pw_report->variants);
    }
    kc_prewarm_report_free(pw_report);
    pw_report = NULL;
}

static kc_graph_info compile_info = KC_GRAPH_INFO_INIT;
static int compile_run(void) { return kc_graph_compile(cache, tiny, "sm_90", &compile_info); }
static void compile_check(int rc, int fault) {
    (void)fault;
    /* The caller still got its compiled graph: a cache error is a miss plus a compile, never
     * a failure.  Only running out of memory may fail the call. */
    if (rc != KC_OK && !(want_errno == 0 && rc == KC_ENOMEM))
        FAIL("compile: a cache fault failed the caller: %s: %s", kc_status_str(rc), kc_error_last()->message);
    if (rc == KC_OK && compile_info.source != KC_FROM_COMPILE && compile_info.source != KC_FROM_DISK)
        FAIL("compile: came from %d", (int)compile_info.source);
    int in = tiny_stored("sm_90");
    if (rc == KC_OK && compile_info.store_status == KC_OK && !in) FAIL("compile: says stored, is not");
    if (rc == KC_OK && compile_info.store_status != KC_OK && in) FAIL("compile: says not stored, is");
}

/* ---- fixtures ---- */

static int setup(void **state) {
    (void)state;
    if (kct_open_cache("faults", &dir, &cache) != KC_OK) return -1;
    work = kct_tmpdir("faults-work");
    target_key = kct_key("target", 0);
    for (int i = 0; i < EARLIER; i++) put_entry("earlier", i, 1);
    return work ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kc_fs_fault_clear();
    kc_alloc_fail_at(0, false);
    kc_graph_desc_free(tiny);
    tiny = NULL;
    kct_rmtree(work);
    free(work);
    return kct_close_cache(dir, cache);
}

static void test_put(void **state) {
    (void)state;
    const fault_op op = {"put", put_prep, put_run, put_check};
    run_loops(&op);
}

static void test_get(void **state) {
    (void)state;
    const fault_op op = {"get", get_prep, get_run, get_check};
    run_loops(&op);
}

static void test_gc(void **state) {
    (void)state;
    gc_limit = 0;
    const fault_op op = {"gc", gc_prep, gc_run, gc_check};
    run_loops(&op);
}

static void test_import(void **state) {
    (void)state;
    make_bundle();
    const fault_op op = {"import", import_prep, import_run, import_check};
    run_loops(&op);
}

static void test_prewarm(void **state) {
    (void)state;
    write_tiny();
    const fault_op op = {"prewarm", tiny_prep, prewarm_run, prewarm_check};
    run_loops(&op);
}

static void test_compile(void **state) {
    (void)state;
    write_tiny();
    const fault_op op = {"compile", tiny_prep_all, compile_run, compile_check};
    run_loops(&op);
}

int main(int argc, char **argv) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest store[] = {T(test_put), T(test_get), T(test_gc), T(test_import)};
    const struct CMUnitTest compile[] = {T(test_prewarm), T(test_compile)};
    const char *which = argc > 1 ? argv[1] : "store";
    if (strcmp(which, "compile") == 0) return cmocka_run_group_tests_name("faults: compile", compile, NULL, NULL);
    return cmocka_run_group_tests_name("faults: store", store, NULL, NULL);
}

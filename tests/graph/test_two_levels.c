/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_two_levels.c — graph entries over shared images ([Note: two levels] in kcache/entry.h,
 * src/graph/unitstore.c, resolve.c): a second static shape of a graph compiles nothing and stores
 * only its graph entry; the target is part of a unit's key; graphs asking other plain names of one
 * source share its unit record ([Note: recorded names]: a name it did not record is compiled once,
 * then the record holds the names of both compiles of the same image); an image that is missing, corrupt or
 * not the one referred to makes its graph a miss — one outcome counted — and its unit is compiled
 * and stored again; threads and processes (a 16-process storm) compiling shapes of one graph at once compile each unit
 * once ([Note: single-flight per unit]).  Needs NVRTC (compile-only), no GPU.
 */
#include <ftw.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/internal.h" /* kc_alloc_fail_at */
#include "kcache.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("twolevels", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static kc_graph_desc *load(const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", KC_KERNELS_DIR, name);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    return d;
}

/* mlp_block with its symbolic M made the static size m: a new static shape, the same kernels. */
static kc_graph_desc *mlp_at(int64_t m) {
    kc_graph_desc *d = load("mlp_block.json"), *s;
    static const int64_t sz[5][2] = {{0, 256}, {256, 1024}, {1024, 0}, {1024, 256}, {256, 0}}; /* 0: none */
    kc_tensor_meta in[5];
    memset(in, 0, sizeof in);
    for (int i = 0; i < 5; i++) {
        in[i].dtype = KC_DTYPE_F32;
        in[i].device = KC_DEVICE_CUDA;
        in[i].requires_grad = 1;
        in[i].rank = sz[i][1] ? 2 : 1;
        in[i].sizes[0].value = i == 0 ? m : sz[i][0];
        in[i].sizes[1].value = sz[i][1];
        in[i].strides[0].value = in[i].rank == 2 ? sz[i][1] : 1;
        in[i].strides[1].value = 1;
    }
    if (kc_graph_desc_specialize(&s, d, in, 5, NULL, 0, NULL) != KC_OK) fail_msg("%s", kc_error_last()->message);
    kc_graph_desc_free(d);
    return s;
}

static uint64_t stat_of(kc_stat id) {
    kc_stats st;
    assert_int_equal(kc_cache_stats(cache, &st), KC_OK);
    return st.v[id];
}

static kc_entry *stored(const kc_graph_info *info, const char *variant) {
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, info->key), KC_OK);
    kc_entry *e;
    if (kc_cache_peek(cache, &k, variant, &e) != KC_OK) fail_msg("no graph entry %s.%s", info->key, variant);
    return e;
}

static void compile_ok(kc_graph_desc *d, const char *target, kc_graph_info *info) {
    if (kc_graph_compile(cache, d, target, info) != KC_OK) fail_msg("%s", kc_error_last()->message);
}

static void test_a_second_shape_compiles_nothing(void **state) {
    (void)state;
    kc_graph_desc *a = mlp_at(64), *b = mlp_at(128);
    kc_graph_info ia = KC_GRAPH_INFO_INIT, ib = KC_GRAPH_INFO_INIT, ic = KC_GRAPH_INFO_INIT;
    compile_ok(a, "sm_90", &ia);
    assert_int_equal(ia.source, KC_FROM_COMPILE);
    assert_int_equal(ia.units, 2); /* matmul.cu and elementwise.cu */
    assert_int_equal(ia.units_compiled, 2);
    size_t images = kct_count_files(dir, ".img.kce"), units = kct_count_files(dir, ".unit.kce");
    assert_int_equal(units, 2);
    assert_int_equal(images, 2);
    compile_ok(b, "sm_90", &ib);
    assert_string_not_equal(ia.key, ib.key); /* another graph: a new static shape */
    assert_int_equal(ib.source, KC_FROM_COMPILE);
    assert_int_equal(ib.units, 2);
    assert_int_equal(ib.units_compiled, 0); /* nothing compiled: only the graph entry was written */
    assert_true(ib.compile_ms == 0);
    assert_int_equal(kct_count_files(dir, ".img.kce"), images);
    assert_int_equal(kct_count_files(dir, ".unit.kce"), units);
    assert_int_equal(kct_count_graphs(dir), 2);
    assert_int_equal(stat_of(KC_STAT_UNIT_COMPILES), 2);
    assert_int_equal(stat_of(KC_STAT_UNIT_HITS), 2);
    /* Both graph entries refer to the same images. */
    kc_entry *ea = stored(&ia, "sm_90"), *eb = stored(&ib, "sm_90");
    kc_image_ref *ra, *rb;
    size_t na, nb;
    assert_int_equal(kc_entry_images(ea, &ra, &na), KC_OK);
    assert_int_equal(kc_entry_images(eb, &rb, &nb), KC_OK);
    assert_int_equal(na, 2);
    assert_int_equal(nb, 2);
    for (size_t i = 0; i < na; i++) assert_true(kc_image_ref_equal(&ra[i], &rb[i]));
    free(ra), free(rb);
    kc_entry_free(ea), kc_entry_free(eb);
    /* The target is in the unit's key: another target compiles its units. */
    compile_ok(b, "sm_80", &ic);
    assert_int_equal(ic.units_compiled, 2);
    kc_graph_desc_free(a), kc_graph_desc_free(b);
}

/* Lowered name of kernel `name` in a stored graph entry. */
typedef struct lowered_of {
    const char *name;
    char got[256];
} lowered_of;
static void find_lowered(const char *name, const char *lowered, const char *target, int is_ptx, size_t bytes,
                         void *ctx) {
    (void)target, (void)is_ptx, (void)bytes;
    lowered_of *l = ctx;
    if (strcmp(name, l->name) == 0) snprintf(l->got, sizeof l->got, "%s", lowered);
}
static void expect_lowered(const kc_graph_info *info, const char *kernel, const char *want) {
    kc_entry *e = stored(info, "sm_90");
    lowered_of l = {kernel, ""};
    assert_int_equal(kc_entry_kernels(e, find_lowered, &l), KC_OK);
    assert_string_equal(l.got, want);
    kc_entry_free(e);
}

/* [Note: recorded names] mlp_block asks elementwise.cu for gelu_fwd and gelu_bwd, add_mul_gelu for
 * six plain names of it: one unit key.  add_mul_gelu's names were not recorded by mlp_block's compile:
 * compiled once (never completed from the image's symbols), the same bytes, so the record then holds
 * all six and mlp_block at a new shape compiles nothing. */
static void test_other_plain_names_of_a_source_share_its_unit(void **state) {
    (void)state;
    kc_graph_desc *mlp = load("mlp_block.json"), *amg = load("add_mul_gelu.json"), *mlp2 = mlp_at(48);
    kc_graph_info im = KC_GRAPH_INFO_INIT, ia = KC_GRAPH_INFO_INIT, i2 = KC_GRAPH_INFO_INIT;
    compile_ok(mlp, "sm_90", &im);
    assert_int_equal(im.units_compiled, 2);
    compile_ok(amg, "sm_90", &ia);
    assert_int_equal(ia.units, 1);
    assert_int_equal(ia.units_compiled, 1); /* four of its names were never recorded */
    assert_int_equal(kct_count_files(dir, ".unit.kce"), 2);
    assert_int_equal(kct_count_files(dir, ".img.kce"), 2); /* the same image */
    expect_lowered(&ia, "add_bwd", "add_bwd");
    expect_lowered(&ia, "mul_fwd", "mul_fwd");
    compile_ok(mlp2, "sm_90", &i2);
    assert_int_equal(i2.units_compiled, 0);
    compile_ok(amg, "sm_90", &ia); /* its own entry: a hit */
    assert_int_equal(ia.source, KC_FROM_DISK);
    /* Kernels the first graph did not ask — a C++ kernel (a mangled symbol), a static one, one of a
     * namespace named through a using-directive — are each compiled once, with their lowering as
     * NVRTC gives it; then a graph asking any of the names recorded compiles nothing. */
    char d2[600], p[700];
    snprintf(d2, sizeof d2, "%s/specs", dir);
    mkdir(d2, 0700);
    static const char *cu = "extern \"C\" __global__ void k_c(float *x) { x[0] = 1; }\n"
                            "__global__ void k_cpp(float *x, int n) { x[0] = (float)n; }\n"
                            "static __global__ void k_s(float *x) { x[0] = 2; }\n"
                            "namespace ns { __global__ void k_n(float *x) { x[0] = 3; } }\n"
                            "using namespace ns;\n";
    snprintf(p, sizeof p, "%s/plain.cu", d2);
    assert_int_equal(kct_write(p, cu, strlen(cu)), 0);
    static const char *fmt =
        "{\"name\": \"%s\", \"kernels\": [{\"id\": \"a\", \"file\": \"plain.cu\", \"entry\": \"k_c\"}%s],"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],"
        " \"forward\": [{\"kernel\": \"a\", \"grid\": [1, 1, 1], \"block\": [1, 1, 1], \"args\": [\"output:0\"]}%s]}";
    const char *names[5] = {"pa", "pb", "pc", "pd", "pe"};
    const char *extra_k[5] = {"", ", {\"id\": \"b\", \"file\": \"plain.cu\", \"entry\": \"k_cpp\"}",
                              ", {\"id\": \"b\", \"file\": \"plain.cu\", \"entry\": \"k_s\"}",
                              ", {\"id\": \"b\", \"file\": \"plain.cu\", \"entry\": \"k_n\"}",
                              ", {\"id\": \"b\", \"file\": \"plain.cu\", \"entry\": \"k_s\"}"};
    const char *one = ", {\"kernel\": \"b\", \"grid\": [1, 1, 1], \"block\": [1, 1, 1], \"args\": [\"output:0\"]}";
    const char *extra_s[5] = {
        "", ", {\"kernel\": \"b\", \"grid\": [1, 1, 1], \"block\": [1, 1, 1], \"args\": [\"output:0\", \"i32:3\"]}",
        one, one, ", {\"kernel\": \"b\", \"grid\": [2, 1, 1], \"block\": [1, 1, 1], \"args\": [\"output:0\"]}"};
    kc_graph_info info[5] = {KC_GRAPH_INFO_INIT, KC_GRAPH_INFO_INIT, KC_GRAPH_INFO_INIT, KC_GRAPH_INFO_INIT,
                             KC_GRAPH_INFO_INIT};
    for (int i = 0; i < 5; i++) {
        char js[2048];
        snprintf(js, sizeof js, fmt, names[i], extra_k[i], extra_s[i]);
        snprintf(p, sizeof p, "%s/%s.json", d2, names[i]);
        assert_int_equal(kct_write(p, js, strlen(js)), 0);
        kc_graph_desc *d;
        if (kc_graph_desc_load(&d, p) != KC_OK) fail_msg("%s", kc_error_last()->message);
        compile_ok(d, "sm_90", &info[i]);
        kc_graph_desc_free(d);
    }
    assert_int_equal(info[0].units_compiled, 1);
    assert_int_equal(info[1].units_compiled, 1); /* k_cpp: not recorded, compiled */
    expect_lowered(&info[1], "k_cpp", "_Z5k_cppPfi");
    assert_int_equal(info[2].units_compiled, 1);
    expect_lowered(&info[2], "k_s", "_Z3k_sPf");
    assert_int_equal(info[3].units_compiled, 1);
    expect_lowered(&info[3], "k_n", "_ZN2ns3k_nEPf");
    expect_lowered(&info[3], "k_c", "k_c");
    assert_string_not_equal(info[4].key, info[2].key); /* pe: another graph (a grid) asking k_c and k_s */
    assert_int_equal(info[4].units_compiled, 0);       /* both recorded, of the same image */
    expect_lowered(&info[4], "k_s", "_Z3k_sPf");
    kc_graph_desc_free(mlp), kc_graph_desc_free(amg), kc_graph_desc_free(mlp2);
}

/* Remove (or damage) the first image file found. */
static const char *victim_action;
static int victim_done;
static int on_file(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    if (flag != FTW_F || victim_done || !strstr(p, ".img.kce") || strstr(p, "/quarantine/")) return 0;
    victim_done = 1;
    if (!strcmp(victim_action, "remove")) return unlink(p);
    FILE *f = fopen(p, "r+b");
    if (!f) return -1;
    fseek(f, -40, SEEK_END); /* inside the image's bytes */
    int c = fgetc(f);
    fseek(f, -40, SEEK_END);
    fputc(c ^ 0x20, f);
    return fclose(f);
}
static void damage_an_image(const char *action) {
    victim_action = action;
    victim_done = 0;
    nftw(dir, on_file, 16, FTW_PHYS);
    assert_true(victim_done);
}

/* A lookup after `action` on one image: a miss, counted once; the unit compiled again; then a hit. */
static void check_recovery(const char *action) {
    kc_graph_desc *d = mlp_at(32);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    compile_ok(d, "sm_90", &info);
    damage_an_image(action);
    uint64_t hits = stat_of(KC_STAT_HITS), misses = stat_of(KC_STAT_MISSES), uc = stat_of(KC_STAT_UNIT_COMPILES),
             gone = stat_of(KC_STAT_IMAGES_MISSING);
    compile_ok(d, "sm_90", &info);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_non_null(strstr(info.miss_reason, "image"));
    if (stat_of(KC_STAT_MISSES) != misses + 1)
        fail_msg("misses %llu -> %llu (hits %llu -> %llu, source %d: %s)", (unsigned long long)misses,
                 (unsigned long long)stat_of(KC_STAT_MISSES), (unsigned long long)hits,
                 (unsigned long long)stat_of(KC_STAT_HITS), info.source, info.miss_reason);
    assert_int_equal(stat_of(KC_STAT_HITS), hits);
    assert_int_equal(stat_of(KC_STAT_IMAGES_MISSING), gone + 1);
    assert_int_equal(info.units_compiled, 1); /* only the unit whose image was lost */
    assert_int_equal(stat_of(KC_STAT_UNIT_COMPILES), uc + 1);
    compile_ok(d, "sm_90", &info);
    assert_int_equal(info.source, KC_FROM_DISK);
    kc_entry *e = stored(&info, "sm_90");
    assert_int_equal(kc_entry_resolve(cache, e), KC_OK);
    kc_entry_free(e);
    kc_graph_desc_free(d);
}

/* The allocations `call` makes (the first n that does not fail it). */
static long allocations(int (*call)(const kc_key *, const char *, kc_entry **), const kc_key *k, const char *v,
                        kc_entry **out) {
    for (long n = 1;; n++) {
        kc_alloc_fail_at(n, false);
        int rc = call(k, v, out);
        kc_alloc_fail_at(0, false);
        if (rc == KC_OK) return n - 1;
        assert_true(n < 1000);
    }
}
static int peek(const kc_key *k, const char *v, kc_entry **out) { return kc_cache_peek(cache, k, v, out); }
static int peek_resolve(const kc_key *k, const char *v, kc_entry **out) {
    int rc = kc_cache_peek(cache, k, v, out);
    if (rc == KC_OK && (rc = kc_entry_resolve(cache, *out)) != KC_OK) {
        kc_entry_free(*out);
        *out = NULL;
    }
    return rc;
}

/* [Note: attached, not copied] (entry.c): resolving a graph entry attaches each image's checked
 * bytes where its image entry inflated them, not a copy — no allocation per image beyond the
 * image entry's own read and the attached list's slot — and they are the image's bytes. */
static void test_resolving_attaches_images_without_a_copy(void **state) {
    (void)state;
    kc_graph_desc *d = mlp_at(32);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    compile_ok(d, "sm_90", &info);
    kc_key gk;
    assert_int_equal(kc_key_from_hex(&gk, info.key), KC_OK);
    kc_entry *e;
    long graph = allocations(peek, &gk, "sm_90", &e);
    kc_image_ref *refs;
    size_t n;
    assert_int_equal(kc_entry_images(e, &refs, &n), KC_OK);
    assert_true(n >= 2);
    long images = 0;
    for (size_t i = 0; i < n; i++) {
        kc_entry *img;
        images += allocations(peek, &refs[i].id, KC_VARIANT_IMAGE, &img);
        const void *want, *got;
        size_t wl, gl;
        assert_int_equal(kc_image_entry_read(img, &refs[i], 0, NULL, &want, &wl), KC_OK);
        assert_int_equal(kc_entry_resolve(cache, e), KC_OK);
        assert_int_equal(kc_entry_attached_image(e, i, &got, &gl), KC_OK);
        assert_int_equal(gl, wl);
        assert_memory_equal(got, want, wl);
        kc_entry_free(img);
    }
    kc_entry_free(e);
    kc_entry *r;
    long resolved = allocations(peek_resolve, &gk, "sm_90", &r);
    kc_entry_free(r);
    /* the graph entry's read, its references (1), then per image: its read and a slot */
    long most = graph + 1 + images + (long)n;
    if (resolved > most)
        fail_msg("resolving made %ld allocations, more than %ld (a copy of each image?)", resolved, most);
    free(refs);
    kc_graph_desc_free(d);
}

static void test_a_missing_image_is_a_miss_and_is_stored_again(void **state) {
    (void)state;
    check_recovery("remove");
}

static void test_a_corrupt_image_is_a_miss_and_is_stored_again(void **state) {
    (void)state;
    check_recovery("flip");
    assert_int_equal(stat_of(KC_STAT_CORRUPT), 1); /* found corrupt and moved aside, once */
}

/* An image object that is well formed but is not the image referred to (other bytes under its name). */
static void test_an_image_that_is_not_the_one_referred_to_is_a_miss(void **state) {
    (void)state;
    kc_graph_desc *d = mlp_at(16);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    compile_ok(d, "sm_90", &info);
    kc_entry *e = stored(&info, "sm_90");
    kc_image_ref *r;
    size_t n;
    assert_int_equal(kc_entry_images(e, &r, &n), KC_OK);
    /* A forged object: the reference's id as its name, other bytes (a valid container). */
    static const char other[] = "not the image the graph refers to";
    kc_image_ref forged = r[0];
    forged.len = sizeof other;
    kc_entry *img;
    assert_int_equal(kc_image_entry_new(&img, &forged, other), KC_OK);
    assert_int_equal(kc_cache_put(cache, img), KC_OK);
    kc_entry_free(img);
    assert_int_equal(kc_entry_resolve(cache, e), KC_MISS);
    uint64_t misses = stat_of(KC_STAT_MISSES);
    compile_ok(d, "sm_90", &info);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(stat_of(KC_STAT_MISSES), misses + 1);
    kc_entry_free(e);
    e = stored(&info, "sm_90");
    assert_int_equal(kc_entry_resolve(cache, e), KC_OK); /* the right image is back under its name */
    const void *b;
    size_t l;
    assert_int_equal(kc_entry_attached_image(e, 0, &b, &l), KC_OK);
    assert_int_equal(l, r[0].len);
    free(r);
    kc_entry_free(e);
    kc_graph_desc_free(d);
}

typedef struct job {
    int64_t m;
    int rc, compiled;
} job;

static void *compile_shape(void *p) {
    job *j = p;
    kc_graph_desc *d = mlp_at(j->m);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    j->rc = kc_graph_compile(cache, d, "sm_90", &info);
    j->compiled = info.units_compiled;
    kc_graph_desc_free(d);
    return NULL;
}

static void test_threads_compile_each_unit_once(void **state) {
    (void)state;
    enum { N = 4 };
    pthread_t th[N];
    job j[N];
    for (int i = 0; i < N; i++) {
        j[i] = (job){8 * (i + 1), -1, 0};
        assert_int_equal(pthread_create(&th[i], NULL, compile_shape, &j[i]), 0);
    }
    int total = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(j[i].rc, KC_OK);
        total += j[i].compiled;
    }
    assert_int_equal(total, 2);
    assert_int_equal(stat_of(KC_STAT_UNIT_COMPILES), 2);
    assert_int_equal(stat_of(KC_STAT_COMPILES), N);
    assert_int_equal(kct_count_graphs(dir), N);
    assert_int_equal(kct_count_files(dir, ".img.kce"), 2);
}

static void test_processes_compile_each_unit_once(void **state) {
    (void)state;
    enum { N = 16 }; /* a 16-process storm */
    pid_t pid[N];
    for (int i = 0; i < N; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            kc_cache *c;
            kc_options o = KC_OPTIONS_INIT;
            o.dir = dir;
            o.flags = KC_OPEN_NO_ENV;
            if (kc_cache_open(&c, &o)) _exit(2);
            kc_graph_desc *d = mlp_at(8 * (i + 1));
            kc_graph_info info = KC_GRAPH_INFO_INIT;
            int rc = kc_graph_compile(c, d, "sm_90", &info);
            kc_graph_desc_free(d);
            kc_cache_close(c);
            _exit(rc == KC_OK ? 0 : 1);
        }
    }
    for (int i = 0; i < N; i++) {
        int st;
        waitpid(pid[i], &st, 0);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    assert_int_equal(stat_of(KC_STAT_UNIT_COMPILES), 2);
    assert_int_equal(stat_of(KC_STAT_UNIT_HITS), 2 * N - 2);
    assert_int_equal(kct_count_graphs(dir), N);
    assert_int_equal(kct_count_files(dir, ".img.kce"), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_a_second_shape_compiles_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_plain_names_of_a_source_share_its_unit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolving_attaches_images_without_a_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_missing_image_is_a_miss_and_is_stored_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_corrupt_image_is_a_miss_and_is_stored_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_image_that_is_not_the_one_referred_to_is_a_miss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_compile_each_unit_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes_compile_each_unit_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

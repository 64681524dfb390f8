/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_site_graph.c — the site cache with the persistent cache behind it: two processes in
 * a row (the first sees sizes 64 then 32 and marks the dimension dynamic; the second's
 * first call is a disk hit of the dynamic graph, no compile); an owner released, then a
 * new owner of the same structure is a disk hit; saved-tensor hooks join the key, and one
 * without a cache hash bypasses the persistent cache.
 */
#include <sys/wait.h>

#include "kcache.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("sitegraph", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static const char *SRC = "extern \"C\" __global__ void scale(float *x, long long n) {\n"
                         "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) x[i] *= 2; }\n";

/* The graph a runtime would build for a call, with the answer's dynamic dims symbolic. */
static kc_graph_desc *desc_for(const kc_call *c, const uint32_t *dynamic) {
    kc_graph_desc *d;
    kc_graph_desc_new(&d, "scale");
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "scale.cu", SRC, "scale", NULL, 0, NULL, 0, NULL, 0};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    char names[2][24], vals[2][24];
    const char *sizes[2];
    for (int dim = 0; dim < 2; dim++) {
        if (dynamic && (dynamic[0] >> dim & 1)) {
            kc_site_symbol(0, dim, names[dim]);
            sizes[dim] = names[dim];
        } else {
            snprintf(vals[dim], sizeof vals[dim], "%lld", (long long)c->inputs[0].sizes[dim].value);
            sizes[dim] = vals[dim];
        }
    }
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 2, sizes, NULL, 0), KC_OK);
    char n[80];
    snprintf(n, sizeof n, "e64:%s * %s", sizes[0], sizes[1]);
    const char *grid[] = {"1024", "1", "1"}, *block[] = {"256", "1", "1"}, *args[] = {"input:0", n};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    return d;
}

static kc_tensor_meta t2(int64_t a, int64_t b) {
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 2, {{a, NULL}, {b, NULL}}, {{b, NULL}, {1, NULL}}, 0};
    return t;
}

/* One call through site and cache, as a runtime would make it; returns where the graph came from. */
static kc_graph_source run_call(kc_site *s, const kc_call *c) {
    kc_site_answer a;
    assert_int_equal(kc_site_lookup(s, c, &a), KC_OK);
    if (a.result == KC_SITE_HIT) return KC_FROM_MEMORY;
    assert_int_equal(a.result, KC_SITE_MISS);
    kc_graph_desc *d = desc_for(c, a.dynamic);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(cache, d, "sm_90", &info)) fail_msg("%s", kc_error_last()->message);
    kc_graph_desc_free(d);
    assert_int_equal(kc_site_insert(s, c, a.dynamic, NULL, NULL), KC_OK);
    return info.source;
}

static void test_two_processes_in_a_row(void **state) {
    (void)state;
    pid_t pid = fork();
    if (pid == 0) {
        kc_site *s;
        kc_site_new(&s, cache, "scale.forward", NULL);
        kc_tensor_meta a = t2(64, 16), b = t2(32, 16);
        kc_call ca = {&a, 1, NULL, 0, 0, NULL}, cb = {&b, 1, NULL, 0, 0, NULL};
        int ok = run_call(s, &ca) == KC_FROM_COMPILE; /* static 64 */
        ok &= run_call(s, &cb) == KC_FROM_COMPILE;    /* dynamic, stored */
        kc_site_free(s);
        kc_cache_close(cache);
        _exit(ok ? 0 : 1);
    }
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    kc_stats before, after;
    kc_cache_stats(cache, &before);
    assert_int_equal(before.v[KC_STAT_COMPILES], 2);
    kc_site *s;
    kc_site_new(&s, cache, "scale.forward", NULL);
    kc_tensor_meta a = t2(64, 16), c3 = t2(5, 16);
    kc_call ca = {&a, 1, NULL, 0, 0, NULL}, cc = {&c3, 1, NULL, 0, 0, NULL};
    assert_int_equal(run_call(s, &ca), KC_FROM_DISK); /* the dynamic graph, from disk */
    assert_int_equal(run_call(s, &cc), KC_FROM_MEMORY);
    kc_cache_stats(cache, &after);
    assert_int_equal(after.v[KC_STAT_COMPILES], 2);
    kc_site_free(s);
}

static void test_owner_release_then_disk_hit(void **state) {
    (void)state;
    kc_site *s;
    kc_site_options o = KC_SITE_OPTIONS_INIT;
    o.static_shapes = 1;
    kc_site_new(&s, cache, "owned", &o);
    kc_tensor_meta a = t2(8, 8);
    uintptr_t first = 0x1000, second = 0x2000;
    kc_call c1 = {&a, 1, &first, 1, 0, NULL}, c2 = {&a, 1, &second, 1, 0, NULL};
    assert_int_equal(run_call(s, &c1), KC_FROM_COMPILE);
    assert_int_equal(run_call(s, &c1), KC_FROM_MEMORY);
    assert_int_equal(kc_owner_release(first), 1);
    assert_int_equal(run_call(s, &c2), KC_FROM_DISK); /* a new owner of the same structure */
    kc_site_free(s);
}

static void test_saved_tensor_hooks(void **state) {
    (void)state;
    kc_tensor_meta a = t2(8, 8);
    kc_call c = {&a, 1, NULL, 0, 0, NULL};
    kc_graph_desc *plain = desc_for(&c, NULL), *hashed = desc_for(&c, NULL), *other = desc_for(&c, NULL),
                  *unhashed = desc_for(&c, NULL);
    assert_int_equal(kc_graph_add_hook(hashed, "pack_to_cpu", "h1"), KC_OK);
    assert_int_equal(kc_graph_add_hook(other, "pack_to_cpu", "h2"), KC_OK);
    assert_int_equal(kc_graph_add_hook(unhashed, "pack_to_cpu", NULL), KC_OK);
    kc_key k1, k2, k3;
    kc_graph_key(plain, &k1, NULL);
    kc_graph_key(hashed, &k2, NULL);
    kc_graph_key(other, &k3, NULL);
    assert_memory_not_equal(k1.bytes, k2.bytes, 16);
    assert_memory_not_equal(k2.bytes, k3.bytes, 16);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, hashed, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kc_graph_compile(cache, unhashed, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_BYPASS);
    assert_non_null(strstr(info.miss_reason, "saved-tensor hook has no cache hash"));
    kc_stats st;
    kc_cache_stats(cache, &st);
    assert_int_equal(st.v[KC_STAT_BYPASSES], 1);
    assert_int_equal(kct_count_graphs(dir), 1); /* the hashed one; the bypassed one stored nothing */
    kc_graph_desc_free(plain);
    kc_graph_desc_free(hashed);
    kc_graph_desc_free(other);
    kc_graph_desc_free(unhashed);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_two_processes_in_a_row),
        T(test_owner_release_then_disk_hit),
        T(test_saved_tensor_hooks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

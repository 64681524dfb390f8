/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_graph.c — graphs through the cache, on a CPU: every bundled graph compiles for
 * sm_80, sm_90 and compute_80, and each stored cubin is an ELF whose symbol table holds its
 * kernel; a second lookup is a disk hit with identical bytes and no compile; a source with
 * __TIME__ is compiled but bypasses the store; a compile error carries NVRTC's log; without
 * a driver kc_graph_get says so while compile-only works; spec errors name the place;
 * the architecture is not in the key, options and sizes are; a spec is refused at load when
 * the launch program could not hold it (issue 15: caps on every array, loaded in linear time).
 */

#include <dirent.h>

#include "common/fs.h"
#include "common/internal.h"
#include "compile/elf.h"
#include "graph/program.h"
#include "kcache.h"
#include "helpers.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("graph", &dir, &cache);
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

typedef struct kl {
    char lowered[16][128];
    char target[16][16];
    int ptx[16];
    int n;
} kl;

static void collect(const char *name, const char *lowered, const char *target, int is_ptx, size_t bytes, void *ctx) {
    (void)name;
    (void)bytes;
    kl *k = ctx;
    snprintf(k->lowered[k->n], sizeof k->lowered[0], "%s", lowered);
    snprintf(k->target[k->n], sizeof k->target[0], "%s", target);
    k->ptx[k->n++] = is_ptx;
}

static kc_entry *get_entry(const kc_graph_info *info, const char *variant) {
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, info->key), KC_OK);
    kc_entry *e;
    if (kc_cache_get(cache, &k, variant, &e) != KC_OK) fail_msg("no entry %s.%s", info->key, variant);
    if (kc_entry_resolve(cache, e) != KC_OK) fail_msg("entry %s.%s: %s", info->key, variant, kc_error_last()->message);
    return e;
}

static void test_every_graph_compiles_for_every_target(void **state) {
    (void)state;
    const char *specs[] = {"mlp_block.json",    "layer_norm.json",   "softmax.json",
                           "softmax_xent.json", "add_mul_gelu.json", "dropout.json"};
    const char *targets[] = {"sm_80", "sm_90", "compute_80"};
    char xdir[600];
    snprintf(xdir, sizeof xdir, "%s/extract", dir);
    for (size_t s = 0; s < 6; s++) {
        kc_graph_desc *d = load(specs[s]);
        for (size_t t = 0; t < 3; t++) {
            kc_graph_info info = KC_GRAPH_INFO_INIT;
            int rc = kc_graph_compile(cache, d, targets[t], &info);
            if (rc) fail_msg("%s for %s: %s", specs[s], targets[t], kc_error_last()->message);
            assert_int_equal(info.source, KC_FROM_COMPILE);
            kc_entry *e = get_entry(&info, targets[t]);
            kl k = {.n = 0};
            assert_int_equal(kc_entry_kernels(e, collect, &k), KC_OK);
            assert_int_equal(k.n, info.kernels);
            int n;
            assert_int_equal(kc_entry_extract(e, xdir, &n), KC_OK);
            assert_int_equal(n, k.n);
            for (int i = 0; i < k.n; i++) {
                assert_string_equal(k.target[i], targets[t]);
                assert_int_equal(k.ptx[i], t == 2);
                char base[128], path[1024];
                snprintf(base, sizeof base, "%s", k.lowered[i]);
                for (char *p = base; *p; p++)
                    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                          *p == '_'))
                        *p = '_';
                snprintf(path, sizeof path, "%s/%s.%s.%s", xdir, base, targets[t], t == 2 ? "ptx" : "cubin");
                size_t len;
                uint8_t *img = kct_read(path, &len);
                assert_non_null(img);
                if (t == 2) {
                    char entry[200];
                    snprintf(entry, sizeof entry, ".entry %s", k.lowered[i]);
                    assert_non_null(strstr((char *)img, entry));
                } else {
                    assert_int_equal(kc_elf_machine(img, len), 190);
                    if (kc_elf_has_function(img, len, k.lowered[i]) != 1)
                        fail_msg("%s: %s lacks %s", specs[s], path, k.lowered[i]);
                }
                free(img);
            }
            kc_entry_free(e);
        }
        kc_graph_desc_free(d);
    }
    kc_stats st;
    kc_cache_stats(cache, &st);
    assert_int_equal(st.v[KC_STAT_COMPILES], 18);
    assert_int_equal(kct_count_graphs(dir), 18);
    /* Each unit compiled once per target — but elementwise.cu once more for add_mul_gelu, whose names
     * mlp_block's compile did not record ([Note: recorded names]): its record stored again, with both
     * graphs' names — as many unit records as NVRTC programs less those 3, no more images. */
    assert_int_equal(kct_count_files(dir, ".unit.kce") + 3, st.v[KC_STAT_UNIT_COMPILES]);
    assert_true(kct_count_files(dir, ".img.kce") <= st.v[KC_STAT_UNIT_COMPILES]);
    assert_int_equal(st.v[KC_STAT_ENTRIES], kct_count_files(dir, ".kce"));
}

static void test_second_lookup_is_a_disk_hit(void **state) {
    (void)state;
    kc_graph_desc *d = load("layer_norm.json");
    kc_graph_info a = KC_GRAPH_INFO_INIT, b = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &a), KC_OK);
    assert_int_equal(a.source, KC_FROM_COMPILE);
    assert_true(a.compile_ms > 0);
    kc_entry *e1 = get_entry(&a, "sm_90");
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &b), KC_OK);
    assert_int_equal(b.source, KC_FROM_DISK);
    assert_string_equal(a.key, b.key);
    assert_true(b.compile_ms == 0);
    kc_entry *e2 = get_entry(&b, "sm_90");
    const void *p1, *p2;
    size_t l1, l2;
    assert_int_equal(kc_entry_section(e1, KC_SECTION_KERNELS, &p1, &l1), KC_OK);
    assert_int_equal(kc_entry_section(e2, KC_SECTION_KERNELS, &p2, &l2), KC_OK);
    assert_int_equal(l1, l2);
    assert_memory_equal(p1, p2, l1);
    kc_stats st;
    kc_cache_stats(cache, &st);
    assert_int_equal(st.v[KC_STAT_COMPILES], 1);
    kc_entry_free(e1);
    kc_entry_free(e2);
    kc_graph_desc_free(d);
}

static kc_graph_desc *one_kernel(const char *src, const char *file) {
    kc_graph_desc *d;
    kc_graph_desc_new(&d, "one");
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, file, src, "k", NULL, 0, NULL, 0, NULL, 0};
    int rc = kc_graph_add_kernel(d, &k, NULL);
    assert_int_equal(rc, KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *grid[] = {"ceildiv(N, 128)", "1", "1"}, *block[] = {"128", "1", "1"}, *args[] = {"input:0", "e32:N"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2), KC_OK);
    return d;
}

/* A step is one allocation (its argument array and every string it holds), however many
 * arguments it takes; one that fails to allocate leaves no step behind, and the steps read back. */
static void test_a_step_is_one_allocation(void **state) {
    (void)state;
    kc_graph_desc *d = one_kernel("extern \"C\" __global__ void k(float *x, int n) { if (n < 0) x[0] = 1; }\n",
                                  "ok.cu");
    const char *grid[] = {"ceildiv(N, 64)", "2", "1"}, *block[] = {"64", "1", "1"};
    const char *args[] = {"input:0", "e32:N", "i32:1", "i32:2", "i32:3", "i32:4", "i32:5", "i32:6"};
    long n = 1;
    for (;; n++) {
        kc_alloc_fail_at(n, false);
        int rc = kc_graph_add_step(d, KC_PASS_FORWARD, 0, grid, block, "256", args, 8);
        kc_alloc_fail_at(0, false);
        if (rc == KC_OK) break;
        assert_int_equal(rc, KC_ENOMEM);
        assert_true(n < 100);
    }
    if (n - 1 > 2) fail_msg("a step of 8 arguments made %ld allocations (the steps' array, then one block)", n - 1);
    kc_buf b = {0};
    kc_program_encode(d, KC_PASS_FORWARD, &b);
    kc_lprog *p;
    assert_int_equal(kc_program_decode(b.data, b.len, &p), KC_OK);
    assert_int_equal(p->nsteps, 2); /* no half-made step from the failures */
    const pstep *s = &p->steps[1];
    assert_string_equal(s->grid[0], "ceildiv(N, 64)");
    assert_string_equal(s->grid[1], "2");
    assert_string_equal(s->block[0], "64");
    assert_string_equal(s->shared, "256");
    assert_int_equal(s->nargs, 8);
    for (size_t i = 0; i < 8; i++) assert_string_equal(s->args[i], args[i]);
    kc_lprog_free(p);
    kc_buf_free(&b);
    kc_graph_desc_free(d);
}

static void test_time_macros_bypass_the_store(void **state) {
    (void)state;
    kc_graph_desc *d = one_kernel("extern \"C\" __global__ void k(float *x, int n) {\n"
                                  "  const char *t = __TIME__; if (n < 0) x[0] = t[0]; }\n",
                                  "t.cu");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_BYPASS);
    assert_non_null(strstr(info.miss_reason, "__TIME__"));
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK); /* compiled again, never stored */
    assert_int_equal(info.source, KC_FROM_BYPASS);
    kc_stats st;
    kc_cache_stats(cache, &st);
    assert_int_equal(st.v[KC_STAT_BYPASSES], 2);
    assert_int_equal(st.v[KC_STAT_ENTRIES], 0);
    assert_int_equal(kct_count_files(dir, ".kce"), 0);
    kc_graph_desc_free(d);
}

/* A description found cacheable remembers it; a kernel added afterwards is scanned (never a stale "cacheable"). */
static void test_a_kernel_added_after_a_hit_is_scanned(void **state) {
    (void)state;
    kc_graph_desc *d = one_kernel("extern \"C\" __global__ void k(float *x, int n) { if (n < 0) x[0] = 1; }\n",
                                  "ok.cu");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_DISK);
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION,
                       "t2.cu",
                       "extern \"C\" __global__ void k2(float *x) { const char *t = __DATE__; x[0] = t[0]; }\n",
                       "k2",
                       NULL,
                       0,
                       NULL,
                       0,
                       NULL,
                       0};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_BYPASS);
    assert_non_null(strstr(info.miss_reason, "__DATE__"));
    assert_int_equal(kc_graph_add_hook(d, "h", NULL), KC_OK);
    kc_graph_desc_free(d);
    /* A saved-tensor hook without a cache hash: its code is in no key, so the graph is never stored. */
    d = one_kernel("extern \"C\" __global__ void k(float *x, int n) { if (n < 0) x[0] = 2; }\n", "hook.cu");
    assert_int_equal(kc_graph_add_hook(d, "unhashed", NULL), KC_OK);
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_BYPASS);
    assert_non_null(strstr(info.miss_reason, "hook"));
    kc_graph_desc_free(d);
}

static void test_compile_error_carries_the_log(void **state) {
    (void)state;
    kc_graph_desc *d = one_kernel("extern \"C\" __global__ void k(float *x, int n) {\n  x[0] = nope;\n}\n",
                                  "broken.cu");
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_ECOMPILE);
    const char *m = kc_error_last()->message;
    assert_non_null(strstr(m, "broken.cu(2)"));
    assert_non_null(strstr(m, "nope"));
    kc_stats st;
    kc_cache_stats(cache, &st);
    assert_int_equal(st.v[KC_STAT_COMPILE_ERRORS], 1);
    assert_int_equal(st.v[KC_STAT_ENTRIES], 0);
    kc_graph_desc_free(d);
}

static void test_without_a_driver(void **state) {
    (void)state;
    if (kc_cuda_available() == KC_OK) skip(); /* a GPU host: covered by test_driver's child */
    kc_graph_desc *d = load("softmax.json");
    kc_graph *g = (kc_graph *)0x1;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_get(cache, d, 0, &g, &info), KC_ENODRIVER);
    assert_null(g);
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    kc_graph_desc_free(d);
}

/* Two kernels of one source with one header each, toolkit_headers on kernel b; `change` alters one
 * thing (10: nothing). */
static kc_graph_desc *two_kernels(int change) {
    static const char *const src = "#include \"h.h\"\nextern \"C\" __global__ void a(float *x) { x[0] = H; }\n"
                                   "extern \"C\" __global__ void b(float *x) { x[0] = -H; }\n";
    kc_header_src h = {change == 3 ? "g.h" : "h.h", change == 4 ? "#define H 2.0f\n" : "#define H 1.0f\n"};
    const char *fast[] = {"-use_fast_math"};
    kc_graph_desc *d;
    kc_graph_desc_new(&d, "two");
    kc_kernel_src ka = {KC_KERNEL_SRC_VERSION,
                        change == 5 ? "other.cu" : "ab.cu",
                        src,
                        "a",
                        &h,
                        1,
                        change == 2 ? fast : NULL,
                        change == 2 ? 1 : 0,
                        NULL,
                        change <= 1 ? KC_KERNEL_TOOLKIT_HEADERS : 0};
    kc_kernel_src kb = {
        KC_KERNEL_SRC_VERSION, "ab.cu", src, "b", &h, 1, NULL, 0, NULL, change == 0 ? 0 : KC_KERNEL_TOOLKIT_HEADERS};
    assert_int_equal(kc_graph_add_kernel(d, &ka, NULL), KC_OK);
    assert_int_equal(kc_graph_add_kernel(d, &kb, NULL), KC_OK);
    if (change == 6) assert_int_equal(kc_graph_add_hook(d, "hook", "hash-1"), KC_OK);
    if (change == 7) assert_int_equal(kc_graph_add_hook(d, "hook", "hash-2"), KC_OK);
    if (change == 8) kc_graph_set_globals(d, 1);
    if (change == 9) assert_int_equal(kc_graph_set_backend(d, "other"), KC_OK);
    if (change == 11) assert_int_equal(kc_graph_add_wrapper(d, "cuda_graph", 1, "8", 1), KC_OK);
    if (change == 12) assert_int_equal(kc_graph_add_wrapper(d, "cuda_graph", 1, "9", 1), KC_OK);
    return d;
}

/* Each thing a kernel brings is in the key on its own, with everything else the same: a per-kernel
 * flag where it is (toolkit_headers moved from kernel b to kernel a: the toolkit's digest, in the
 * key once, is the same), its options, its header's name and text, its file name; and the graph's
 * hooks' hashes, global state, backend and wrappers.  Every description keys differently from every other. */
static void test_each_kernel_component_is_in_the_key(void **state) {
    (void)state;
    enum { N = 13 };
    static const char *const what[N] = {"the flag moved to kernel a",
                                        "the flag on both kernels",
                                        "an option",
                                        "the header's name",
                                        "the header's text",
                                        "the file name",
                                        "a hook",
                                        "the hook's hash",
                                        "the globals",
                                        "the backend",
                                        "nothing changed",
                                        "a wrapper",
                                        "the wrapper's parameters"};
    kc_key k[N];
    for (int c = 0; c < N; c++) {
        kc_graph_desc *d = two_kernels(c);
        if (kc_graph_key(d, &k[c], NULL) != KC_OK) fail_msg("%s: %s", what[c], kc_error_last()->message);
        kc_graph_desc_free(d);
    }
    for (int a = 0; a < N; a++)
        for (int b = a + 1; b < N; b++)
            if (memcmp(k[a].bytes, k[b].bytes, 16) == 0) fail_msg("%s and %s: the same key", what[a], what[b]);
}

static void test_key_components(void **state) {
    (void)state;
    kc_graph_desc *a = one_kernel("extern \"C\" __global__ void k(float *x, int n) {}\n", "k.cu");
    kc_key ka, kb;
    assert_int_equal(kc_graph_key(a, &ka, NULL), KC_OK);
    /* The same description twice: the same key. */
    kc_graph_desc *b = one_kernel("extern \"C\" __global__ void k(float *x, int n) {}\n", "k.cu");
    assert_int_equal(kc_graph_key(b, &kb, NULL), KC_OK);
    assert_memory_equal(ka.bytes, kb.bytes, 16);
    kc_graph_desc_free(b);
    /* An option, the source, the backend: each changes it. */
    kc_graph_desc *c;
    kc_graph_desc_new(&c, "one");
    const char *opts[] = {"-use_fast_math"};
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION,
                       "k.cu",
                       "extern \"C\" __global__ void k(float *x, int n) {}\n",
                       "k",
                       NULL,
                       0,
                       opts,
                       1,
                       NULL,
                       0};
    kc_graph_add_kernel(c, &k, NULL);
    const char *sizes[] = {"N"};
    kc_graph_add_input(c, KC_DTYPE_F32, 1, sizes, NULL, 0);
    const char *grid[] = {"ceildiv(N, 128)", "1", "1"}, *block[] = {"128", "1", "1"}, *args[] = {"input:0", "e32:N"};
    kc_graph_add_step(c, KC_PASS_FORWARD, 0, grid, block, NULL, args, 2);
    kc_key kc;
    assert_int_equal(kc_graph_key(c, &kc, NULL), KC_OK);
    assert_memory_not_equal(ka.bytes, kc.bytes, 16);
    kc_graph_set_backend(c, "other");
    kc_key kd;
    kc_graph_key(c, &kd, NULL);
    assert_memory_not_equal(kc.bytes, kd.bytes, 16);
    kc_graph_desc_free(c);
    /* The architecture is not in the key: both variants live under one key. */
    kc_graph_info i80 = KC_GRAPH_INFO_INIT, i90 = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, a, "sm_80", &i80), KC_OK);
    assert_int_equal(kc_graph_compile(cache, a, "sm_90", &i90), KC_OK);
    assert_string_equal(i80.key, i90.key);
    kc_graph_desc_free(a);
}

/* A spec's kernels share their source and header: each file is opened once per load (the 4th
 * open from now fails; a load that read a file per kernel would need 7). */
static void test_a_spec_reads_each_file_once(void **state) {
    (void)state;
    char p[600];
    static const char cu[] = "#include \"h.cuh\"\n"
                             "extern \"C\" __global__ void a(float *x) { x[0] = H; }\n"
                             "extern \"C\" __global__ void b(float *x) { x[0] = 2 * H; }\n"
                             "extern \"C\" __global__ void c(float *x) { x[0] = 3 * H; }\n";
    snprintf(p, sizeof p, "%s/abc.cu", dir);
    assert_int_equal(kct_write(p, cu, strlen(cu)), 0);
    snprintf(p, sizeof p, "%s/h.cuh", dir);
    assert_int_equal(kct_write(p, "#define H 1.0f\n", 15), 0);
    static const char spec[] =
        "{\"name\": \"abc\", \"headers\": [\"h.cuh\"], \"kernels\": ["
        "{\"file\": \"abc.cu\", \"entry\": \"a\"}, {\"file\": \"abc.cu\", \"entry\": \"b\"},"
        " {\"file\": \"abc.cu\", \"entry\": \"c\"}], \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [1]}],"
        " \"forward\": [{\"kernel\": \"a\", \"grid\": [1,1,1], \"block\": [1,1,1], \"args\": [\"input:0\"]},"
        " {\"kernel\": \"b\", \"grid\": [1,1,1], \"block\": [1,1,1], \"args\": [\"input:0\"]},"
        " {\"kernel\": \"c\", \"grid\": [1,1,1], \"block\": [1,1,1], \"args\": [\"input:0\"]}]}";
    snprintf(p, sizeof p, "%s/abc.json", dir);
    assert_int_equal(kct_write(p, spec, strlen(spec)), 0);
    /* The 5th open fails: the spec direct mode's memo is looked for first (in the cache opened last:
     * [Note: spec direct mode]), then the three files, each once. */
    kc_fs_fault_set(KC_FS_OPEN, 5, EIO, false);
    kc_graph_desc *d = NULL;
    int rc = kc_graph_desc_load(&d, p);
    long faults = kc_fs_fault_count();
    kc_fs_fault_clear();
    if (rc != KC_OK) fail_msg("load: %s (faults injected: %ld)", kc_error_last()->message, faults);
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_INPUT), 1);
    /* The three kernels have the file's bytes: the graph compiles and hits like any other. */
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(cache, d, "sm_90", &info), KC_OK);
    assert_int_equal(info.kernels, 3);
    kc_graph_desc_free(d);
}

static void test_spec_errors_name_the_place(void **state) {
    (void)state;
    struct {
        const char *json;
        const char *want;
    } cases[] = {
        {"{\"name\": \"x\",\n \"kernels\": [}", ":2:"},
        {"{\"name\": \"x\", \"kernels\": {}}", "kernels: must be an array"}, /* [] is a graph of zero steps only */
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"../etc/passwd\", \"entry\": \"k\"}]}",
         "inside the spec's folder"},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f99\", \"sizes\": [1]}]}",
         "inputs[0]"},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],"
         " \"forward\": [{\"kernel\": \"k\", \"grid\": [\"ceildiv(N,0\", 1, 1], \"block\": [1,1,1], \"args\": []}]}",
         "forward[0]"},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],"
         " \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [1,1,1], \"args\": [\"output:3\"]}]}",
         "output:3"},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\", \"options\": [\"-arch=sm_80\"]}], \"inputs\": []}",
         "variant"},
        /* A misspelt or repeated field is an error, never dropped in silence (it would change the graph). */
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f32\", "
         "\"sizes\": [\"N\"], \"inplce\": true}]}",
         "inputs[0]: unknown field \"inplce\""},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [], \"forwrd\": []}",
         "unknown field \"forwrd\""},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\", \"entyr\": \"j\"}], \"inputs\": []}",
         "kernels[0]: unknown field \"entyr\""},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f32\", "
         "\"sizes\": [\"N\"]}], \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [1,1,1], \"args\": [], "
         "\"shard\": 4096}]}",
         "forward[0]: unknown field \"shard\""},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f32\", "
         "\"sizes\": [\"N\"], \"dtype\": \"f16\"}]}",
         "\"dtype\" appears twice"},
        /* ... at any depth, said by the JSON reader at the second name, with the first's place */
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\", \"file\": \"j.cu\"}], \"inputs\": []}",
         ":1:58: field \"file\" appears twice (first at 1:28; keep one)"},
        /* Places named only when wrong (spec.c builds them for the error): each size, grid and block. */
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f32\", "
         "\"sizes\": [\"N\"]}, {\"dtype\": \"f32\", \"sizes\": [\"N\", true]}]}",
         "inputs[1].sizes[1]: must be an integer"},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f32\", "
         "\"sizes\": 4}]}",
         "inputs[0].sizes: must be an array"},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f32\", "
         "\"sizes\": [\"N\"]}], \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [1,1,1], \"args\": []}, "
         "{\"kernel\": \"k\", \"grid\": [1, 1.5, 1], \"block\": [1,1,1], \"args\": []}]}",
         "forward[1].grid[1]: must be an integer"},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f32\", "
         "\"sizes\": [\"N\"]}], \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [1,1,null], \"args\": []}]}",
         "forward[0].block[2]: must be an integer"},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": [{\"dtype\": \"f32\", "
         "\"sizes\": [\"N\"], \"inplace\": 1}]}",
         "inputs[0].inplace: \"inplace\" must be true or false"},
        /* JSON read strictly ([Note: spec JSON]): a \u0000 would make "k.cu\u0000/x" the file k.cu, and
         * whatever follows the spec's object is not dropped in silence. */
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\\u0000/x\", \"entry\": \"k\"}], \"inputs\": []}",
         ":1:47: not valid JSON"},
        {"{\"name\": \"x\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}], \"inputs\": []}\n{\"name\": \"y\"}",
         ":2:1: not valid JSON"},
    };
    char sp[600], kp[600];
    snprintf(kp, sizeof kp, "%s/k.cu", dir);
    kct_write(kp, "extern \"C\" __global__ void k() {}\n", 34);
    snprintf(sp, sizeof sp, "%s/spec.json", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kct_write(sp, cases[i].json, strlen(cases[i].json));
        kc_graph_desc *d;
        assert_int_equal(kc_graph_desc_load(&d, sp) == KC_OK, 0);
        const char *m = kc_error_last()->message;
        if (!strstr(m, "spec.json") || !strstr(m, cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, m, cases[i].want);
    }
}

/* A spec with one kernel, one input of size N, and one forward step taking `nargs` arguments
 * "i32:1" (and `nscratch` scratch buffers), written to <dir>/caps.json. */
static void write_caps_spec(const char *sp, int nargs, int nscratch) {
    size_t cap = 256 + (size_t)nargs * 10 + (size_t)nscratch * 6;
    char *j = malloc(cap);
    size_t o = (size_t)snprintf(j, cap,
                                "{\"name\": \"caps\", \"kernels\": [{\"file\": \"k.cu\", \"entry\": \"k\"}],"
                                " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],"
                                " \"forward\": {\"scratch\": [");
    for (int i = 0; i < nscratch; i++) o += (size_t)snprintf(j + o, cap - o, "%s16", i ? ", " : "");
    o += (size_t)snprintf(j + o, cap - o,
                          "], \"steps\": [{\"kernel\": \"k\", \"grid\": [1,1,1], \"block\": [1,1,1], \"args\": [");
    for (int i = 0; i < nargs; i++) o += (size_t)snprintf(j + o, cap - o, "%s\"i32:1\"", i ? ", " : "");
    o += (size_t)snprintf(j + o, cap - o, "]}]}}");
    kct_write(sp, j, o);
    free(j);
}

/* Issue 15 item 4: a spec must not accept what the loader later rejects (a step with 257
 * arguments compiled and stored, then its launch program was "malformed" on load), and loading
 * is linear with a cap on every array (100k step arguments took 12 s). */
static void test_spec_caps_match_the_launch_program(void **state) {
    (void)state;
    char sp[600], kp[600];
    snprintf(kp, sizeof kp, "%s/k.cu", dir);
    kct_write(kp, "extern \"C\" __global__ void k() {}\n", 34);
    snprintf(sp, sizeof sp, "%s/caps.json", dir);
    /* 256 arguments: accepted, and the launch program it stores reads back. */
    write_caps_spec(sp, 256, 1);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, sp) != KC_OK) fail_msg("%s", kc_error_last()->message);
    kc_buf b = {0};
    kc_program_encode(d, KC_PASS_FORWARD, &b);
    kc_lprog *p;
    assert_int_equal(kc_program_decode(b.data, b.len, &p), KC_OK);
    kc_lprog_free(p);
    kc_buf_free(&b);
    kc_graph_desc_free(d);
    /* 257: refused at load, naming the place and the limit; the builder refuses it too. */
    write_caps_spec(sp, 257, 1);
    assert_int_equal(kc_graph_desc_load(&d, sp), KC_EINVAL);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "forward[0]") || !strstr(m, "256")) fail_msg("'%s'", m);
    /* 100k arguments: refused as quickly (a linear count, not a quadratic walk). */
    write_caps_spec(sp, 100000, 1);
    uint64_t t0 = kc_now_ns();
    assert_int_equal(kc_graph_desc_load(&d, sp), KC_EINVAL);
    assert_true(kc_now_ns() - t0 < 5000000000ull);
    /* More scratch buffers than a launch program holds: refused at load. */
    write_caps_spec(sp, 1, 4097);
    assert_int_equal(kc_graph_desc_load(&d, sp), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "4096"));
    /* The builders enforce the same limits. */
    assert_int_equal(kc_graph_desc_new(&d, "caps"), KC_OK);
    kc_kernel_src k = KC_KERNEL_SRC_INIT;
    k.file = "k.cu";
    k.source = "extern \"C\" __global__ void k() {}";
    k.name = "k";
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *one[3] = {"1", "1", "1"};
    const char *args[257];
    for (int i = 0; i < 257; i++) args[i] = "i32:1";
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, one, one, NULL, args, 257), KC_EINVAL);
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, one, one, NULL, args, 256), KC_OK);
    /* Default strides are products of the later sizes, whole however long (a 512-byte buffer
     * truncated them into another expression). */
    char a[301], bsym[301], want[700];
    memset(a, 'a', 300), a[300] = 0;
    memset(bsym, 'b', 300), bsym[300] = 0;
    const char *sizes[3] = {"N", a, bsym};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 3, sizes, NULL, 0), KC_OK);
    kc_buf pb = {0};
    kc_program_encode(d, KC_PASS_FORWARD, &pb);
    kc_lprog *prog;
    assert_int_equal(kc_program_decode(pb.data, pb.len, &prog), KC_OK);
    snprintf(want, sizeof want, "%s*%s", bsym, a); /* stride[1] * size[1] */
    assert_string_equal(kc_program_tensor(prog, KC_ROLE_INPUT, 0)->strides[0], want);
    kc_lprog_free(prog);
    kc_buf_free(&pb);
    for (int i = 0; i < 64; i++) assert_int_equal(kc_graph_add_wrapper(d, "w", (uint32_t)i, NULL, 0), KC_OK);
    assert_int_equal(kc_graph_add_wrapper(d, "w", 64, NULL, 0), KC_EINVAL); /* wrapper.c reads at most 64 */
    kc_graph_desc_free(d);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_every_graph_compiles_for_every_target),
        T(test_second_lookup_is_a_disk_hit),
        T(test_a_step_is_one_allocation),
        T(test_time_macros_bypass_the_store),
        T(test_a_kernel_added_after_a_hit_is_scanned),
        T(test_compile_error_carries_the_log),
        T(test_without_a_driver),
        T(test_spec_caps_match_the_launch_program),
        T(test_key_components),
        T(test_each_kernel_component_is_in_the_key),
        T(test_a_spec_reads_each_file_once),
        T(test_spec_errors_name_the_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

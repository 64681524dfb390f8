/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pch_reads.c — a compile that used a precompiled header gets its toolkit direct manifest
 * ([Note: a PCH's reads] in src/compile/toolkit.h): the headers NVRTC read from the PCH file are
 * the ones its creating compile read, credited to the using compile's watch.  Two graphs sharing
 * one header set compiled in one process (the first makes the PCH, the second uses it): both
 * record a manifest, a later process takes the digest without walking; a header only the PCH's
 * creation read, edited in place (same size, mtime put back), is a walk and a compile — from the
 * manifest and from the reads the entry carries; a PCH made under no watch, or a use on a thread
 * with no watch, records nothing; the two units of one graph, compiled together on the pool (one
 * makes the PCH, one uses it), record their graph's manifest.  A small toolkit of our own, real
 * NVRTC (>= 12.8 for PCH; skipped without); every compile and lookup in a fresh child process (the
 * digest, the direct mode and the PCH are per process).
 */
#include "helpers.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "compile/pch.h"
#include "compile/toolkit.h"
#include "kcache.h"

static char *tmp;
KCT_TMPDIR_FIXTURE(tmp, "tkprecomp") /* no "pch" in -I: pch_off.c refuses such options */

/* The header only the PCH's creation reads (the prefix both kernels share), and one outside it. */
#define PCH_ONLY "#define pval 7\n"
#define SRC_A "#include <pchonly.h>\nextern \"C\" __global__ void ka(float *x) { x[0] = (float)pval; }\n"
#define SRC_B "#include <pchonly.h>\nextern \"C\" __global__ void kb(float *x) { x[0] = 2.f * (float)pval; }\n"

static void make_toolkit(char tk[4096]) {
    snprintf(tk, 4096, "%s/tk", tmp);
    mkdir(tk, 0700);
    assert_int_equal(kct_put(tk, "cuda_fp16.h", "// fp16\n"), 0);
    assert_int_equal(kct_put(tk, "pchonly.h", PCH_ONLY), 0);
    assert_int_equal(kct_put(tk, "unread.h", "// no kernel includes this\n"), 0);
    assert_int_equal(kct_put(tk, "cccl/cccl.h", "// a cccl folder: without one, no PCH (pch_off.c)\n"), 0);
    struct timespec t = {2, 200000000}; /* settled ([Note: too new to vouch for]) */
    nanosleep(&t, NULL);
}

static kc_kernel_src kernel(int b) {
    kc_kernel_src k = {
        KC_KERNEL_SRC_VERSION,    b ? "b.cu" : "a.cu", b ? SRC_B : SRC_A, b ? "kb" : "ka", NULL, 0, NULL, 0, NULL,
        KC_KERNEL_TOOLKIT_HEADERS};
    return k;
}

/* Graph "a" or "b" (b 0 or 1): the one kernel; "ab" (b 2): both, two compile units. */
static kc_graph_desc *graph(int b) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, b == 2 ? "ab" : b ? "b" : "a"), KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *one[] = {"1", "1", "1"}, *args[] = {"input:0"};
    for (int i = 0; i < (b == 2 ? 2 : 1); i++) {
        kc_kernel_src k = kernel(b == 2 ? i : b);
        assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
        assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, i, one, one, NULL, args, 1), KC_OK);
    }
    return d;
}

/* In a child: the cache of this test with the toolkit `tk`. */
static kc_cache *child_cache(const char *tk) {
    setenv("KCACHE_CUDA_INCLUDE", tk, 1);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/cache", tmp);
    kc_options opt = KC_OPTIONS_INIT;
    opt.dir = dir;
    opt.flags = KC_OPEN_NO_ENV;
    kc_cache *c = NULL;
    if (kc_cache_open(&c, &opt) != KC_OK) _exit(10);
    return c;
}

/* What a child saw: its last rc, the PCH files it made and used, its walks, and its last lookup. */
typedef struct seen {
    int rc, created, used, walks, source;
    long hits, misses;
    char key[KC_KEY_HEX_LEN + 1];
} seen;

enum { BOTH, LOOKUP_A, LOOKUP_B, UNWATCHED_MAKER, UNWATCHED_USER, ONE_GRAPH };

static void *compile_b_alone(void *p) {
    kc_kernel_src k = kernel(1);
    const char *names[] = {"kb"};
    kc_compiled *out = NULL;
    *(int *)p = kc_compile_names(&k, names, 1, "sm_80", &out);
    kc_compiled_free(out);
    return NULL;
}

/* A watch of our own on this thread while another thread (no watch) uses the PCH: its manifest
 * `name` is not written; one more with no use is (the test can fail). */
static int watch_around_unwatched_use(void) {
    char memo[4096];
    snprintf(memo, sizeof memo, "%s/cache/v1/toolkits", tmp);
    kc_toolkit_watch *w = NULL;
    kc_toolkit_watch_begin(&w);
    if (!w) return -1;
    pthread_t th;
    int rc = -1;
    if (pthread_create(&th, NULL, compile_b_alone, &rc) != 0) return -1;
    pthread_join(th, NULL);
    char *reads = NULL;
    kc_toolkit_watch_end(w, memo, "direct-used-elsewhere", 1, &reads);
    if (reads) return -2; /* no reads carried either */
    kc_toolkit_watch_begin(&w);
    kc_toolkit_watch_end(w, memo, "direct-control", 1, &reads);
    free(reads);
    return rc;
}

/* The child's work: `what`, with a header set's first compile making its PCH (as a prewarm's burst
 * does for a set it expects twice). */
static void child_work(int what, kc_cache *c, seen *s) {
    kc_stats s0 = {{0}}, s1 = {{0}};
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_pch_burst_(1);
    kc_pch_test_set_(-1, 1);
    kc_cache_stats(c, &s0);
    if (what == UNWATCHED_MAKER) { /* the PCH made outside any graph's compile: under no watch */
        kc_kernel_src k = kernel(0);
        const char *names[] = {"ka"};
        kc_compiled *out = NULL;
        s->rc = kc_compile_names(&k, names, 1, "sm_80", &out);
        kc_compiled_free(out);
    }
    if (what == ONE_GRAPH) { /* its two units compile together on the pool, one makes the PCH, one uses it */
        kc_graph_desc *d = graph(2);
        s->rc = kc_graph_compile(c, d, "sm_80", &info);
        kc_graph_desc_free(d);
    }
    for (int b = 0; b < 2 && !s->rc && what != ONE_GRAPH; b++) {
        if ((what == LOOKUP_A && b) || (what == LOOKUP_B && !b) || (what == UNWATCHED_MAKER && !b)) continue;
        kc_graph_desc *d = graph(b);
        s->rc = kc_graph_compile(c, d, "sm_80", &info);
        kc_graph_desc_free(d);
        if (what == UNWATCHED_USER) break;
    }
    if (what == UNWATCHED_USER && !s->rc) s->rc = watch_around_unwatched_use();
    kc_cache_stats(c, &s1);
    kc_pch_stats ps;
    kc_pch_stats_(&ps);
    s->created = (int)ps.created, s->used = (int)ps.used, s->walks = kc_toolkit_walks_();
    s->source = (int)info.source;
    s->hits = (long)(s1.v[KC_STAT_HITS] - s0.v[KC_STAT_HITS]);
    s->misses = (long)(s1.v[KC_STAT_MISSES] - s0.v[KC_STAT_MISSES]);
    snprintf(s->key, sizeof s->key, "%s", info.key[0] ? info.key : "-");
}

static seen in_child(const char *tk, int what) {
    seen s = {-1, -1, -1, -1, -1, -1, -1, ""};
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        kc_cache *c = child_cache(tk);
        seen r = {0, 0, 0, 0, 0, 0, 0, ""};
        child_work(what, c, &r);
        if (r.rc) fprintf(stderr, "child: %s\n", kc_error_last()->message);
        ssize_t w = write(fd[1], &r, sizeof r);
        kc_cache_close(c);
        kc_pch_cleanup_(); /* _exit runs no atexit */
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    ssize_t r = read(fd[0], &s, sizeof s);
    close(fd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_int_equal(r, (ssize_t)sizeof s);
    return s;
}

static size_t manifests(void) {
    char memo[4096];
    snprintf(memo, sizeof memo, "%s/cache/v1/toolkits", tmp);
    return kct_count_files(memo, "direct-");
}

/* How many manifests list `rel` as a file read. */
static int manifests_listing(const char *rel) {
    char memo[4096], cmd[8192];
    snprintf(memo, sizeof memo, "%s/cache/v1/toolkits", tmp);
    snprintf(cmd, sizeof cmd, "grep -l '^f [0-9a-f]* %s$' %s/direct-* 2>/dev/null | wc -l", rel, memo);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p && fscanf(p, "%d", &n) != 1) n = -1;
    if (p) pclose(p);
    return n;
}

/* Both graphs compiled in one process, b with a's PCH; skipped where NVRTC has no PCH. */
static seen both_compiled(char tk[4096]) {
    make_toolkit(tk);
    seen s = in_child(tk, BOTH);
    assert_int_equal(s.rc, KC_OK);
    if (s.created == 0) skip(); /* NVRTC < 12.8, or KCACHE_PCH=0 */
    assert_int_equal(s.created, 1);
    assert_int_equal(s.used, 1); /* b's compile read its headers from the PCH */
    return s;
}

static void test_both_graphs_get_a_manifest_and_no_walk(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    (void)both_compiled(tk);
    assert_int_equal(manifests(), 2);
    assert_int_equal(manifests_listing("pchonly.h"), 2); /* b's lists what the PCH's creation read */
    assert_int_equal(manifests_listing("unread.h"), 0);
    for (int what = LOOKUP_A; what <= LOOKUP_B; what++) {
        seen s = in_child(tk, what);
        assert_int_equal(s.rc, KC_OK);
        assert_int_equal(s.source, KC_FROM_DISK);
        assert_int_equal(s.walks, 0); /* the manifest vouched */
        assert_int_equal(s.hits, 1);
    }
}

/* pchonly.h rewritten with the same size, its times put back: the ctime still moves. */
static void edit_pch_only_header(const char *tk) {
    char p[4096];
    snprintf(p, sizeof p, "%s/pchonly.h", tk);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(kct_write(p, "#define pval 8\n", strlen(PCH_ONLY)), 0);
    struct timespec t[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, p, t, 0), 0);
}

/* b's lookup after the edit: a walk, a miss, a compile under another key. */
static void b_walks_and_compiles(const char *tk, const char *old_key) {
    seen s = in_child(tk, LOOKUP_B);
    assert_int_equal(s.rc, KC_OK);
    assert_int_equal(s.walks, 1);
    assert_int_equal(s.source, KC_FROM_COMPILE);
    assert_int_equal(s.misses, 1);
    assert_string_not_equal(s.key, old_key);
}

static void test_a_header_only_the_pch_read_edited_is_a_walk(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    seen s = both_compiled(tk); /* its key: graph b's */
    edit_pch_only_header(tk);
    b_walks_and_compiles(tk, s.key);
}

static void test_the_carried_reads_hold_the_pch_reads(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    seen s = both_compiled(tk);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -f %s/cache/v1/toolkits/direct-*", tmp);
    assert_int_equal(system(cmd), 0);
    seen l = in_child(tk, LOOKUP_B); /* walks, hits, writes the manifest from the entry's reads */
    assert_int_equal(l.walks, 1);
    assert_int_equal(l.source, KC_FROM_DISK);
    assert_int_equal(manifests_listing("pchonly.h"), 1);
    edit_pch_only_header(tk);
    b_walks_and_compiles(tk, s.key);
}

static void test_a_pch_made_under_no_watch_hides_its_reads(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    make_toolkit(tk);
    seen s = in_child(tk, UNWATCHED_MAKER);
    assert_int_equal(s.rc, KC_OK);
    if (s.created == 0) skip();
    assert_int_equal(s.used, 1); /* graph b used the PCH kc_compile_names made */
    assert_int_equal(manifests(), 0);
    seen l = in_child(tk, LOOKUP_B);
    assert_int_equal(l.walks, 1);
    assert_int_equal(l.source, KC_FROM_DISK);
}

static void test_a_use_on_a_thread_without_a_watch_stops_every_watch(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096], p[4200];
    make_toolkit(tk);
    seen s = in_child(tk, UNWATCHED_USER);
    assert_int_equal(s.rc, KC_OK);
    if (s.created == 0) skip();
    assert_int_equal(s.used, 1);
    snprintf(p, sizeof p, "%s/cache/v1/toolkits/direct-used-elsewhere", tmp);
    assert_int_equal(access(p, F_OK), -1);
    snprintf(p, sizeof p, "%s/cache/v1/toolkits/direct-control", tmp);
    assert_int_equal(access(p, F_OK), 0);
}

/* The pool's threads compile under the watch of the graph they compile for (units.c hands it on). */
static void test_two_units_of_one_graph_share_a_pch_under_its_watch(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    make_toolkit(tk);
    seen s = in_child(tk, ONE_GRAPH);
    assert_int_equal(s.rc, KC_OK);
    if (s.created == 0) skip();
    assert_int_equal(s.used, 1);
    assert_int_equal(manifests(), 1);
    assert_int_equal(manifests_listing("pchonly.h"), 1);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_both_graphs_get_a_manifest_and_no_walk),
        T(test_a_header_only_the_pch_read_edited_is_a_walk),
        T(test_the_carried_reads_hold_the_pch_reads),
        T(test_a_pch_made_under_no_watch_hides_its_reads),
        T(test_a_use_on_a_thread_without_a_watch_stops_every_watch),
        T(test_two_units_of_one_graph_share_a_pch_under_its_watch),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_spec_toolkit.c — a description loaded from a spec the spec direct mode vouches for
 * ([Note: spec direct mode] in src/graph/spec_direct.c), whose kernel reads the toolkit's headers
 * ([Note: toolkit direct mode] in src/compile/toolkit.h): in a fresh process, its repeated lookups
 * read the toolkit's direct manifest once, not once a lookup, and still hit the same entry.  A small
 * toolkit of our own, real NVRTC; each step in a fresh child process.
 */
#include "helpers.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include "compile/toolkit.h"
#include "kcache.h"

static char *tmp;
KCT_TMPDIR_FIXTURE(tmp, "spectk")

static const char *SPEC =
    "{\"name\": \"st\", \"kernels\": [{\"id\": \"k\", \"file\": \"k.cu\", \"entry\": \"k\", \"toolkit_headers\": true}],\n"
    " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],\n"
    " \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1],"
    " \"args\": [\"input:0\"]}]}\n";
#define K_SRC "#include <tk_defs.h>\nextern \"C\" __global__ void k(float *x) { x[0] = (float)TK_X; }\n"

/* `lookups` kc_graph_compile of the spec in a fresh process: "rc source walks direct-reads hits"; with
 * `change`, then the toolkit's header edited, a walk of the tree (as another graph's miss makes), and
 * one more kc_graph_compile (its source is the one reported). */
static void in_child(int lookups, int change, int out[5]) {
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        char tk[4096], cache[4096], spec[4096];
        snprintf(tk, sizeof tk, "%s/tk", tmp), snprintf(cache, sizeof cache, "%s/cache", tmp);
        snprintf(spec, sizeof spec, "%s/st.json", tmp);
        setenv("KCACHE_CUDA_INCLUDE", tk, 1);
        kc_options opt = KC_OPTIONS_INIT;
        opt.dir = cache, opt.flags = KC_OPEN_NO_ENV;
        kc_cache *c = NULL;
        kc_graph_desc *d = NULL;
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        kc_stats s0 = {{0}}, s1 = {{0}};
        int rc = kc_cache_open(&c, &opt); /* first: the spec's load finds its memo */
        if (!rc) rc = kc_graph_desc_load(&d, spec);
        if (!rc) rc = kc_cache_stats(c, &s0);
        for (int i = 0; i < lookups && !rc; i++) rc = kc_graph_compile(c, d, "sm_80", &info);
        char digest[33];
        if (change && !rc) rc = kct_put(tk, "tk_defs.h", "#define TK_X 8\n") ? KC_EIO : KC_OK;
        if (change && !rc) rc = kc_toolkit_digest(NULL, 0, digest);
        if (change && !rc) rc = kc_graph_compile(c, d, "sm_80", &info);
        if (!rc) rc = kc_cache_stats(c, &s1);
        if (rc) fprintf(stderr, "child: %s\n", kc_error_last()->message);
        int v[5] = {rc, (int)info.source, kc_toolkit_walks_(), kc_toolkit_direct_reads_(),
                    (int)(s1.v[KC_STAT_HITS] - s0.v[KC_STAT_HITS])};
        ssize_t w = write(fd[1], v, sizeof v);
        kc_graph_desc_free(d);
        kc_cache_close(c);
        _exit(w == (ssize_t)sizeof v ? 0 : 1);
    }
    close(fd[1]);
    assert_int_equal(read(fd[0], out, 5 * sizeof(int)), (ssize_t)(5 * sizeof(int)));
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
}

static void test_repeated_lookups_read_the_manifest_once(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    snprintf(tk, sizeof tk, "%s/tk", tmp);
    assert_int_equal(mkdir(tk, 0700), 0);
    assert_int_equal(kct_put(tk, "cuda_fp16.h", "// fp16\n"), 0);
    assert_int_equal(kct_put(tk, "tk_defs.h", "#define TK_X 7\n"), 0);
    assert_int_equal(kct_put(tmp, "k.cu", K_SRC), 0);
    assert_int_equal(kct_put(tmp, "st.json", SPEC), 0);
    struct timespec t = {2, 200000000}; /* past the window of files too new to vouch for */
    nanosleep(&t, NULL);
    int a[5], b[5];
    in_child(1, 0, a); /* compiles: the spec's memo and the toolkit's manifest written */
    assert_int_equal(a[0], KC_OK);
    assert_int_equal(a[1], KC_FROM_COMPILE);
    in_child(3, 0, b); /* the spec vouched, the toolkit by its manifest: read once for three lookups */
    assert_int_equal(b[0], KC_OK);
    assert_int_equal(b[1], KC_FROM_DISK);
    assert_int_equal(b[2], 0); /* no walk */
    assert_int_equal(b[3], 1);
    assert_int_equal(b[4], 3);
    /* Vouched, remembered, then the header edited and the tree walked in the same process: the walked
     * digest is another, so the remembered key is not used: compiled afresh, never the old kernel. */
    int c[5];
    in_child(2, 1, c);
    assert_int_equal(c[0], KC_OK);
    assert_int_equal(c[1], KC_FROM_COMPILE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_repeated_lookups_read_the_manifest_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

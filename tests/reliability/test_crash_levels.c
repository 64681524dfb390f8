/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_crash_levels.c — crash consistency of the two-level write ([Note: two levels] in
 * kcache/entry.h): a child process compiling graphs — each round a new kernel source (a new unit,
 * a new image), at two static shapes (the second shares the first's unit and image) — is
 * SIGKILLed at a fault point: its nth file-system call (kc_fs_crash_at: every open, read, write,
 * sync, rename and unlink of the store), n different for each kill, armed once the child has
 * committed its first round and said so on a pipe.  No timer: a kill lands at the same step
 * however slow the compile (a loaded machine, a sanitizer), and every child commits a round
 * before it can die.  After every kill: every graph entry in the directory resolves (each image
 * it refers to is there and passes its checks: images are durable before the graph entry is
 * written), every unit record's image is there, verify finds nothing corrupt, every round the
 * child reported committed is still a hit, and a fresh lookup of the round in flight is a hit
 * or a clean miss that compiles and stores it.  Needs NVRTC (compile-only), no GPU.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kcache.h"
#include "helpers.h"

#include "common/fs.h"

#define KILLS 24

static char *dir, *work;

static kc_cache *open_cache(void) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c;
    if (kc_cache_open(&c, &o)) return NULL;
    return c;
}

/* Round r's graph at `rows` rows: its own source (a new unit), "sizes" static. */
static kc_graph_desc *round_graph(int r, int rows) {
    char p[4096], cu[512], spec[1024];
    snprintf(cu, sizeof cu,
             "extern \"C\" __global__ void scale_%d(const float *x, float *y, long long n) {\n"
             "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
             "  if (i < n) y[i] = %d.0f * x[i];\n}\n",
             r, r + 2);
    snprintf(p, sizeof p, "%s/k%d.cu", work, r);
    if (kct_write(p, cu, strlen(cu))) return NULL;
    snprintf(
        spec, sizeof spec,
        "{\"name\": \"crash%d\", \"kernels\": [{\"id\": \"f\", \"file\": \"k%d.cu\", \"entry\": \"scale_%d\"}],\n"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [%d]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [%d]}],\n"
        " \"forward\": [{\"kernel\": \"f\", \"grid\": [1, 1, 1], \"block\": [%d, 1, 1],"
        " \"args\": [\"input:0\", \"output:0\", \"e64:%d\"]}]}\n",
        r, r, r, rows, rows, rows, rows);
    snprintf(p, sizeof p, "%s/g%d_%d.json", work, r, rows);
    if (kct_write(p, spec, strlen(spec))) return NULL;
    kc_graph_desc *d;
    return kc_graph_desc_load(&d, p) == KC_OK ? d : NULL;
}

/* Compile round r at both shapes; 0 when both are stored. */
static int compile_round(kc_cache *c, int r) {
    for (int rows = 64; rows <= 128; rows += 64) {
        kc_graph_desc *d = round_graph(r, rows);
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        int rc = d ? kc_graph_compile(c, d, "sm_90", &info) : -1;
        kc_graph_desc_free(d);
        if (rc != KC_OK) return -1;
    }
    return 0;
}

/* The child: round `first` (nothing armed), said on `fd`; then killed at its nth file-system call from there, each
 * committed round said on `fd` as it returns. */
static void child(int first, long nth, int fd) {
    kc_cache *c = open_cache();
    if (!c) _exit(2);
    for (int r = first;; r++) {
        if (compile_round(c, r) != 0) _exit(3);
        if (write(fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(4);
        if (r == first) kc_fs_crash_at(nth); /* armed once a round is committed */
    }
}

typedef struct check {
    kc_cache *c;
    int graphs, units, bad;
    char why[512];
} check;

static int check_item(const kc_cache_item *it, void *ctx) {
    check *k = ctx;
    kc_entry *e;
    if (kc_cache_peek(k->c, &it->key, it->variant, &e) != KC_OK) return 0; /* verify reports what is corrupt */
    if (strcmp(it->variant, KC_VARIANT_UNIT) == 0) {
        kc_image_ref ref;
        kc_entry *img;
        k->units++;
        if (kc_unit_entry_read(e, &ref, NULL, 0, NULL) != KC_OK ||
            kc_cache_peek(k->c, &ref.id, KC_VARIANT_IMAGE, &img) != KC_OK) {
            k->bad++;
            snprintf(k->why, sizeof k->why, "a unit record whose image is not stored");
        } else {
            kc_entry_free(img);
        }
    } else if (strcmp(it->variant, KC_VARIANT_IMAGE) != 0) {
        k->graphs++;
        if (kc_entry_resolve(k->c, e) != KC_OK) {
            k->bad++;
            snprintf(k->why, sizeof k->why, "a graph entry without its images: %s", kc_error_last()->message);
        }
    }
    kc_entry_free(e);
    return 0;
}

/* Round r is a hit now (both shapes). */
static int round_is_stored(kc_cache *c, int r) {
    for (int rows = 64; rows <= 128; rows += 64) {
        kc_graph_desc *d = round_graph(r, rows);
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        int rc = d ? kc_graph_compile(c, d, "sm_90", &info) : -1;
        kc_graph_desc_free(d);
        if (rc != KC_OK || info.source != KC_FROM_DISK) return 0;
    }
    return 1;
}

static void test_kills_never_leave_a_graph_without_its_images(void **state) {
    (void)state;
    dir = kct_tmpdir("crashlv");
    work = kct_tmpdir("crashlv-src");
    unsigned seed = 4242;
    int first = 0, last_graphs = 0, committed = -1;
    long steps_seen = 0;
    for (int kill_no = 0; kill_no < KILLS; kill_no++) {
        /* Early kills fall on each of the first calls after the armed point; later ones anywhere in the next rounds. */
        long nth = kill_no < 8 ? 1 + kill_no : 1 + (long)(rand_r(&seed) % 160);
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child(first, nth, fds[1]);
        }
        close(fds[1]);
        int r, reported = 0;
        while (read(fds[0], &r, sizeof r) == (ssize_t)sizeof r) committed = r, reported++; /* until the child is gone */
        close(fds[0]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        if (WIFEXITED(st)) fail_msg("kill %d: the child stopped by itself with %d", kill_no, WEXITSTATUS(st));
        if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) fail_msg("kill %d: the child died otherwise", kill_no);
        if (reported == 0) fail_msg("kill %d: the child died before its first round was committed", kill_no);
        steps_seen += nth;
        kc_cache *c = open_cache();
        assert_non_null(c);
        check k = {c, 0, 0, 0, ""};
        assert_int_equal(kc_cache_foreach(c, check_item, &k), KC_OK);
        if (k.bad) fail_msg("after kill %d (call %ld): %s", kill_no, nth, k.why);
        kc_verify_report vr = KC_VERIFY_REPORT_INIT;
        assert_int_equal(kc_cache_verify(c, &vr), KC_OK);
        assert_int_equal(vr.corrupt, 0);
        assert_true(k.graphs >= last_graphs); /* nothing committed is lost */
        last_graphs = k.graphs;
        if (!round_is_stored(c, committed))
            fail_msg("after kill %d: round %d, reported committed, is not a hit", kill_no, committed);
        kc_cache_close(c);
        first = committed + 1 +
                (int)(rand_r(&seed) % 2); /* the next child goes on from here: the round in flight, or past it */
    }
    fprintf(stderr,
            "%d kills at the child's 1st..160th file-system call after its first commit (%ld calls in all); "
            "%d graph entries, each whole with its images\n",
            KILLS, steps_seen, last_graphs);
    assert_true(last_graphs > 0);
    /* The rounds in flight at the kills: a lookup now is a hit or a clean compile, and then whole. */
    kc_cache *c = open_cache();
    for (int r = 0; r < first; r++) {
        kc_graph_desc *d = round_graph(r, 64);
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        assert_non_null(d);
        if (kc_graph_compile(c, d, "sm_90", &info) != KC_OK) fail_msg("round %d: %s", r, kc_error_last()->message);
        assert_true(info.source == KC_FROM_DISK || info.source == KC_FROM_COMPILE);
        kc_graph_desc_free(d);
    }
    check k = {c, 0, 0, 0, ""};
    assert_int_equal(kc_cache_foreach(c, check_item, &k), KC_OK);
    assert_int_equal(k.bad, 0);
    kc_cache_close(c);
    kct_rmtree(dir), kct_rmtree(work);
    free(dir), free(work);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kills_never_leave_a_graph_without_its_images)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

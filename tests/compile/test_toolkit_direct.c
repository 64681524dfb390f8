/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_toolkit_direct.c — the toolkit's direct mode ([Note: toolkit direct mode] in
 * src/compile/toolkit.h): a process whose graph was compiled here finds it without walking
 * the toolkit's tree, and never a stale kernel — a header the graph read edited in place, a
 * header added where NVRTC searched first, a manifest cut short, a graph whose compile unit
 * was reused (its reads unknown), a tree changed only where the graph does not read (the
 * lookup's key moves: counted once, compiled under the walked digest).  A small toolkit
 * of our own, real NVRTC; every lookup in a fresh child process (the digest and the direct
 * mode are per process).
 */
#include "helpers.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <pthread.h>
#include <sys/wait.h>

#include "compile/toolkit.h"
#include "double/cuda_double.h"
#include "kcache.h"

static char *tmp;
KCT_TMPDIR_FIXTURE(tmp, "tkdirect")

static void put(const char *dir, const char *rel, const char *text) { assert_int_equal(kct_put(dir, rel, text), 0); }

/* A toolkit include folder: cuda_fp16.h marks one; the graph reads crt/host_defines.h and
 * shadow.h, found in cccl/ after include/ (NVRTC is given both, in that order). */
static void make_toolkit(const char *dir) {
    mkdir(dir, 0700);
    put(dir, "cuda_fp16.h", "// fp16\n");
    put(dir, "crt/host_defines.h", "#define X 1\n");
    put(dir, "cccl/shadow.h", "#define Y 10\n");
    put(dir, "unread.h", "// no kernel includes this\n");
    put(dir, "hi.h", "#define Z 90\n");
    put(dir, "lo.h", "#define Z 80\n");
}

#define K_SRC                                              \
    "#include <crt/host_defines.h>\n#include <shadow.h>\n" \
    "extern \"C\" __global__ void k(float *x) { x[0] = (float)(X + Y); }\n"
#define K2_SRC "extern \"C\" __global__ void k2(float *x) { x[0] = 2.f; }\n"
/* What it reads depends on the target, as in CCCL and in real kernels. */
#define K_ARCH_SRC                                                                \
    "#if __CUDA_ARCH__ >= 860\n#include <hi.h>\n#else\n#include <lo.h>\n#endif\n" \
    "extern \"C\" __global__ void k(float *x) { x[0] = (float)Z; }\n"

/* Graph "a" (ONE): the toolkit kernel alone.  Graph "b" (TWO): the same kernel (the same compile
 * unit) and a second one, so that after "a" its toolkit unit is found stored, not compiled.
 * Graph "c" (ARCH): a kernel whose includes depend on __CUDA_ARCH__. */
enum { ONE, TWO, ARCH };
static kc_graph_desc *graph(int kind) {
    int two = kind == TWO;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, kind == ARCH ? "c" : two ? "b" : "a"), KC_OK);
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION,    "k.cu", kind == ARCH ? K_ARCH_SRC : K_SRC, "k", NULL, 0, NULL, 0, NULL,
                       KC_KERNEL_TOOLKIT_HEADERS};
    assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    const char *sizes[] = {"N"};
    assert_int_equal(kc_graph_add_input(d, KC_DTYPE_F32, 1, sizes, NULL, 0), KC_OK);
    const char *one[] = {"1", "1", "1"}, *args[] = {"input:0"};
    assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 0, one, one, NULL, args, 1), KC_OK);
    if (two) {
        kc_kernel_src k2 = {KC_KERNEL_SRC_VERSION, "k2.cu", K2_SRC, "k2", NULL, 0, NULL, 0, NULL, 0};
        assert_int_equal(kc_graph_add_kernel(d, &k2, NULL), KC_OK);
        assert_int_equal(kc_graph_add_step(d, KC_PASS_FORWARD, 1, one, one, NULL, args, 1), KC_OK);
    }
    return d;
}

typedef struct outcome {
    int rc, source, walks;
    long misses, hits; /* this lookup's counts */
    char key[KC_KEY_HEX_LEN + 1];
} outcome;

/* One kc_graph_compile of graph a (or b) for `target`, in a fresh process with toolkit `inc`. */
static outcome lookup_in_child(const char *inc, int two, const char *target) {
    outcome o = {-1, -1, -1, -1, -1, ""};
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        setenv("KCACHE_CUDA_INCLUDE", inc, 1);
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/cache", tmp);
        kc_options opt = KC_OPTIONS_INIT;
        opt.dir = dir;
        opt.flags = KC_OPEN_NO_ENV;
        kc_cache *c = NULL;
        kc_stats s0 = {{0}}, s1 = {{0}};
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        kc_graph_desc *d = graph(two);
        int rc = kc_cache_open(&c, &opt);
        if (!rc) rc = kc_cache_stats(c, &s0);
        if (!rc && strncmp(target, "dev:", 4) == 0) { /* kc_graph_get on the driver double's device */
            char caps[8];
            snprintf(caps, sizeof caps, "%.3s", target + 4);
            if (kcd_set_devices(caps) != 0) rc = KC_EINVAL;
            if (strstr(target, ":refuse")) kcd_refuse_next(1, CUDA_ERROR_NO_BINARY_FOR_GPU); /* the first load */
            kc_graph *g = NULL;
            if (!rc) rc = kc_graph_get(c, d, 0, &g, &info);
            kc_graph_release(g);
        } else if (!rc) {
            rc = kc_graph_compile(c, d, target, &info);
        }
        if (!rc) rc = kc_cache_stats(c, &s1);
        char line[256];
        snprintf(line, sizeof line, "%d %d %d %ld %ld %s", rc, (int)info.source, kc_toolkit_walks_(),
                 (long)(s1.v[KC_STAT_MISSES] - s0.v[KC_STAT_MISSES]), (long)(s1.v[KC_STAT_HITS] - s0.v[KC_STAT_HITS]),
                 info.key[0] ? info.key : "-");
        if (rc) fprintf(stderr, "child: %s\n", kc_error_last()->message);
        ssize_t w = write(fd[1], line, strlen(line) + 1);
        kc_graph_desc_free(d);
        kc_cache_close(c);
        _exit(w > 0 ? 0 : 1);
    }
    close(fd[1]);
    char buf[256] = "";
    ssize_t r = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (r > 0) sscanf(buf, "%d %d %d %ld %ld %32s", &o.rc, &o.source, &o.walks, &o.misses, &o.hits, o.key);
    return o;
}

static void toolkit_path(char *out, size_t cap) { snprintf(out, cap, "%s/tk", tmp); }

/* In a child: the cache of this test with the toolkit `tk`; the child exits 10 when it cannot open. */
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

/* The child `pid` exited 0 (its checks held). */
static void child_passed(pid_t pid) {
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* Past the window in which a file is too new to be vouched for ([Note: too new to vouch for]):
 * a compile after this records its manifest. */
static void settle(void) {
    struct timespec t = {2, 200000000};
    nanosleep(&t, NULL);
}

/* The direct manifests in the cache. */
static size_t manifests(void) {
    char memo[4096];
    snprintf(memo, sizeof memo, "%s/cache/v1/toolkits", tmp);
    return kct_count_files(memo, "direct-");
}

/* A toolkit of our own in `tk`, settled, and graph a compiled from it (first lookup, a miss). */
static outcome compiled_fresh(char tk[4096]) {
    toolkit_path(tk, 4096);
    make_toolkit(tk);
    settle();
    outcome a = lookup_in_child(tk, 0, "sm_80");
    assert_int_equal(a.rc, KC_OK);
    assert_int_equal(a.source, KC_FROM_COMPILE);
    return a;
}

/* A lookup that must not trust a manifest: it walks, and compiles under a key other than `old`. */
static outcome walked_and_compiled(const char *tk, int two, const char *target, const char *old) {
    outcome o = lookup_in_child(tk, two, target);
    assert_int_equal(o.rc, KC_OK);
    assert_int_equal(o.walks, 1);
    assert_int_equal(o.source, KC_FROM_COMPILE);
    assert_string_not_equal(old, o.key);
    return o;
}

static void test_a_compiled_graph_is_found_without_the_walk(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    outcome a = compiled_fresh(tk);
    assert_int_equal(a.walks, 1);
    assert_int_equal(manifests(), 1);
    outcome b = lookup_in_child(tk, 0, "sm_80");
    assert_int_equal(b.rc, KC_OK);
    assert_int_equal(b.source, KC_FROM_DISK);
    assert_int_equal(b.walks, 0); /* the manifest vouched: no walk */
    assert_int_equal(b.hits, 1);
    assert_string_equal(a.key, b.key);
    /* A file the graph never reads, edited in place: still the same bytes for NVRTC, still a hit. */
    char p[4096];
    snprintf(p, sizeof p, "%s/unread.h", tk);
    assert_int_equal(kct_write(p, "// edited\n", 10), 0);
    outcome c = lookup_in_child(tk, 0, "sm_80");
    assert_int_equal(c.source, KC_FROM_DISK);
    assert_int_equal(c.walks, 0);
    assert_string_equal(a.key, c.key);
}

static void test_a_header_it_read_edited_is_a_walk_and_a_compile(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096], p[4096];
    outcome a = compiled_fresh(tk);
    /* The same length, the time put back: the ctime still moves. */
    snprintf(p, sizeof p, "%s/crt/host_defines.h", tk);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(kct_write(p, "#define X 2\n", 12), 0);
    struct timespec t[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, p, t, 0), 0);
    settle(); /* for the manifest of the compile below */
    outcome b = walked_and_compiled(tk, 0, "sm_80", a.key);
    assert_int_equal(b.misses, 1);
    outcome c = lookup_in_child(tk, 0, "sm_80"); /* its compile wrote the manifest again */
    assert_int_equal(c.source, KC_FROM_DISK);
    assert_int_equal(c.walks, 0);
    assert_string_equal(b.key, c.key);
}

static void test_a_header_added_where_nvrtc_looks_first_is_a_walk(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    outcome a = compiled_fresh(tk);
    put(tk, "shadow.h", "#define Y 20\n"); /* include/ comes before cccl/: NVRTC would read this one */
    (void)walked_and_compiled(tk, 0, "sm_80", a.key);
}

static void test_a_manifest_cut_short_vouches_for_nothing(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096], memo[4096];
    outcome a = compiled_fresh(tk);
    snprintf(memo, sizeof memo, "%s/cache/v1/toolkits", tmp);
    DIR *dir = opendir(memo);
    assert_non_null(dir);
    struct dirent *de;
    char path[8192] = "";
    while ((de = readdir(dir)))
        if (strncmp(de->d_name, "direct-", 7) == 0) snprintf(path, sizeof path, "%s/%s", memo, de->d_name);
    closedir(dir);
    size_t len;
    uint8_t *raw = kct_read(path, &len);
    assert_non_null(raw);
    char *text = calloc(1, len + 1); /* a string: strstr below */
    assert_non_null(text);
    memcpy(text, raw, len);
    free(raw);
    /* Without its last file line and the count: the header edit below would go unseen. */
    char *last_f = NULL;
    for (char *q = text; (q = strstr(q, "\nf ")); q++) last_f = q;
    assert_non_null(last_f);
    assert_int_equal(kct_write(path, text, (size_t)(last_f + 1 - text)), 0);
    outcome b = lookup_in_child(tk, 0, "sm_80");
    assert_int_equal(b.walks, 1); /* refused: the walk */
    assert_int_equal(b.source, KC_FROM_DISK);
    assert_string_equal(a.key, b.key);
    /* Its last file line gone but its count line kept (now one too many), a line after the count,
     * another version line: each vouches for nothing. */
    char *cut = malloc(len + 64);
    assert_non_null(cut);
    size_t f_len = strcspn(last_f + 1, "\n") + 1; /* the last "f ..." line with its newline */
    memcpy(cut, text, (size_t)(last_f + 1 - text));
    memcpy(cut + (last_f + 1 - text), last_f + 1 + f_len, len - (size_t)(last_f + 1 - text) - f_len);
    assert_int_equal(kct_write(path, cut, len - f_len), 0);
    assert_int_equal(lookup_in_child(tk, 0, "sm_80").walks, 1);
    memcpy(cut, text, len);
    memcpy(cut + len, "f extra\n", 8);
    assert_int_equal(kct_write(path, cut, len + 8), 0);
    assert_int_equal(lookup_in_child(tk, 0, "sm_80").walks, 1);
    memcpy(cut, text, len);
    char *nl = memchr(cut, '\n', len);
    assert_non_null(nl);
    nl[-1] = nl[-1] == '9' ? '8' : (char)(nl[-1] + 1); /* the version's last character */
    assert_int_equal(kct_write(path, cut, len), 0);
    assert_int_equal(lookup_in_child(tk, 0, "sm_80").walks, 1);
    memcpy(cut, text, len); /* the manifest as written still vouches: only the edits were refused */
    assert_int_equal(kct_write(path, cut, len), 0);
    assert_int_equal(lookup_in_child(tk, 0, "sm_80").walks, 0);
    free(cut);
    /* Garbage, and an empty file: the same. */
    assert_int_equal(kct_write(path, "kcache-toolkit-direct 1\nroot /\n", 31), 0);
    assert_int_equal(lookup_in_child(tk, 0, "sm_80").walks, 1);
    assert_int_equal(kct_write(path, "", 0), 0);
    assert_int_equal(lookup_in_child(tk, 0, "sm_80").walks, 1);
    free(text);
}

static void test_a_reused_unit_records_no_reads(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096], p[4096];
    (void)compiled_fresh(tk);
    outcome b = lookup_in_child(tk, 1, "sm_80"); /* k's unit found stored: only k2 compiled */
    assert_int_equal(b.rc, KC_OK);
    assert_int_equal(b.source, KC_FROM_COMPILE);
    assert_int_equal(manifests(), 1); /* graph b's reads are not known: no manifest */
    snprintf(p, sizeof p, "%s/crt/host_defines.h", tk);
    assert_int_equal(kct_write(p, "#define X 3\n", 12), 0);
    (void)walked_and_compiled(tk, 1, "sm_80", b.key);
}

static void test_a_tree_changed_elsewhere_moves_the_key_and_counts_one_miss(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096], p[4096];
    outcome a = compiled_fresh(tk);
    snprintf(p, sizeof p, "%s/unread.h", tk);
    assert_int_equal(kct_write(p, "// edited\n", 10), 0);
    settle(); /* for the manifest of the compile below */
    /* Another target: the vouched key misses; the walk finds the tree's digest moved, and the
     * lookup is made again under it — one miss counted, the compile stored under the walked key. */
    outcome b = walked_and_compiled(tk, 0, "sm_90", a.key);
    assert_int_equal(b.misses, 1);
    outcome c = lookup_in_child(tk, 0, "sm_90");
    assert_int_equal(c.source, KC_FROM_DISK);
    assert_int_equal(c.walks, 0);
    assert_string_equal(b.key, c.key);
}

/* Remove the cache's direct manifests: a host that fetched or imported the entries. */
static void drop_manifests(void) {
    char memo[4096], p[8192];
    snprintf(memo, sizeof memo, "%s/cache/v1/toolkits", tmp);
    DIR *dir = opendir(memo);
    assert_non_null(dir);
    struct dirent *de;
    while ((de = readdir(dir)))
        if (strncmp(de->d_name, "direct-", 7) == 0) {
            snprintf(p, sizeof p, "%s/%s", memo, de->d_name);
            assert_int_equal(unlink(p), 0);
        }
    closedir(dir);
    assert_int_equal(manifests(), 0);
}

static void test_the_reads_travel_with_the_entry(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096], p[4096];
    outcome a = compiled_fresh(tk);
    drop_manifests();
    outcome b = lookup_in_child(tk, 0, "sm_80"); /* walks, hits, and writes the manifest from the entry */
    assert_int_equal(b.walks, 1);
    assert_int_equal(b.source, KC_FROM_DISK);
    assert_string_equal(a.key, b.key);
    assert_int_equal(manifests(), 1);
    outcome c = lookup_in_child(tk, 0, "sm_80");
    assert_int_equal(c.walks, 0);
    assert_int_equal(c.source, KC_FROM_DISK);
    /* And it vouches for what the compile read: the header edited, a walk and a compile. */
    snprintf(p, sizeof p, "%s/cccl/shadow.h", tk);
    assert_int_equal(kct_write(p, "#define Y 11\n", 13), 0);
    (void)walked_and_compiled(tk, 0, "sm_80", a.key);
}

/* Many threads of one process on one description: the vouched memo, the folder memo and the
 * walk that a miss on another target makes meanwhile (run under ThreadSanitizer by CI). */
typedef struct tharg {
    kc_cache *c;
    kc_graph_desc *d;
    const char *target;
    int rc, source;
} tharg;

static void *th_lookup(void *p) {
    tharg *a = p;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    a->rc = kc_graph_compile(a->c, a->d, a->target, &info);
    a->source = (int)info.source;
    return NULL;
}

static void test_threads_share_a_vouched_description(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    (void)compiled_fresh(tk);
    pid_t pid = fork();
    if (pid == 0) {
        kc_cache *c = child_cache(tk);
        kc_graph_desc *d = graph(0);
        enum { N = 6 };
        pthread_t th[N];
        tharg a[N];
        for (int i = 0; i < N; i++) {
            a[i] = (tharg){c, d, i == N - 1 ? "sm_90" : "sm_80", -1, -1};
            if (pthread_create(&th[i], NULL, th_lookup, &a[i])) _exit(11);
        }
        int bad = 0;
        for (int i = 0; i < N; i++) {
            pthread_join(th[i], NULL);
            bad |= a[i].rc != KC_OK;
            if (i < N - 1) bad |= a[i].source != KC_FROM_DISK;
        }
        kc_graph_desc_free(d);
        kc_cache_close(c);
        _exit(bad ? 12 : 0);
    }
    child_passed(pid);
}

static void test_a_header_linked_from_elsewhere_records_nothing(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096], out[4096], link[4096];
    toolkit_path(tk, sizeof tk);
    make_toolkit(tk);
    /* shadow.h a link to a file outside the tree: its open is reported under the outside folder. */
    snprintf(out, sizeof out, "%s/outside", tmp);
    mkdir(out, 0700);
    put(out, "shadow.h", "#define Y 10\n");
    snprintf(link, sizeof link, "%s/cccl/shadow.h", tk);
    assert_int_equal(unlink(link), 0);
    snprintf(out, sizeof out, "%s/outside/shadow.h", tmp);
    assert_int_equal(symlink(out, link), 0);
    settle();
    outcome a = lookup_in_child(tk, 0, "sm_80");
    assert_int_equal(a.source, KC_FROM_COMPILE);
    assert_int_equal(manifests(), 0);
    put(tmp, "outside/shadow.h", "#define Y 12\n"); /* read through the link: a walk, a compile */
    (void)walked_and_compiled(tk, 0, "sm_80", a.key);
}

/* Each variant's manifest vouches for that variant only: sm_80's compile read lo.h, never hi.h. */
static void test_a_manifest_vouches_for_its_own_variant_only(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    (void)compiled_fresh(tk);
    outcome a90 = lookup_in_child(tk, ARCH, "sm_90");
    assert_int_equal(a90.source, KC_FROM_COMPILE);
    outcome a80 = lookup_in_child(tk, ARCH, "sm_80");
    assert_int_equal(a80.source, KC_FROM_COMPILE);
    assert_int_equal(lookup_in_child(tk, ARCH, "sm_90").walks, 0); /* its own manifest vouches */
    put(tk, "hi.h", "#define Z 91\n");
    outcome b90 = walked_and_compiled(tk, ARCH, "sm_90", a90.key); /* never the kernel of Z 90 */
    outcome b80 = lookup_in_child(tk, ARCH, "sm_80");              /* sm_80 never read hi.h: still its entry */
    assert_int_equal(b80.walks, 0);
    assert_int_equal(b80.source, KC_FROM_DISK);
    assert_string_equal(b80.key, a80.key);
    /* The same through the reads an entry carries: sm_80 stored under the walked key, the
     * manifests gone, an sm_80 hit writes sm_80's only, and sm_90 still walks. */
    drop_manifests();
    outcome c80 = lookup_in_child(tk, ARCH, "sm_80");
    assert_int_equal(c80.source, KC_FROM_COMPILE);
    assert_string_equal(c80.key, b90.key);
    drop_manifests();
    outcome d80 = lookup_in_child(tk, ARCH, "sm_80");
    assert_int_equal(d80.walks, 1);
    assert_int_equal(d80.source, KC_FROM_DISK);
    assert_int_equal(manifests(), 1);
    put(tk, "hi.h", "#define Z 92\n");
    (void)walked_and_compiled(tk, ARCH, "sm_90", b90.key);
}

/* kc_graph_get: a key vouched for by the device's own variant serves that variant only — a
 * fallback (sm_80's cubin on an 8.6 device) is tried only after the walk confirms the key. */
static void test_a_fallback_variant_is_confirmed_by_the_walk(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK || !getenv("KCACHE_CUDA_DRIVER")) skip(); /* CTest points it at the double */
    char tk[4096];
    (void)compiled_fresh(tk);
    outcome a86 = lookup_in_child(tk, ARCH, "sm_86"); /* reads hi.h */
    assert_int_equal(a86.source, KC_FROM_COMPILE);
    assert_int_equal(lookup_in_child(tk, ARCH, "sm_80").source, KC_FROM_COMPILE); /* reads lo.h */
    outcome g = lookup_in_child(tk, ARCH, "dev:8.6");
    assert_int_equal(g.rc, KC_OK);
    assert_int_equal(g.source, KC_FROM_DISK);
    assert_int_equal(g.walks, 0); /* sm_86's manifest vouched */
    /* On a 9.0 device sm_90a comes first: absent, it costs no walk. */
    assert_int_equal(lookup_in_child(tk, ARCH, "sm_90").source, KC_FROM_COMPILE);
    outcome g90 = lookup_in_child(tk, ARCH, "dev:9.0");
    assert_int_equal(g90.source, KC_FROM_DISK);
    assert_int_equal(g90.walks, 0);
    put(tk, "lo.h", "#define Z 81\n");
    /* sm_86's image refused once: the fallback, sm_80's, read lo.h — the walk first, the key moves,
     * and the device's own variant is compiled under it; never sm_80's kernel of Z 80. */
    outcome h = lookup_in_child(tk, ARCH, "dev:8.6:refuse");
    assert_int_equal(h.rc, KC_OK);
    assert_int_equal(h.walks, 1);
    assert_int_equal(h.source, KC_FROM_COMPILE);
    assert_string_not_equal(h.key, a86.key);
    assert_int_equal(h.misses, 1);
}

/* The reads an entry carries are used only when they are of this very tree, well formed. */
static void test_reads_of_another_tree_or_malformed_write_nothing(void **state) {
    (void)state;
    char tk[4096], memo[4096];
    toolkit_path(tk, sizeof tk);
    make_toolkit(tk);
    settle();
    snprintf(memo, sizeof memo, "%s/memo", tmp);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("KCACHE_CUDA_INCLUDE", tk, 1);
        char dg[33], v[256];
        if (kc_toolkit_digest(NULL, 0, dg) != KC_OK) _exit(10);
        /* 6 files (cccl/shadow.h, crt/host_defines.h, cuda_fp16.h, hi.h, lo.h, unread.h): read 1 and 3. */
        const char *bad[] = {"",
                             "-",
                             "0123456789abcdef0123456789abcdef 6 1,2",
                             "%s 7 1,2",
                             "%s 6 1,5",
                             "%s 6 6",
                             "%s 6 1,0",
                             "%s 6 1,,2",
                             "%s 6 1,2,",
                             "%s 6 -1",
                             "%s 6 +1",
                             "%s 6 1 2",
                             "%s  6 1",
                             "%s 6 1,fffffffffffffffff",
                             "%s x 1",
                             "%s 6",
                             "%s 6 0x1",
                             "%s 6 1,A",
                             "%s 6 01",
                             "%s 06 1",
                             "%s 0x6 1"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            snprintf(v, sizeof v, bad[i], dg);
            char name[32];
            snprintf(name, sizeof name, "direct-bad%zu.sm_80", i);
            kc_toolkit_direct_from_reads(memo, name, v);
        }
        snprintf(v, sizeof v, "%s 6 1,2", dg);
        kc_toolkit_direct_from_reads(memo, "direct-good.sm_80", v);
        snprintf(v, sizeof v, "%s 6 -", dg); /* nothing read: the folders alone */
        kc_toolkit_direct_from_reads(memo, "direct-none.sm_80", v);
        char out[33];
        _exit(kc_toolkit_direct(memo, "direct-good.sm_80", out) && strcmp(out, dg) == 0 ? 0 : 11);
    }
    child_passed(pid);
    assert_int_equal(kct_count_files(memo, "direct-bad"), 0);
    assert_int_equal(kct_count_files(memo, "direct-good"), 1);
    assert_int_equal(kct_count_files(memo, "direct-none"), 1);
    char p[8192];
    snprintf(p, sizeof p, "%s/direct-good.sm_80", memo);
    size_t len;
    uint8_t *text = kct_read(p, &len);
    assert_non_null(text);
    char *t = calloc(1, len + 1);
    assert_non_null(t);
    memcpy(t, text, len);
    assert_non_null(strstr(t, " crt/host_defines.h\n")); /* index 1 */
    assert_non_null(strstr(t, " hi.h\n"));               /* index 3 */
    assert_null(strstr(t, " cuda_fp16.h\n"));
    free(t);
    free(text);
}

/* One process, one description: the key vouched for sm_80 is not sm_90's, whose header changed. */
static void test_one_description_vouched_per_variant(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    (void)compiled_fresh(tk);
    assert_int_equal(lookup_in_child(tk, ARCH, "sm_90").source, KC_FROM_COMPILE);
    assert_int_equal(lookup_in_child(tk, ARCH, "sm_80").source, KC_FROM_COMPILE);
    pid_t pid = fork();
    if (pid == 0) {
        kc_cache *c = child_cache(tk);
        kc_graph_desc *d = graph(ARCH);
        kc_graph_info a = KC_GRAPH_INFO_INIT, b = KC_GRAPH_INFO_INIT;
        int rc = kc_graph_compile(c, d, "sm_80", &a);
        int ok = rc == KC_OK && a.source == KC_FROM_DISK && kc_toolkit_walks_() == 0; /* vouched by sm_80's */
        ok = ok && kct_put(tk, "hi.h", "#define Z 93\n") == 0;                        /* read by sm_90 only */
        rc = kc_graph_compile(c, d, "sm_90", &b);
        ok = ok && rc == KC_OK && b.source == KC_FROM_COMPILE && kc_toolkit_walks_() == 1; /* never Z 90's */
        kc_graph_desc_free(d);
        kc_cache_close(c);
        _exit(ok ? 0 : 12);
    }
    child_passed(pid);
}

/* [Note: compiled after a change]: a process that walked, then compiles after a header it reads
 * changed, stores nothing — else a fresh process with the header put back would hit new bytes. */
static void test_a_compile_after_the_tree_changed_stores_nothing(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    (void)compiled_fresh(tk);
    pid_t pid = fork();
    if (pid == 0) {
        kc_cache *c = child_cache(tk);
        char dg[33];
        if (kc_toolkit_digest(NULL, 0, dg) != KC_OK) _exit(10); /* the walk */
        if (kct_put(tk, "lo.h", "#define Z 85\n") != 0) _exit(11);
        kc_graph_desc *d = graph(ARCH);
        kc_graph_info info = KC_GRAPH_INFO_INIT;
        int rc = kc_graph_compile(c, d, "sm_80", &info); /* compiled from Z 85 under the walk's digest */
        int ok = rc == KC_OK && info.source == KC_FROM_COMPILE && info.store_status != KC_OK;
        kc_graph_desc_free(d);
        kc_cache_close(c);
        _exit(ok ? 0 : 12);
    }
    child_passed(pid);
    put(tk, "lo.h", "#define Z 80\n"); /* put back: the walk's digest again */
    outcome b = lookup_in_child(tk, ARCH, "sm_80");
    assert_int_equal(b.rc, KC_OK);
    assert_int_equal(b.source, KC_FROM_COMPILE); /* never the kernel of Z 85 */
}

/* A dangling link: NVRTC finds nothing there now, but its target may appear outside the tree. */
static void test_a_dangling_link_in_the_tree_records_nothing(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096], link[4096], target[4096];
    toolkit_path(tk, sizeof tk);
    make_toolkit(tk);
    snprintf(link, sizeof link, "%s/shadow.h", tk); /* before cccl/shadow.h in NVRTC's search */
    snprintf(target, sizeof target, "%s/elsewhere/shadow.h", tmp);
    assert_int_equal(symlink(target, link), 0);
    settle();
    outcome a = lookup_in_child(tk, ONE, "sm_80");
    assert_int_equal(a.source, KC_FROM_COMPILE);
    assert_int_equal(manifests(), 0);
    put(tmp, "elsewhere/shadow.h", "#define Y 30\n"); /* the link now resolves: NVRTC reads it */
    (void)walked_and_compiled(tk, ONE, "sm_80", a.key);
}

static void test_a_toolkit_just_written_is_not_vouched_for(void **state) {
    (void)state;
    if (kc_nvrtc_available() != KC_OK) skip();
    char tk[4096];
    toolkit_path(tk, sizeof tk);
    make_toolkit(tk); /* no settle: a second write within the clock's tick could go unseen */
    assert_int_equal(lookup_in_child(tk, 0, "sm_80").source, KC_FROM_COMPILE);
    assert_int_equal(manifests(), 0);
    assert_int_equal(lookup_in_child(tk, 0, "sm_80").walks, 1);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_a_compiled_graph_is_found_without_the_walk),
        T(test_a_header_it_read_edited_is_a_walk_and_a_compile),
        T(test_a_header_added_where_nvrtc_looks_first_is_a_walk),
        T(test_a_manifest_cut_short_vouches_for_nothing),
        T(test_a_reused_unit_records_no_reads),
        T(test_a_tree_changed_elsewhere_moves_the_key_and_counts_one_miss),
        T(test_a_toolkit_just_written_is_not_vouched_for),
        T(test_the_reads_travel_with_the_entry),
        T(test_threads_share_a_vouched_description),
        T(test_a_header_linked_from_elsewhere_records_nothing),
        T(test_a_manifest_vouches_for_its_own_variant_only),
        T(test_a_dangling_link_in_the_tree_records_nothing),
        T(test_a_fallback_variant_is_confirmed_by_the_walk),
        T(test_reads_of_another_tree_or_malformed_write_nothing),
        T(test_a_compile_after_the_tree_changed_stores_nothing),
        T(test_one_description_vouched_per_variant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

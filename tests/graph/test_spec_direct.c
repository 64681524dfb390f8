/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_spec_direct.c — the spec direct mode ([Note: spec direct mode] in graph/spec_direct.c), with
 * the reviewers' sequences of the toolkit direct mode applied to specs:
 *   - warm: a spec read whole and keyed records its memo; the next load is vouched, not read, and a
 *     compile of it is a disk hit under the same key without reading it; its accessors answer as
 *     the whole load's (read on first need);
 *   - a spec or source written within the settle window is never recorded (the default window);
 *   - a source replaced with the same size and mtime — by a rename over it (another inode), or
 *     rewritten in place with its mtime set back (ctime moves) — is never served: the load reads
 *     it, and the lookup is under the new content's key;
 *   - a memo cut short, garbled, of another version or of another path vouches for nothing;
 *   - a memo naming a key with no entry: the lookup reads the files before it may miss, finds the
 *     true key's entry, and counts one hit (one outcome per lookup, the one the caller is told);
 *   - a source removed after a vouched load: the accessor's error names the file and says what to do;
 *   - a read-only cache writes no memo;
 *   - a load before the process's first lookup reads the memo of the cache opened last (a runtime
 *     opens its cache, then loads its specs; `kcache prewarm` loads every spec first);
 *   - 8 threads reading and looking up one vouched description at once all see it whole and the same key.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <glob.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/internal.h"
#include "graph/graph_internal.h"
#include "helpers.h"
#include "kcache.h"

static char *dir;

static int setup(void **state) {
    (void)state;
    dir = kct_tmpdir("specdirect");
    kc_spec_direct_settle_set_(0); /* files written by the test are recorded at once (but in test_settle) */
    return dir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kc_spec_direct_settle_set_(-1);
    kct_rmtree(dir);
    free(dir);
    return 0;
}

#define SRC_A "extern \"C\" __global__ void k(float *x, int n) { x[0] = n; }\n"
#define SRC_B "extern \"C\" __global__ void k(float *x, int n) { x[0] = 2; }\n" /* same size as SRC_A */

static const char *SPEC = "{\"name\": \"sd\", \"kernels\": [{\"id\": \"k\", \"file\": \"k.cu\", \"entry\": \"k\"}],\n"
                          " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],\n"
                          " \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1],"
                          " \"args\": [\"input:0\", \"e32:N\"]}]}\n";

static char spec_path[700], src_path[700];

static void write_spec(const char *src) {
    snprintf(spec_path, sizeof spec_path, "%s/g.json", dir);
    snprintf(src_path, sizeof src_path, "%s/k.cu", dir);
    assert_int_equal(kct_put(dir, "k.cu", src), 0);
    assert_int_equal(kct_put(dir, "g.json", SPEC), 0);
}

static kc_cache *open_at(const char *sub, unsigned flags) {
    char p[700];
    snprintf(p, sizeof p, "%s/%s", dir, sub);
    kc_options o;
    kc_options_init(&o, KC_OPTIONS_VERSION);
    o.dir = p;
    o.flags = flags;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    return c;
}

static kc_cache *open_cache(unsigned flags) { return open_at("cache", flags); }

/* Load and compile for sm_80; the key and the source in *key and *src. */
static kc_graph_desc *load_compile(kc_cache *c, kc_graph_info *info) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, spec_path), KC_OK);
    *info = (kc_graph_info)KC_GRAPH_INFO_INIT;
    int rc = kc_graph_compile(c, d, "sm_80", info);
    if (rc) print_error("compile: %s\n", kc_error_last()->message);
    assert_int_equal(rc, KC_OK);
    return d;
}

static size_t memos(void) {
    char pat[800];
    snprintf(pat, sizeof pat, "%s/cache/*/toolkits/spec-*", dir);
    glob_t g;
    size_t n = glob(pat, 0, NULL, &g) == 0 ? g.gl_pathc : 0;
    globfree(&g);
    return n;
}

static char *memo_file(void) {
    char pat[800];
    snprintf(pat, sizeof pat, "%s/cache/*/toolkits/spec-*", dir);
    glob_t g;
    assert_int_equal(glob(pat, 0, NULL, &g), 0);
    assert_int_equal(g.gl_pathc, 1);
    char *p = strdup(g.gl_pathv[0]);
    globfree(&g);
    return p;
}

/* A memo recorded for the spec (first compile: a miss), and its key in *key. */
static void recorded(kc_cache *c, char key[KC_KEY_HEX_LEN + 1]) {
    kc_graph_info info;
    kc_graph_desc *d = load_compile(c, &info);
    assert_false(kc_spec_direct_lazy_(d));
    memcpy(key, info.key, KC_KEY_HEX_LEN + 1);
    kc_graph_desc_free(d);
    assert_int_equal(memos(), 1);
}

static void test_warm(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1];
    recorded(c, key);
    kc_graph_info info;
    kc_graph_desc *d = load_compile(c, &info);
    assert_true(kc_spec_direct_lazy_(d)); /* vouched, and the hit did not read it */
    assert_int_equal(info.source, KC_FROM_DISK);
    assert_string_equal(info.key, key);
    assert_string_equal(kc_graph_desc_name(d), "sd");
    /* Its accessors answer as the whole load's: read on first need. */
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_INPUT), 1);
    assert_false(kc_spec_direct_lazy_(d));
    assert_string_equal(kc_graph_desc_symbol(d, 0), "N");
    kc_key k;
    char hex[KC_KEY_HEX_LEN + 1];
    assert_int_equal(kc_graph_key_in(c, d, &k, NULL), KC_OK);
    kc_key_to_hex(&k, hex);
    assert_string_equal(hex, key);
    kc_graph_desc_free(d);
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_MISSES], 1);
    assert_int_equal(st.v[KC_STAT_HITS], 1);
    /* A vouched description freed unread. */
    assert_int_equal(kc_graph_desc_load(&d, spec_path), KC_OK);
    assert_true(kc_spec_direct_lazy_(d));
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

/* [Note: spec direct mode]'s settle window: files written just now are not recorded. */
static void test_settle(void **state) {
    (void)state;
    kc_spec_direct_settle_set_(-1); /* the default window (2 s) */
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    kc_graph_info info;
    kc_graph_desc *d = load_compile(c, &info);
    kc_graph_desc_free(d);
    assert_int_equal(memos(), 0);
    d = load_compile(c, &info);
    assert_false(kc_spec_direct_lazy_(d));
    assert_int_equal(info.source, KC_FROM_DISK);
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

/* After a replacement of the source by one of the same size and mtime: not vouched, and the
 * lookup is under the new content's key (a miss: compiled), never the old entry. */
static void replaced_not_served(kc_cache *c, const char *old_key) {
    kc_graph_info info;
    kc_graph_desc *d = load_compile(c, &info);
    assert_false(kc_spec_direct_lazy_(d));
    assert_string_not_equal(info.key, old_key);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    kc_graph_desc_free(d);
}

static void test_renamed_over(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1];
    recorded(c, key);
    struct stat st;
    assert_int_equal(stat(src_path, &st), 0);
    assert_int_equal(kct_put(dir, "k.cu.new", SRC_B), 0);
    char np[800];
    snprintf(np, sizeof np, "%s.new", src_path);
    struct timespec t[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, np, t, 0), 0);
    assert_int_equal(rename(np, src_path), 0);
    struct stat st2;
    assert_int_equal(stat(src_path, &st2), 0);
    assert_int_equal(st2.st_size, st.st_size);
    assert_int_equal(st2.st_mtim.tv_nsec, st.st_mtim.tv_nsec);
    replaced_not_served(c, key);
    kc_cache_close(c);
}

static void test_rewritten_mtime_back(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1];
    recorded(c, key);
    struct stat st;
    assert_int_equal(stat(src_path, &st), 0);
    int fd = open(src_path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, SRC_B, strlen(SRC_B)), (ssize_t)strlen(SRC_B));
    close(fd);
    struct timespec t[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, src_path, t, 0), 0);
    struct stat st2;
    assert_int_equal(stat(src_path, &st2), 0);
    assert_int_equal(st2.st_ino, st.st_ino); /* the same file: only its ctime tells */
    replaced_not_served(c, key);
    kc_cache_close(c);
}

/* Rewrite the memo with `edit` applied (a line replaced, or cut at `cut` bytes); the next load is not vouched. */
static void memo_edit(const char *from, const char *to, size_t cut) {
    char *p = memo_file();
    size_t n;
    char *t = (char *)kct_read(p, &n);
    assert_non_null(t);
    kc_buf b = {0};
    char *at = from ? strstr(t, from) : NULL;
    if (from) {
        assert_non_null(at);
        kc_buf_put(&b, t, (size_t)(at - t));
        kc_buf_put(&b, to, strlen(to));
        kc_buf_put(&b, at + strlen(from), n - (size_t)(at - t) - strlen(from));
    } else {
        kc_buf_put(&b, t, cut < n ? cut : n);
    }
    assert_int_equal(kct_write(p, b.len ? (const void *)b.data : "", b.len), 0); /* cut at 0: empty */
    kc_buf_free(&b);
    free(t);
    free(p);
}

static void assert_not_vouched(void) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, spec_path), KC_OK);
    assert_false(kc_spec_direct_lazy_(d));
    kc_graph_desc_free(d);
}

static void test_hostile_memo(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1];
    recorded(c, key);
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, spec_path), KC_OK); /* the memo as written vouches */
    assert_true(kc_spec_direct_lazy_(d));
    kc_graph_desc_free(d);
    char *p = memo_file();
    size_t n;
    uint8_t *orig = kct_read(p, &n);
    static const struct {
        const char *from, *to;
    } edits[] = {
        {"kcache-spec-direct 1", "kcache-spec-direct 2"}, /* another version */
        {"\nkernels 0001", "\nkernels 0000"},             /* kernel-less: never recorded */
        {"\nkernels 0001", "\nkernels 01"},
        {"\ntoolkit 0", "\ntoolkit 2"},
        {"\ndigest -", "\ndigest 0"},
        {"\nkey ", "\nkey g"},
        {"\nend 2", "\nend 3"},   /* the count of lines */
        {"\nend 2\n", "\nend 2"}, /* the last line cut */
        {"\nf ", "\nf 0"},
        {"\nf ", "\nx "},
        {"k.cu\n", "../k.cu\n"},
        {"k.cu\n", "/k.cu\n"},
        {"/g.json\n", "/h.json\n"}, /* another spec's path */
    };
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        assert_int_equal(kct_write(p, orig, n), 0);
        memo_edit(edits[i].from, edits[i].to, 0);
        assert_not_vouched();
    }
    for (size_t cut = 0; cut < n; cut += 7) {
        assert_int_equal(kct_write(p, orig, n), 0);
        memo_edit(NULL, NULL, cut);
        assert_not_vouched();
    }
    /* Cut right after its head (key0's line): no file lines, no "end" line. */
    const char *k0 = strstr((const char *)orig, "\nkey0 ");
    assert_non_null(k0);
    const char *nl = strchr(k0 + 1, '\n');
    assert_non_null(nl);
    assert_int_equal(kct_write(p, orig, n), 0);
    memo_edit(NULL, NULL, (size_t)(nl + 1 - (const char *)orig));
    assert_not_vouched();
    free(orig);
    free(p);
    kc_cache_close(c);
}

/* A memo naming a key no entry has: the lookup reads the spec before it may miss (confirm), looks
 * the true key up, and counts one hit. */
static void test_vouched_miss_confirms(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1], edit[64], was[64];
    recorded(c, key);
    snprintf(was, sizeof was, "\nkey %s\n", key);
    snprintf(edit, sizeof edit, "\nkey %s\n", "0123456789abcdef0123456789abcdef");
    memo_edit(was, edit, 0);
    kc_graph_info info;
    kc_graph_desc *d = load_compile(c, &info);
    assert_false(kc_spec_direct_lazy_(d)); /* read to confirm */
    assert_int_equal(info.source, KC_FROM_DISK);
    assert_string_equal(info.key, key);
    kc_graph_desc_free(d);
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_MISSES], 1); /* the first compile's */
    assert_int_equal(st.v[KC_STAT_HITS], 1);
    assert_int_equal(st.v[KC_STAT_COMPILES], 1);
    kc_cache_close(c);
}

/* Read on first need, after its source went: the accessor's error names the file and what to do. */
static void test_source_gone(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1];
    recorded(c, key);
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, spec_path), KC_OK);
    assert_true(kc_spec_direct_lazy_(d));
    assert_int_equal(unlink(src_path), 0);
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_INPUT), 0);
    assert_non_null(strstr(kc_error_last()->message, "k.cu"));
    assert_non_null(strstr(kc_error_last()->message, "load the spec again"));
    kc_graph_tensor_desc td = KC_GRAPH_TENSOR_DESC_INIT;
    assert_int_equal(kc_graph_desc_tensor(d, KC_ROLE_INPUT, 0, &td), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "no such file"));
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

/* A deploy's link flipped to another version and back while the source is read (made deterministic:
 * this test's open() flips it around the real open of the armed path).  The path's stat before and
 * after the read are v1's, the bytes v2's: nothing is recorded, and the next load's key is v1's files'. */
static const char *flip_armed; /* the path whose next open is flipped */
static char flip_link[700], flip_v1[700], flip_v2[700];

static void flip_to(const char *target) {
    char t[760];
    snprintf(t, sizeof t, "%s.new", flip_link);
    assert_int_equal(symlink(target, t), 0);
    assert_int_equal(rename(t, flip_link), 0);
}

int open(const char *p, int fl, ...) {
    va_list ap;
    va_start(ap, fl);
    int m = (fl & O_CREAT) ? va_arg(ap, int) : 0;
    va_end(ap);
    if (!flip_armed || strcmp(p, flip_armed) != 0) return (int)syscall(SYS_openat, AT_FDCWD, p, fl, m);
    flip_armed = NULL;
    flip_to(flip_v2);
    int fd = (int)syscall(SYS_openat, AT_FDCWD, p, fl, m);
    flip_to(flip_v1);
    return fd;
}

static void test_flipped_during_read(void **state) {
    (void)state;
    snprintf(flip_v1, sizeof flip_v1, "%s/v1", dir);
    snprintf(flip_v2, sizeof flip_v2, "%s/v2", dir);
    snprintf(flip_link, sizeof flip_link, "%s/cur", dir);
    assert_int_equal(mkdir(flip_v1, 0700), 0);
    assert_int_equal(mkdir(flip_v2, 0700), 0);
    assert_int_equal(kct_put(flip_v1, "k.cu", SRC_A), 0);
    assert_int_equal(kct_put(flip_v1, "g.json", SPEC), 0);
    assert_int_equal(kct_put(flip_v2, "k.cu", SRC_B), 0);
    assert_int_equal(kct_put(flip_v2, "g.json", SPEC), 0);
    assert_int_equal(symlink(flip_v1, flip_link), 0);
    snprintf(spec_path, sizeof spec_path, "%s/g.json", flip_link);
    char src[760];
    snprintf(src, sizeof src, "%s/k.cu", flip_link);
    kc_cache *c = open_cache(0);
    kc_graph_desc *d;
    kc_key k1;
    char v1key[KC_KEY_HEX_LEN + 1];
    assert_int_equal(kc_graph_desc_load(&d, spec_path), KC_OK); /* no memo yet: read whole, v1 */
    assert_int_equal(kc_graph_key_in(c, d, &k1, NULL), KC_OK);
    kc_key_to_hex(&k1, v1key);
    kc_graph_desc_free(d);
    kc_graph_info info;
    flip_armed = src;
    d = load_compile(c, &info); /* v2's bytes read under v1's name */
    assert_null(flip_armed);
    assert_string_not_equal(info.key, v1key);
    kc_graph_desc_free(d);
    d = load_compile(c, &info);
    assert_string_equal(info.key, v1key); /* never v2's key vouched for by v1's signatures */
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

/* A vouched description whose files cannot be read when a builder needs them: the builder fails, and
 * so does every later reader and lookup, with the same message — never the memo's key without the
 * builder's change (a set_globals dropped in silence would serve the kernel of other globals). */
static void test_failed_read_sticks(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1];
    recorded(c, key);
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, spec_path), KC_OK);
    assert_true(kc_spec_direct_lazy_(d));
    assert_int_equal(unlink(src_path), 0);
    kc_error_clear();
    kc_graph_set_globals(d, 5);
    char first[2048];
    snprintf(first, sizeof first, "%s", kc_error_last()->message);
    assert_non_null(strstr(first, "k.cu"));
    assert_non_null(strstr(first, "load the spec again"));
    write_spec(SRC_A); /* back again: the description stays failed (it dropped a change) */
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_error_clear();
    assert_int_equal(kc_graph_compile(c, d, "sm_80", &info), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, first));
    kc_key k;
    assert_int_equal(kc_graph_key_in(c, d, &k, NULL), KC_EINVAL);
    assert_string_equal(kc_error_last()->message, first);
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_INPUT), 0);
    assert_string_equal(kc_error_last()->message, first);
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

static const char *SPEC2 = "{\"name\": \"%s\", \"kernels\": [{\"id\": \"k\", \"file\": \"k.cu\", \"entry\": \"k\"}],\n"
                           " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}%s],\n"
                           " \"forward\": [{\"kernel\": \"k\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1],"
                           " \"args\": [\"input:0\", \"e32:N\"]}]}\n";

static void write_spec2(const char *name, int two_inputs) {
    char b[1024];
    snprintf(b, sizeof b, SPEC2, name, two_inputs ? ", {\"dtype\": \"f32\", \"sizes\": [\"N\"]}" : "");
    assert_int_equal(kct_put(dir, "g.json", b), 0);
}

/* A vouched description is the content its load vouched for: a hit served under the memo's key, then
 * the spec and source edited — its first-need read finds other files and fails ("changed since it was
 * loaded"), sticky: one description never hands out a second kernel of other content. */
static void test_vouched_is_snapshot(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1];
    recorded(c, key);
    kc_graph_info info;
    kc_graph_desc *d = load_compile(c, &info);
    assert_true(kc_spec_direct_lazy_(d));
    assert_string_equal(info.key, key);
    write_spec2("sd", 1);
    assert_int_equal(kct_put(dir, "k.cu", SRC_B), 0);
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_INPUT), 0);
    assert_non_null(strstr(kc_error_last()->message, "g.json: changed since it was loaded (load the spec again)"));
    info = (kc_graph_info)KC_GRAPH_INFO_INIT;
    assert_int_not_equal(kc_graph_compile(c, d, "sm_80", &info), KC_OK);
    assert_non_null(strstr(kc_error_last()->message, "changed since it was loaded"));
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

/* The name handed out before the first-need read stays valid and the same (it was freed by a rename
 * of the graph in its spec: a use after free); a spec renamed since the load is "changed". */
static void test_name_stable(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1];
    recorded(c, key);
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, spec_path), KC_OK);
    assert_true(kc_spec_direct_lazy_(d));
    const char *name = kc_graph_desc_name(d);
    write_spec2("renamed", 0);
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_INPUT), 0);
    assert_non_null(strstr(kc_error_last()->message, "changed since it was loaded"));
    assert_ptr_equal(kc_graph_desc_name(d), name);
    assert_string_equal(name, "sd");
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

/* A first-need read of a spec loaded by a relative path names its files as a load's read does (the
 * path as given), though it reads them through the absolute path of its load. */
static void test_relative_message(void **state) {
    (void)state;
    write_spec(SRC_A);
    char cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    kc_cache *c = open_cache(0);
    kc_graph_info info;
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, "g.json"), KC_OK);
    info = (kc_graph_info)KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(c, d, "sm_80", &info), KC_OK);
    kc_graph_desc_free(d);
    assert_int_equal(memos(), 1);
    assert_int_equal(kc_graph_desc_load(&d, "g.json"), KC_OK);
    assert_true(kc_spec_direct_lazy_(d));
    assert_int_equal(unlink("k.cu"), 0);
    assert_int_equal(kc_graph_desc_count(d, KC_ROLE_INPUT), 0);
    char vouched[2048];
    snprintf(vouched, sizeof vouched, "%s", kc_error_last()->message);
    kc_graph_desc_free(d);
    assert_int_not_equal(kc_graph_desc_load(&d, "g.json"), KC_OK); /* read whole: the load's own message */
    assert_null(strstr(vouched, dir));
    assert_non_null(strstr(vouched, kc_error_last()->message));
    assert_int_equal(chdir(cwd), 0);
    kc_cache_close(c);
}

static void test_readonly_writes_none(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0); /* made, then closed: the directory exists */
    kc_cache_close(c);
    c = open_cache(KC_OPEN_READONLY);
    kc_graph_info info;
    kc_graph_desc *d = load_compile(c, &info);
    kc_graph_desc_free(d);
    assert_int_equal(memos(), 0);
    kc_cache_close(c);
}

static void test_opened_cache(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1];
    recorded(c, key);
    kc_cache_close(c);
    /* The last lookup through another cache (a graph of no kernel: nothing compiled) ... */
    kc_cache *other = open_at("other", 0);
    kc_graph_desc *e;
    assert_int_equal(kc_graph_desc_new(&e, "empty"), KC_OK);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(other, e, "sm_80", &info), KC_OK);
    kc_graph_desc_free(e);
    kc_cache_close(other);
    /* ... then the first cache opened again, and the spec loaded before any lookup through it. */
    c = open_cache(0);
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, spec_path), KC_OK);
    assert_true(kc_spec_direct_lazy_(d));
    info = (kc_graph_info)KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(c, d, "sm_80", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_DISK);
    assert_string_equal(info.key, key);
    assert_true(kc_spec_direct_lazy_(d));
    kc_graph_desc_free(d);
    kc_cache_close(c);
}

/* Many threads at one vouched description: some look it up (a hit, not read), some read it (the
 * first reads it, once); every answer is the whole load's. */
typedef struct race {
    kc_cache *c;
    kc_graph_desc *d;
    int i, ok;
    char key[KC_KEY_HEX_LEN + 1];
} race;

static void *racer(void *p) {
    race *r = p;
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (r->i % 2) {
        r->ok = kc_graph_desc_count(r->d, KC_ROLE_INPUT) == 1 && kc_graph_desc_nargs(r->d) == 0;
    } else {
        r->ok = kc_graph_compile(r->c, r->d, "sm_80", &info) == KC_OK && info.source == KC_FROM_DISK;
        memcpy(r->key, info.key, sizeof r->key);
    }
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    write_spec(SRC_A);
    kc_cache *c = open_cache(0);
    char key[KC_KEY_HEX_LEN + 1];
    recorded(c, key);
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_load(&d, spec_path), KC_OK);
    assert_true(kc_spec_direct_lazy_(d));
    enum { N = 8 };
    race r[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        r[i] = (race){c, d, i, 0, ""};
        assert_int_equal(pthread_create(&t[i], NULL, racer, &r[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_true(r[i].ok);
        if (i % 2 == 0) assert_string_equal(r[i].key, key);
    }
    assert_false(kc_spec_direct_lazy_(d));
    kc_graph_desc_free(d);
    kc_stats st;
    assert_int_equal(kc_cache_stats(c, &st), KC_OK);
    assert_int_equal(st.v[KC_STAT_MISSES], 1);
    assert_int_equal(st.v[KC_STAT_HITS], N / 2);
    kc_cache_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_warm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renamed_over, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rewritten_mtime_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_memo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vouched_miss_confirms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readonly_writes_none, setup, teardown),
        cmocka_unit_test_setup_teardown(test_opened_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_during_read, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_read_sticks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_vouched_is_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_name_stable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relative_message, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

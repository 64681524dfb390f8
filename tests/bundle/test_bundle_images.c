/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bundle_images.c — bundles of the two levels ([Note: two levels] in kcache/entry.h): graph
 * entries, the images they refer to and those images' unit records.
 *
 * What is proved: two graphs sharing one image ship it once (counted in the bundle's own table of
 * contents, and its content is less than two copies), images first, unit records next, graphs
 * last; the filter picks graphs and their images and unit records follow (nothing unreferenced
 * goes along); an import into an empty cache gives graphs that resolve; a dry run says what it
 * would write; a bundle with a tampered image (a valid entry, wrong bytes; or the right XXH3-128
 * name and a wrong SHA-256) imports nothing, so no graph that refers to it; a graph whose image is
 * in neither the bundle nor the cache is left out, and written once the image is local; the write
 * order does not follow the bundle's (a disk full after the first write leaves the image, never
 * the graph alone); a truncated bundle loses nothing already in the cache; an export fails,
 * naming both, when a graph's image is missing or corrupt; a keyed cache takes no unsealed image.
 */
#include <xxhash.h>
#include <zstd.h>

#include "kcache.h"
#include "helpers.h"

#include "common/fs.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("bundle-img", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

#define IMG_LEN (48u << 10) /* random bytes: zstd cannot shrink an image, nor hide a second copy's size */

/* The bytes of image `seed` (a cubin stand-in: random, so incompressible). */
static uint8_t *image_bytes(unsigned seed) {
    uint8_t *b = malloc(IMG_LEN);
    for (size_t i = 0; i < IMG_LEN; i++) b[i] = (uint8_t)rand_r(&seed);
    return b;
}

/* Store image `seed` for `target` in `c`; its reference in *ref. */
static void put_image(kc_cache *c, unsigned seed, const char *target, kc_image_ref *ref) {
    uint8_t *b = image_bytes(seed);
    assert_int_equal(kc_image_ref_make(ref, target, 0, b, IMG_LEN), KC_OK);
    kc_entry *e;
    assert_int_equal(kc_image_entry_new(&e, ref, b), KC_OK);
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_entry_free(e);
    free(b);
}

static kc_key graph_key(int i) { return kct_key("bundle-graph", i); }
static kc_key unit_key(int i) { return kct_key("bundle-unit", i); }

/* Graph entry i for `variant`, referring to `refs`. */
static kc_entry *graph_entry(int i, const char *variant, const kc_image_ref *refs, size_t n) {
    kc_key k = graph_key(i);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, variant), KC_OK);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_FORWARD, "steps", 5), KC_OK);
    assert_int_equal(kc_entry_set_images(e, refs, n), KC_OK);
    return e;
}

static void put_graph(kc_cache *c, int i, const char *variant, const kc_image_ref *refs, size_t n) {
    kc_entry *e = graph_entry(i, variant, refs, n);
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_entry_free(e);
}

static kc_entry *unit_entry(int i, const kc_image_ref *ref) {
    kc_key k = unit_key(i);
    const char *exprs[] = {"add_kernel"}, *lowered[] = {"_Z10add_kernelPf"};
    kc_entry *e;
    assert_int_equal(kc_unit_entry_new(&e, &k, ref, exprs, lowered, 1), KC_OK);
    return e;
}

static void put_unit(kc_cache *c, int i, const kc_image_ref *ref) {
    kc_entry *e = unit_entry(i, ref);
    assert_int_equal(kc_cache_put(c, e), KC_OK);
    kc_entry_free(e);
}

static void name_of(const kc_key *k, const char *variant, char out[80]) {
    char hex[33];
    kc_key_to_hex(k, hex);
    snprintf(out, 80, "%s.%s", hex, variant);
}

/* The names in a bundle's table of contents, in order, read with the format of bundle.h (not
 * through the library); the content's length in *raw. */
static int bundle_names(const char *path, char names[][80], int max, uint64_t *raw) {
    size_t len;
    uint8_t *f = kct_read(path, &len);
    assert_non_null(f);
    assert_true(len >= 48);
    uint32_t count;
    memcpy(&count, f + 12, 4);
    memcpy(raw, f + 16, 8);
    uint8_t *content = malloc(*raw);
    assert_int_equal(ZSTD_decompress(content, *raw, f + 48, len - 48), *raw);
    size_t off = 0;
    assert_true((int)count <= max);
    for (uint32_t i = 0; i < count; i++) {
        uint16_t nl = (uint16_t)(content[off] | content[off + 1] << 8);
        assert_true(nl < 80);
        memcpy(names[i], content + off + 2, nl);
        names[i][nl] = '\0';
        off += 2 + nl + 24;
    }
    free(content);
    free(f);
    return (int)count;
}

static int count_suffix(char names[][80], int n, const char *suffix) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        size_t l = strlen(names[i]), s = strlen(suffix);
        k += l > s && strcmp(names[i] + l - s, suffix) == 0;
    }
    return k;
}

static int has(char names[][80], int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return 1;
    return 0;
}

/* Encoded bytes of an entry (the caller frees with kc_free). */
static void *encode(const kc_entry *e, size_t *len) {
    void *b;
    assert_int_equal(kc_entry_encode(e, &b, len), KC_OK);
    return b;
}

/* A bundle built by hand from the format of bundle.h, its members in the order given. */
static void write_bundle(const char *path, int n, char names[][80], void *const *data, const size_t *lens) {
    size_t cap = 1 << 10, raw = 0;
    for (int i = 0; i < n; i++) cap += 2 + 80 + 24 + lens[i];
    uint8_t *content = malloc(cap);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(names[i]);
        content[raw++] = (uint8_t)nl;
        content[raw++] = 0;
        memcpy(content + raw, names[i], nl);
        raw += nl;
        uint64_t v[3] = {off, lens[i], XXH3_64bits(data[i], lens[i])};
        memcpy(content + raw, v, 24); /* little-endian host */
        raw += 24;
        off += lens[i];
    }
    for (int i = 0; i < n; i++) memcpy(content + raw, data[i], lens[i]), raw += lens[i];
    size_t bound = ZSTD_compressBound(raw);
    uint8_t *file = malloc(48 + bound);
    size_t z = ZSTD_compress(file + 48, bound, content, raw, 3);
    assert_false(ZSTD_isError(z));
    memcpy(file, "\x89KCB\r\n\x1a\n", 8);
    uint16_t ver = 1, res = 0;
    uint32_t count = (uint32_t)n;
    uint64_t r64 = raw, stored = z, psum = XXH3_64bits(content, raw);
    memcpy(file + 8, &ver, 2);
    memcpy(file + 10, &res, 2);
    memcpy(file + 12, &count, 4);
    memcpy(file + 16, &r64, 8);
    memcpy(file + 24, &stored, 8);
    memcpy(file + 32, &psum, 8);
    uint64_t hsum = XXH3_64bits(file, 40);
    memcpy(file + 40, &hsum, 8);
    assert_int_equal(kct_write(path, file, 48 + z), 0);
    free(file);
    free(content);
}

/* Every graph of `c` resolves: its images are there, whole, and are the images it describes. */
static void assert_graph_resolves(kc_cache *c, int i, const char *variant) {
    kc_key k = graph_key(i);
    kc_entry *g;
    assert_int_equal(kc_cache_get(c, &k, variant, &g), KC_OK);
    int rc = kc_entry_resolve(c, g);
    if (rc) fail_msg("graph %d (%s) does not resolve: %s", i, variant, kc_error_last()->message);
    kc_image_ref *refs;
    size_t n;
    assert_int_equal(kc_entry_images(g, &refs, &n), KC_OK);
    for (size_t r = 0; r < n; r++) { /* and, independently of resolve, each image is whole */
        kc_entry *img;
        assert_int_equal(kc_cache_get(c, &refs[r].id, KC_VARIANT_IMAGE, &img), KC_OK);
        assert_int_equal(kc_image_entry_read(img, &refs[r], 1, NULL, NULL, NULL), KC_OK);
        kc_entry_free(img);
    }
    free(refs);
    kc_entry_free(g);
}

/* The cache: graphs 1 and 2 (sm_90) share image A; graph 3 (sm_80) uses D; units of A and D; an
 * image C and its unit that no graph uses. */
static kc_image_ref A, C, D;
static void fill(kc_cache *c) {
    put_image(c, 1, "sm_90", &A);
    put_image(c, 3, "sm_90", &C);
    put_image(c, 4, "sm_80", &D);
    put_unit(c, 1, &A);
    put_unit(c, 3, &C);
    put_unit(c, 4, &D);
    put_graph(c, 1, "sm_90", &A, 1);
    put_graph(c, 2, "sm_90", &A, 1);
    put_graph(c, 3, "sm_80", &D, 1);
}

static void test_a_shared_image_is_shipped_once_and_first(void **state) {
    (void)state;
    fill(cache);
    char path[600], names[32][80], a[80], c[80], d[80], ua[80], uc[80], g3[80];
    snprintf(path, sizeof path, "%s/sm90.kcb", dir);
    const char *only[] = {"sm_90"};
    kc_bundle_filter f = {only, 1, NULL, 0};
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_export(cache, path, &f, &r), KC_OK);
    uint64_t raw;
    int n = bundle_names(path, names, 32, &raw);
    name_of(&A.id, "img", a);
    kc_key u1 = unit_key(1);
    name_of(&u1, "unit", ua);
    assert_int_equal(n, 4); /* A, its unit record, graphs 1 and 2 */
    assert_int_equal(count_suffix(names, n, ".img"), 1);
    assert_string_equal(names[0], a);
    assert_string_equal(names[1], ua);
    assert_int_equal(count_suffix(names, n, ".sm_90"), 2);
    assert_true(raw < 2 * (uint64_t)IMG_LEN); /* less than two copies of the image */
    assert_int_equal(r.entries, 4);
    assert_int_equal(r.graphs, 2);
    assert_int_equal(r.images, 1);
    assert_int_equal(r.units, 1);
    assert_true(r.image_bytes > IMG_LEN && r.image_bytes < 2 * (uint64_t)IMG_LEN);
    assert_int_equal(r.graph_bytes + r.image_bytes + r.unit_bytes, r.bytes);
    /* Everything: images first (A and D, never the unused C), unit records next, graphs last. */
    assert_int_equal(kc_bundle_export(cache, path, NULL, &r), KC_OK);
    n = bundle_names(path, names, 32, &raw);
    assert_int_equal(n, 7);
    name_of(&C.id, "img", c);
    name_of(&D.id, "img", d);
    kc_key u3 = unit_key(3), k3 = graph_key(3);
    name_of(&u3, "unit", uc);
    name_of(&k3, "sm_80", g3);
    assert_true(has(names, n, a) && has(names, n, d) && has(names, n, g3));
    assert_false(has(names, n, c) || has(names, n, uc));
    for (int i = 0; i < n; i++) {
        const char *want = i < 2 ? ".img" : i < 4 ? ".unit" : NULL;
        const char *dot = strchr(names[i], '.');
        if (want ? strcmp(dot, want) != 0 : strcmp(dot, ".img") == 0 || strcmp(dot, ".unit") == 0)
            fail_msg("member %d is %s: images, unit records, graphs is the order", i, names[i]);
    }
    assert_int_equal(r.graphs, 3);
    assert_int_equal(r.images, 2);
    assert_int_equal(r.units, 2);
}

static void test_an_import_gives_graphs_that_resolve(void **state) {
    (void)state;
    fill(cache);
    char path[600];
    snprintf(path, sizeof path, "%s/all.kcb", dir);
    assert_int_equal(kc_bundle_export(cache, path, NULL, NULL), KC_OK);
    char *d2;
    kc_cache *fresh;
    assert_int_equal(kct_open_cache("bundle-img-fresh", &d2, &fresh), KC_OK);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_import(fresh, path, 1, &r), KC_OK); /* a dry run says what it would write */
    assert_int_equal(kct_count_files(d2, ".kce"), 0);
    assert_int_equal(r.written, 7);
    assert_int_equal(r.graphs_written, 3);
    assert_int_equal(r.images_written, 2);
    assert_int_equal(r.units_written, 2);
    assert_int_equal(kc_bundle_import(fresh, path, 0, &r), KC_OK);
    assert_int_equal(r.written, 7);
    assert_int_equal(r.graphs_written, 3);
    assert_int_equal(r.images_written, 2);
    assert_int_equal(r.units_written, 2);
    assert_int_equal(r.graphs_skipped + r.units_skipped, 0);
    assert_int_equal(kct_count_files(d2, ".kce"), 7);
    assert_graph_resolves(fresh, 1, "sm_90");
    assert_graph_resolves(fresh, 2, "sm_90");
    assert_graph_resolves(fresh, 3, "sm_80");
    kc_key u1 = unit_key(1);
    kc_entry *u;
    kc_image_ref got;
    assert_int_equal(kc_cache_get(fresh, &u1, KC_VARIANT_UNIT, &u), KC_OK);
    assert_int_equal(kc_unit_entry_read(u, &got, NULL, 0, NULL), KC_OK);
    assert_true(kc_image_ref_equal(&got, &A));
    kc_entry_free(u);
    assert_int_equal(kc_bundle_import(fresh, path, 1, &r), KC_OK); /* all there: a dry run would write nothing */
    assert_int_equal(r.written, 0);
    assert_int_equal(r.unchanged, 7);
    kct_close_cache(d2, fresh);
}

/* An image entry named for `ref` whose bytes are `bytes` (the container is valid; nothing checks
 * that the bytes are the reference's). */
static void *image_object(const kc_image_ref *ref, const uint8_t *bytes, size_t *len) {
    kc_entry *e;
    assert_int_equal(kc_image_entry_new(&e, ref, bytes), KC_OK);
    void *b = encode(e, len);
    kc_entry_free(e);
    return b;
}

static void test_a_tampered_image_imports_no_graph(void **state) {
    (void)state;
    uint8_t *good = image_bytes(1), *bad = image_bytes(1);
    bad[IMG_LEN / 2] ^= 0x40;
    kc_image_ref ref;
    assert_int_equal(kc_image_ref_make(&ref, "sm_90", 0, good, IMG_LEN), KC_OK);
    /* Three forgeries, each a valid entry: other bytes under the image's name; the right XXH3-128
     * name for its bytes but another image's SHA-256; the right image described otherwise. */
    kc_image_ref sha_lie, target_lie;
    assert_int_equal(kc_image_ref_make(&sha_lie, "sm_90", 0, bad, IMG_LEN), KC_OK);
    memcpy(sha_lie.sha256, ref.sha256, 32);
    target_lie = ref;
    snprintf(target_lie.target, sizeof target_lie.target, "sm_80");
    const kc_image_ref *graph_says[] = {&ref, &sha_lie, &ref};
    const kc_image_ref *image_says[] = {&ref, &sha_lie, &target_lie};
    const uint8_t *image_holds[] = {bad, bad, good};
    const char *why[] = {"XXH3-128", "SHA-256", "not the image"};
    char path[600], names[3][80];
    snprintf(path, sizeof path, "%s/tampered.kcb", dir);
    for (int t = 0; t < 3; t++) {
        void *data[3];
        size_t lens[3];
        data[0] = image_object(image_says[t], image_holds[t], &lens[0]);
        name_of(&image_says[t]->id, "img", names[0]);
        kc_entry *u = unit_entry(1, graph_says[t]), *g = graph_entry(1, "sm_90", graph_says[t], 1);
        data[1] = encode(u, &lens[1]);
        data[2] = encode(g, &lens[2]);
        name_of(kc_entry_key(u), "unit", names[1]);
        name_of(kc_entry_key(g), "sm_90", names[2]);
        kc_entry_free(u);
        kc_entry_free(g);
        write_bundle(path, 3, names, data, lens);
        for (int i = 0; i < 3; i++) kc_free(data[i]);
        kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
        assert_int_equal(kc_bundle_import(cache, path, 1, &r), KC_ECORRUPT);
        assert_int_equal(kc_bundle_import(cache, path, 0, &r), KC_ECORRUPT);
        const char *m = kc_error_last()->message;
        if (!strstr(m, why[t])) fail_msg("forgery %d: the message does not say %s: %s", t, why[t], m);
        assert_int_equal(kct_count_files(dir, ".kce"), 0);
    }
    free(good);
    free(bad);
}

static void test_a_graph_whose_image_is_nowhere_is_left_out(void **state) {
    (void)state;
    kc_image_ref X, Y;
    uint8_t *xb = image_bytes(7), *yb = image_bytes(8);
    assert_int_equal(kc_image_ref_make(&X, "sm_90", 0, xb, IMG_LEN), KC_OK);
    assert_int_equal(kc_image_ref_make(&Y, "sm_90", 0, yb, IMG_LEN), KC_OK);
    /* The bundle, graphs first (import must not follow its order): graph 1 needs X, which is not in
     * it; graph 2 and unit 2 need Y, which is; unit 1 needs X. */
    char names[5][80];
    void *data[5];
    size_t lens[5];
    kc_entry *g1 = graph_entry(1, "sm_90", &X, 1), *g2 = graph_entry(2, "sm_90", &Y, 1);
    kc_entry *u1 = unit_entry(1, &X), *u2 = unit_entry(2, &Y);
    kc_entry *parts[] = {g1, g2, u1, u2};
    for (int i = 0; i < 4; i++) {
        data[i] = encode(parts[i], &lens[i]);
        name_of(kc_entry_key(parts[i]), kc_entry_variant(parts[i]), names[i]);
    }
    data[4] = image_object(&Y, yb, &lens[4]);
    name_of(&Y.id, "img", names[4]);
    char path[600];
    snprintf(path, sizeof path, "%s/partial.kcb", dir);
    write_bundle(path, 5, names, data, lens);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_import(cache, path, 1, &r), KC_OK);
    assert_int_equal(r.written, 3);
    assert_int_equal(r.graphs_skipped, 1);
    assert_int_equal(r.units_skipped, 1);
    assert_int_equal(kc_bundle_import(cache, path, 0, &r), KC_OK);
    assert_int_equal(r.graphs, 2);
    assert_int_equal(r.images, 1);
    assert_int_equal(r.units, 2);
    assert_int_equal(r.written, 3);
    assert_int_equal(r.graphs_written, 1);
    assert_int_equal(r.images_written, 1);
    assert_int_equal(r.units_written, 1);
    assert_int_equal(r.graphs_skipped, 1);
    assert_int_equal(r.units_skipped, 1);
    assert_string_equal(r.first_skipped, names[2]); /* unit records are written (and skipped) before graphs */
    kc_key k1 = graph_key(1);
    kc_entry *e;
    assert_int_equal(kc_cache_get(cache, &k1, "sm_90", &e), KC_MISS); /* never written dangling */
    assert_graph_resolves(cache, 2, "sm_90");
    /* Once X is in the cache, the same bundle brings graph 1 and unit 1 in. */
    kc_entry *xi;
    assert_int_equal(kc_image_entry_new(&xi, &X, xb), KC_OK);
    assert_int_equal(kc_cache_put(cache, xi), KC_OK);
    kc_entry_free(xi);
    assert_int_equal(kc_bundle_import(cache, path, 0, &r), KC_OK);
    assert_int_equal(r.graphs_written, 1);
    assert_int_equal(r.units_written, 1);
    assert_int_equal(r.graphs_skipped + r.units_skipped, 0);
    assert_string_equal(r.first_skipped, "");
    assert_graph_resolves(cache, 1, "sm_90");
    for (int i = 0; i < 5; i++) kc_free(data[i]);
    for (int i = 0; i < 4; i++) kc_entry_free(parts[i]);
    free(xb);
    free(yb);
}

/* A disk that fills after the first write: with the graph first in the bundle, the image must
 * still be written first, so the cache never holds the graph without it. */
static void test_images_are_written_before_their_graph(void **state) {
    (void)state;
    uint8_t *b = image_bytes(9);
    kc_image_ref ref;
    assert_int_equal(kc_image_ref_make(&ref, "sm_90", 0, b, IMG_LEN), KC_OK);
    char names[2][80];
    void *data[2];
    size_t lens[2];
    kc_entry *g = graph_entry(1, "sm_90", &ref, 1);
    data[0] = encode(g, &lens[0]);
    name_of(kc_entry_key(g), "sm_90", names[0]);
    data[1] = image_object(&ref, b, &lens[1]);
    name_of(&ref.id, "img", names[1]);
    char path[600];
    snprintf(path, sizeof path, "%s/graph-first.kcb", dir);
    write_bundle(path, 2, names, data, lens);
    kc_fs_fault_set(KC_FS_RENAME, 2, ENOSPC, true);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    int rc = kc_bundle_import(cache, path, 0, &r);
    kc_fs_fault_clear();
    assert_int_not_equal(rc, KC_OK);
    assert_int_equal(r.written, 1);
    assert_int_equal(r.images_written, 1);
    assert_int_equal(kct_count_files(dir, ".img."), 1);
    assert_int_equal(kct_count_files(dir, ".sm_90."), 0);
    assert_int_equal(kc_bundle_import(cache, path, 0, &r), KC_OK); /* importing again writes the rest */
    assert_int_equal(r.graphs_written, 1);
    assert_graph_resolves(cache, 1, "sm_90");
    kc_entry_free(g);
    kc_free(data[0]);
    kc_free(data[1]);
    free(b);
}

/* Fingerprint of the cache's objects: names and bytes, order-independent. */
static int fp_item(const kc_cache_item *it, void *ctx) {
    size_t len;
    uint8_t *b = kct_read(it->path, &len);
    char name[80];
    name_of(&it->key, it->variant, name);
    *(uint64_t *)ctx += XXH3_64bits(name, strlen(name)) ^ (b ? XXH3_64bits(b, len) : 0);
    free(b);
    return 0;
}
static uint64_t fingerprint(kc_cache *c) {
    uint64_t f = 0;
    kc_cache_foreach(c, fp_item, &f);
    return f;
}

static void test_a_truncated_bundle_loses_nothing(void **state) {
    (void)state;
    fill(cache);
    char path[600], cut[600];
    snprintf(path, sizeof path, "%s/all.kcb", dir);
    snprintf(cut, sizeof cut, "%s/cut.kcb", dir);
    assert_int_equal(kc_bundle_export(cache, path, NULL, NULL), KC_OK);
    size_t len;
    uint8_t *b = kct_read(path, &len);
    /* The cache has lost graph 2 and image D since (so an import would write them). */
    kc_key k2 = graph_key(2);
    assert_int_equal(kc_cache_remove(cache, &k2, "sm_90"), KC_OK);
    assert_int_equal(kc_cache_remove(cache, &D.id, KC_VARIANT_IMAGE), KC_OK);
    uint64_t before = fingerprint(cache);
    size_t n_before = kct_count_files(dir, ".kce");
    int trials = 0;
    for (size_t n = 0; n < len; n += 1 + len / 61, trials++) {
        assert_int_equal(kct_write(cut, b, n), 0);
        assert_int_not_equal(kc_bundle_import(cache, cut, 0, NULL), KC_OK);
    }
    assert_true(trials > 50);
    assert_int_equal(fingerprint(cache), before);
    assert_int_equal(kct_count_files(dir, ".kce"), n_before);
    assert_graph_resolves(cache, 1, "sm_90");
    free(b);
}

static void test_a_graph_whose_image_is_missing_fails_export(void **state) {
    (void)state;
    fill(cache);
    char path[600], a[80], g1[80];
    snprintf(path, sizeof path, "%s/never.kcb", dir);
    name_of(&A.id, "img", a);
    kc_key k1 = graph_key(1);
    name_of(&k1, "sm_90", g1);
    /* A corrupt image (a valid entry holding other bytes): the export fails naming both, and the
     * image goes to quarantine. */
    uint8_t *bad = image_bytes(1);
    bad[0] ^= 1;
    size_t blen;
    void *obj = image_object(&A, bad, &blen);
    char file[700];
    snprintf(file, sizeof file, "%s/v1/%.2s/%s.kce", dir, a, a);
    assert_int_equal(kct_write(file, obj, blen), 0);
    kc_free(obj);
    free(bad);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_export(cache, path, NULL, &r), KC_ECORRUPT);
    const char *m = kc_error_last()->message;
    if (!strstr(m, a) || !strstr(m, "graph ") || !strstr(m, "corrupt"))
        fail_msg("the message does not name the graph and its corrupt image: %s", m);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(access(file, F_OK), -1);     /* moved aside… */
    assert_int_equal(kct_count_files(dir, a), 1); /* …to quarantine/<name>.kce.<n> */
    /* Now missing: the export fails naming a graph that refers to it (1 or 2) and the image. */
    assert_int_equal(kc_bundle_export(cache, path, NULL, &r), KC_MISS);
    m = kc_error_last()->message;
    if (!strstr(m, a) || !strstr(m, "does not hold") || !strstr(m, "graph "))
        fail_msg("the message does not name the graph and its missing image: %s", m);
    assert_int_equal(access(path, F_OK), -1);
    /* A filter that leaves those graphs out exports the rest. */
    const char *only[] = {"sm_80"};
    kc_bundle_filter f = {only, 1, NULL, 0};
    assert_int_equal(kc_bundle_export(cache, path, &f, &r), KC_OK);
    assert_int_equal(r.graphs, 1);
    assert_int_equal(r.images, 1);
}

/* With an HMAC key an import takes only sealed entries, images and unit records included. */
static void test_a_keyed_cache_takes_no_unsealed_image(void **state) {
    (void)state;
    static const char KEY[] = "import key of at least 16 bytes";
    kc_options o = KC_OPTIONS_INIT;
    o.flags = KC_OPEN_NO_ENV;
    o.hmac_key = KEY;
    o.hmac_key_len = sizeof KEY - 1;
    char *d1 = kct_tmpdir("bundle-img-k1"), *d2 = kct_tmpdir("bundle-img-k2");
    kc_cache *k1, *k2;
    o.dir = d1;
    assert_int_equal(kc_cache_open(&k1, &o), KC_OK);
    o.dir = d2;
    assert_int_equal(kc_cache_open(&k2, &o), KC_OK);
    fill(k1); /* sealed, every kind */
    char path[600];
    snprintf(path, sizeof path, "%s/sealed.kcb", dir);
    assert_int_equal(kc_bundle_export(k1, path, NULL, NULL), KC_OK);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_import(k2, path, 0, &r), KC_OK);
    assert_int_equal(r.written, 7);
    assert_graph_resolves(k2, 1, "sm_90");
    /* The sealed graph with an unsealed image beside it: refused whole. */
    kct_close_cache(d2, k2);
    d2 = kct_tmpdir("bundle-img-k3");
    o.dir = d2;
    assert_int_equal(kc_cache_open(&k2, &o), KC_OK);
    char names[2][80], file[700];
    void *data[2];
    size_t lens[2];
    uint8_t *ab = image_bytes(1);
    data[0] = image_object(&A, ab, &lens[0]);
    name_of(&A.id, "img", names[0]);
    kc_key g1 = graph_key(1);
    name_of(&g1, "sm_90", names[1]);
    snprintf(file, sizeof file, "%s/v1/%.2s/%s.kce", d1, names[1], names[1]);
    data[1] = kct_read(file, &lens[1]);
    assert_non_null(data[1]);
    write_bundle(path, 2, names, data, lens);
    assert_int_equal(kc_bundle_import(k2, path, 0, &r), KC_EUNTRUSTED);
    assert_non_null(strstr(kc_error_last()->message, names[0]));
    assert_int_equal(kct_count_files(d2, ".kce"), 0);
    kc_free(data[0]);
    free(data[1]);
    free(ab);
    kct_close_cache(d1, k1);
    kct_close_cache(d2, k2);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_a_shared_image_is_shipped_once_and_first),    T(test_an_import_gives_graphs_that_resolve),
        T(test_a_tampered_image_imports_no_graph),           T(test_a_graph_whose_image_is_nowhere_is_left_out),
        T(test_images_are_written_before_their_graph),       T(test_a_truncated_bundle_loses_nothing),
        T(test_a_graph_whose_image_is_missing_fails_export), T(test_a_keyed_cache_takes_no_unsealed_image),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

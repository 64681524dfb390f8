/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_kernels.c — the KERNELS section of a v3 graph entry (src/graph/kernels.c) over its IMAGES
 * references ([Note: two levels] in kcache/entry.h).
 *
 * What the writer lays out (kc_kernels_encode: each kernel's name, lowered name and its unit's image
 * index) reads back the same through kc_kernels_of once the entry's references are set
 * (kc_entry_set_images) and its images attached in memory (kc_entry_attach_image): kernels of one
 * compile unit share one image; with no image attached a kernel's image is NULL and its length the
 * reference's.  The reader refuses, as KC_ECORRUPT, every malformed section — zero or too many
 * kernels, an image index at or past the IMAGES count, an empty or NUL-bearing name, a short
 * section, trailing bytes — and a missing KERNELS or IMAGES section, or an attached image whose
 * length is not its reference's.  kc_entry_extract refuses (KC_MISS, writing nothing) while the
 * images are not attached, and writes only inside its folder whatever names the section holds.
 * No NVRTC, no GPU.
 */
#include "helpers.h"

#include "common/internal.h"
#include "graph/graph_internal.h"
#include "kcache.h"

static unsigned char img0[] = "IMAGE-ZERO", img1[] = "IMAGE-ONE!"; /* 10 bytes + NUL each */

static kc_entry *entry_with(const void *kernels, size_t len) {
    kc_entry *e;
    kc_key k = {{0}};
    k.bytes[0] = 1;
    assert_int_equal(kc_entry_new(&e, &k, "sm_80"), KC_OK);
    if (kernels) assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, kernels, len), KC_OK);
    return e;
}

/* The references of images 0 and 1 (as kind `is_ptx`: PTX keeps its NUL, a cubin does not). */
static void make_refs(kc_image_ref refs[2], const char *target, int is_ptx) {
    assert_int_equal(kc_image_ref_make(&refs[0], target, is_ptx, img0, is_ptx ? 11 : 10), KC_OK);
    assert_int_equal(kc_image_ref_make(&refs[1], target, is_ptx, img1, is_ptx ? 11 : 10), KC_OK);
}

/* Two units for three kernels: k0 and k2 share unit (image) 0, k1 has unit 1. */
static void write_section(kc_buf *b) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "g"), KC_OK);
    const char *names[] = {"k0", "k1", "k2"};
    for (int i = 0; i < 3; i++) {
        kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "f.cu", i == 1 ? "B" : "A", names[i], NULL, 0, NULL, 0, NULL, 0};
        assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    }
    kc_units u;
    kc_kernel_src ks[3];
    for (int i = 0; i < 3; i++) ks[i] = kc_graph_kernel_src(&d->kernels[i]);
    kc_units_group(ks, 3, &u);
    assert_int_equal(u.n, 2);
    assert_int_equal(u.unit_of[0], 0);
    assert_int_equal(u.unit_of[1], 1);
    assert_int_equal(u.unit_of[2], 0);
    char *low0[] = {"_lowered_k0", "_lowered_k2"}, *low1[] = {"_lowered_k1"};
    kc_compiled c0 = {img0, 10, low0[0], low0, 2, "", 0}, c1 = {img1, 10, low1[0], low1, 1, "", 0};
    kc_compiled *res[] = {&c0, &c1};
    kc_kernels_encode(b, d, &u, res);
    assert_false(b->failed);
    kc_graph_desc_free(d);
}

typedef struct seen {
    int n;
    char names[4][32], lowered[4][32], target[4][16];
    int ptx[4];
    size_t bytes[4];
} seen;

static void visit(const char *name, const char *lowered, const char *target, int is_ptx, size_t bytes, void *ctx) {
    seen *s = ctx;
    if (s->n >= 4) return;
    snprintf(s->names[s->n], 32, "%s", name);
    snprintf(s->lowered[s->n], 32, "%s", lowered);
    snprintf(s->target[s->n], 16, "%s", target);
    s->ptx[s->n] = is_ptx;
    s->bytes[s->n++] = bytes;
}

/* The graph entry of write_section with its references set, through encode and decode (what a
 * store holds), then its images attached when `attach`. */
static kc_entry *graph_entry(int is_ptx, int attach) {
    kc_buf b = {0};
    write_section(&b);
    kc_entry *e = entry_with(b.data, b.len);
    kc_buf_free(&b);
    kc_image_ref refs[2];
    make_refs(refs, is_ptx ? "compute_80" : "sm_80", is_ptx);
    assert_int_equal(kc_entry_set_images(e, refs, 2), KC_OK);
    void *bytes;
    size_t len;
    assert_int_equal(kc_entry_encode(e, &bytes, &len), KC_OK);
    kc_entry_free(e);
    assert_int_equal(kc_entry_decode(&e, bytes, len), KC_OK);
    kc_free(bytes);
    if (attach) {
        assert_int_equal(kc_entry_attach_image(e, 0, img0, is_ptx ? 11 : 10), KC_OK);
        assert_int_equal(kc_entry_attach_image(e, 1, img1, is_ptx ? 11 : 10), KC_OK);
    }
    return e;
}

static void test_round_trip(void **state) {
    (void)state;
    for (int is_ptx = 0; is_ptx <= 1; is_ptx++) {
        kc_entry *e = graph_entry(is_ptx, 1);
        seen s = {0};
        assert_int_equal(kc_entry_kernels(e, visit, &s), KC_OK);
        assert_int_equal(s.n, 3);
        const char *want_low[] = {"_lowered_k0", "_lowered_k1", "_lowered_k2"};
        for (int i = 0; i < 3; i++) {
            char nm[4];
            snprintf(nm, sizeof nm, "k%d", i);
            assert_string_equal(s.names[i], nm);
            assert_string_equal(s.lowered[i], want_low[i]);
            assert_string_equal(s.target[i], is_ptx ? "compute_80" : "sm_80");
            assert_int_equal(s.ptx[i], is_ptx);
            assert_int_equal(s.bytes[i], is_ptx ? 11 : 10); /* PTX keeps its NUL */
        }
        kimg *v;
        size_t n, nimg;
        char *strs;
        assert_int_equal(kc_kernels_of(e, &v, &n, &nimg, &strs), KC_OK);
        assert_int_equal(n, 3);
        assert_int_equal(nimg, 2);
        assert_int_equal(v[0].image_index, 0);
        assert_int_equal(v[1].image_index, 1);
        assert_int_equal(v[2].image_index, 0);
        assert_non_null(v[0].image);
        assert_ptr_equal(v[0].image, v[2].image); /* one image, shared by its unit's kernels */
        assert_ptr_not_equal(v[0].image, v[1].image);
        assert_memory_equal(v[0].image, "IMAGE-ZERO", 10);
        assert_memory_equal(v[1].image, "IMAGE-ONE!", 10);
        const void *att;
        size_t alen;
        assert_int_equal(kc_entry_attached_image(e, 1, &att, &alen), KC_OK);
        assert_ptr_equal(att, v[1].image); /* a view of the attached bytes, not a copy */
        for (int i = 0; i < 3; i++) {
            assert_int_equal(v[i].len, is_ptx ? 11 : 10);
            assert_int_equal(v[i].is_ptx, is_ptx);
            assert_string_equal(v[i].target, is_ptx ? "compute_80" : "sm_80");
        }
        free(v);
        free(strs);
        kc_entry_free(e);
    }
}

/* No image attached: the kernels read, each with image NULL and its reference's length. */
static void test_no_image_attached(void **state) {
    (void)state;
    kc_entry *e = graph_entry(0, 0);
    kimg *v;
    size_t n, nimg;
    char *strs;
    assert_int_equal(kc_kernels_of(e, &v, &n, &nimg, &strs), KC_OK);
    assert_int_equal(n, 3);
    assert_int_equal(nimg, 2);
    for (size_t i = 0; i < n; i++) {
        assert_null(v[i].image);
        assert_int_equal(v[i].len, 10);
    }
    free(v);
    free(strs);
    /* One of two attached: that one's kernels see it, the other's do not. */
    assert_int_equal(kc_entry_attach_image(e, 1, img1, 10), KC_OK);
    assert_int_equal(kc_kernels_of(e, &v, &n, &nimg, &strs), KC_OK);
    assert_null(v[0].image);
    assert_non_null(v[1].image);
    assert_null(v[2].image);
    free(v);
    free(strs);
    kc_entry_free(e);
}

/* An attached image whose length is not its reference's is refused (never handed on). */
static void test_attached_image_of_another_length_is_corrupt(void **state) {
    (void)state;
    kc_entry *e = graph_entry(0, 1);
    assert_int_equal(kc_entry_attach_image(e, 0, img0, 9), KC_OK); /* replaces image 0 */
    kimg *v = (kimg *)0x1;
    size_t n = 7;
    char *strs = (char *)0x1;
    assert_int_equal(kc_kernels_of(e, &v, &n, NULL, &strs), KC_ECORRUPT);
    assert_null(v);
    assert_null(strs);
    assert_int_equal(n, 0);
    kc_entry_free(e);
}

/* A hand-built KERNELS section: the kernels (name, lowered, image index). */
typedef struct hk {
    const char *name, *lowered;
    uint32_t image;
} hk;
static void put_kernels(kc_buf *b, const hk *k, uint32_t n) {
    kc_buf_put_u32(b, n);
    for (uint32_t i = 0; i < n; i++) {
        kc_buf_put_str(b, k[i].name);
        kc_buf_put_str(b, k[i].lowered);
        kc_buf_put_u32(b, k[i].image);
    }
}

/* Parse a hand-built KERNELS section over `nimg` (1 or 2) references; KC_OK or the reader's code. */
static int parse_with(const kc_buf *b, size_t nimg) {
    kc_entry *e = entry_with(b->data, b->len);
    kc_image_ref refs[2];
    make_refs(refs, "sm_80", 0);
    if (nimg) assert_int_equal(kc_entry_set_images(e, refs, nimg), KC_OK);
    seen s = {0};
    int rc = kc_entry_kernels(e, visit, &s);
    if (rc != KC_OK) assert_int_equal(s.n, 0); /* nothing visited before the whole section was read */
    kimg *v;
    size_t n;
    char *strs;
    int rc2 = kc_kernels_of(e, &v, &n, NULL, &strs);
    assert_int_equal(rc2, rc);
    if (rc2 == KC_OK) free(v), free(strs);
    kc_entry_free(e);
    return rc;
}
static int parse(const kc_buf *b) { return parse_with(b, 1); }

static void test_hand_built_good_section(void **state) {
    (void)state;
    kc_buf b = {0};
    hk k[] = {{"a", "a", 0}, {"b", "_Z1bv", 1}};
    put_kernels(&b, k, 2);
    assert_int_equal(parse_with(&b, 2), KC_OK);
    kc_buf_free(&b);
    /* KC_GRAPH_MAX_KERNELS kernels, all on one image, is the most a section may hold. */
    kc_buf_put_u32(&b, KC_GRAPH_MAX_KERNELS);
    for (int i = 0; i < KC_GRAPH_MAX_KERNELS; i++) {
        kc_buf_put_str(&b, "k");
        kc_buf_put_str(&b, "k");
        kc_buf_put_u32(&b, 0);
    }
    assert_int_equal(parse(&b), KC_OK);
    kc_buf_free(&b);
}

static void test_malformed_sections_are_corrupt(void **state) {
    (void)state;
    hk one[] = {{"a", "a", 0}};
    for (int c = 0; c < 14; c++) {
        kc_buf b = {0};
        switch (c) {
        case 0: put_kernels(&b, one, 0); break; /* no kernel */
        case 1:
            kc_buf_put_u32(&b, KC_GRAPH_MAX_KERNELS + 1); /* too many kernels */
            for (int i = 0; i <= KC_GRAPH_MAX_KERNELS; i++) {
                kc_buf_put_str(&b, "k");
                kc_buf_put_str(&b, "k");
                kc_buf_put_u32(&b, 0);
            }
            break;
        case 2: {
            hk k[] = {{"a", "a", 1}};
            put_kernels(&b, k, 1);
            break;
        } /* index == IMAGES count */
        case 3: {
            hk k[] = {{"a", "a", UINT32_MAX}};
            put_kernels(&b, k, 1);
            break;
        } /* index far past */
        case 4: {
            hk k[] = {{"", "a", 0}};
            put_kernels(&b, k, 1);
            break;
        } /* empty name */
        case 5: {
            hk k[] = {{"a", "", 0}};
            put_kernels(&b, k, 1);
            break;
        } /* empty lowered name */
        case 6:
            kc_buf_put_u32(&b, 1);
            kc_buf_put_u32(&b, 3);
            kc_buf_put(&b, "a\0b", 3); /* NUL in a name */
            kc_buf_put_str(&b, "a");
            kc_buf_put_u32(&b, 0);
            break;
        case 7:
            kc_buf_put_u32(&b, 1);
            kc_buf_put_str(&b, "a");
            kc_buf_put_u32(&b, 3); /* NUL in a lowered name */
            kc_buf_put(&b, "ab\0", 3);
            kc_buf_put_u32(&b, 0);
            break;
        case 8:
            kc_buf_put_u32(&b, 1);
            kc_buf_put_u32(&b, 4097); /* a name over 4096 bytes */
            for (int i = 0; i < 4097; i++) kc_buf_put_u8(&b, 'n');
            kc_buf_put_str(&b, "a");
            kc_buf_put_u32(&b, 0);
            break;
        case 9:
            put_kernels(&b, one, 1);
            kc_buf_put_u8(&b, 0);
            break; /* a trailing byte */
        case 10:
            kc_buf_put_u32(&b, 2);
            kc_buf_put_str(&b, "a");
            break; /* cut short in a kernel */
        case 11:
            kc_buf_put_u32(&b, 1);
            kc_buf_put_str(&b, "a");
            kc_buf_put_str(&b, "a");
            kc_buf_put_u8(&b, 0);
            break;                            /* cut short in an index */
        case 12: kc_buf_put_u8(&b, 1); break; /* cut short in the count */
        case 13:
            kc_buf_put_u32(&b, 1);
            kc_buf_put_u32(&b, UINT32_MAX);
            kc_buf_put(&b, "a", 1);
            break; /* huge length */
        }
        int rc = parse(&b);
        if (rc != KC_ECORRUPT) fail_msg("case %d: got %d (%s)", c, rc, kc_error_last()->message);
        kc_buf_free(&b);
    }
}

/* Every strict prefix of a good section is refused (ASan: no read past the bytes). */
static void test_every_truncation_is_corrupt(void **state) {
    (void)state;
    kc_buf b = {0};
    write_section(&b);
    assert_int_equal(parse_with(&b, 2), KC_OK);
    for (size_t n = 0; n < b.len; n++) {
        kc_buf t = {0};
        kc_buf_put(&t, b.data, n);
        if (parse_with(&t, 2) != KC_ECORRUPT) fail_msg("a section cut at %zu of %zu bytes was read", n, b.len);
        kc_buf_free(&t);
    }
    kc_buf_free(&b);
}

static void test_missing_sections_are_corrupt(void **state) {
    (void)state;
    /* No KERNELS section (the entry has IMAGES). */
    kc_entry *e = entry_with(NULL, 0);
    kc_image_ref refs[2];
    make_refs(refs, "sm_80", 0);
    assert_int_equal(kc_entry_set_images(e, refs, 2), KC_OK);
    seen s = {0};
    assert_int_equal(kc_entry_kernels(e, visit, &s), KC_ECORRUPT);
    assert_int_equal(s.n, 0);
    kc_entry_free(e);
    /* A good KERNELS section, no IMAGES section (a v2-shaped graph entry). */
    kc_buf b = {0};
    write_section(&b);
    assert_int_equal(parse_with(&b, 0), KC_ECORRUPT);
    assert_non_null(strstr(kc_error_last()->message, "IMAGES"));
    /* A malformed IMAGES section under a good KERNELS section. */
    e = entry_with(b.data, b.len);
    uint8_t bad[4] = {0}; /* count 0 */
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_IMAGES, bad, sizeof bad), KC_OK);
    assert_int_equal(kc_entry_kernels(e, visit, &s), KC_ECORRUPT);
    assert_int_equal(s.n, 0);
    kc_entry_free(e);
    kc_buf_free(&b);
}

/* Is `dir` absent? */
static int absent(const char *dir) { return access(dir, F_OK) != 0 && errno == ENOENT; }

/* Without its images attached, kc_entry_extract refuses (KC_MISS) and writes nothing, not even
 * its folder; attached, it writes each kernel's image (PTX without its NUL). */
static void test_extract_needs_the_images(void **state) {
    (void)state;
    char *tmp = kct_tmpdir("extract-miss");
    assert_non_null(tmp);
    char dir[1024], path[1200];
    snprintf(dir, sizeof dir, "%s/out", tmp);
    kc_entry *e = graph_entry(1, 0);
    int count = -1;
    assert_int_equal(kc_entry_extract(e, dir, &count), KC_MISS);
    assert_int_equal(count, -1);
    assert_true(absent(dir));
    /* One of two attached is not enough either. */
    assert_int_equal(kc_entry_attach_image(e, 0, img0, 11), KC_OK);
    assert_int_equal(kc_entry_extract(e, dir, &count), KC_MISS);
    assert_true(absent(dir));
    assert_int_equal(kc_entry_attach_image(e, 1, img1, 11), KC_OK);
    assert_int_equal(kc_entry_extract(e, dir, &count), KC_OK);
    assert_int_equal(count, 3);
    const char *files[][2] = {
        {"_lowered_k0", "IMAGE-ZERO"}, {"_lowered_k1", "IMAGE-ONE!"}, {"_lowered_k2", "IMAGE-ZERO"}};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s.compute_80.ptx", dir, files[i][0]);
        size_t len;
        uint8_t *got = kct_read(path, &len);
        if (!got) fail_msg("no %s", path);
        assert_int_equal(len, 10); /* the text, without the NUL the entry keeps */
        assert_memory_equal(got, files[i][1], 10);
        free(got);
    }
    kc_entry_free(e);
    kct_rmtree(tmp);
    free(tmp);
}

/* A lowered name "k/../../../x" (an imported entry's bytes: KERNELS names are any bytes but NUL)
 * must not lead kc_entry_extract out of its folder, even where the folder holds a "k" directory
 * that would make the path resolve: every name in the path is a plain file-name part. */
static void test_extract_stays_in_its_folder(void **state) {
    (void)state;
    char *tmp = kct_tmpdir("extract");
    assert_non_null(tmp);
    char dir[1024], path[1200];
    snprintf(dir, sizeof dir, "%s/a", tmp);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(dir, sizeof dir, "%s/a/b", tmp);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/k", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    kc_buf b = {0};
    hk k[] = {{"k", "k/../../../x", 0}};
    put_kernels(&b, k, 1);
    kc_entry *e = entry_with(b.data, b.len);
    kc_image_ref ref;
    assert_int_equal(kc_image_ref_make(&ref, "sm_80", 0, "ELF", 3), KC_OK);
    assert_int_equal(kc_entry_set_images(e, &ref, 1), KC_OK);
    assert_int_equal(kc_entry_attach_image(e, 0, "ELF", 3), KC_OK);
    int count = 0;
    assert_int_equal(kc_entry_extract(e, dir, &count), KC_OK);
    assert_int_equal(count, 1);
    snprintf(path, sizeof path, "%s/x.sm_80.cubin", tmp); /* where "<dir>/k/../../../x.sm_80.cubin" lands */
    if (access(path, F_OK) == 0) fail_msg("kc_entry_extract wrote outside its folder: %s", path);
    snprintf(path, sizeof path, "%s/k__________x.sm_80.cubin", dir);
    if (access(path, F_OK) != 0) fail_msg("the image is not at %s", path);
    kc_entry_free(e);
    kc_buf_free(&b);
    kct_rmtree(tmp);
    free(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_no_image_attached),
        cmocka_unit_test(test_attached_image_of_another_length_is_corrupt),
        cmocka_unit_test(test_hand_built_good_section),
        cmocka_unit_test(test_malformed_sections_are_corrupt),
        cmocka_unit_test(test_every_truncation_is_corrupt),
        cmocka_unit_test(test_missing_sections_are_corrupt),
        cmocka_unit_test(test_extract_needs_the_images),
        cmocka_unit_test(test_extract_stays_in_its_folder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

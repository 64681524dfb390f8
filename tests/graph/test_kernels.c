/*
 * test_kernels.c — the KERNELS section codec (src/graph/kernels.c): what the writer lays out
 * (images by compile unit, kernels pointing at their unit's image, PTX with its NUL) reads back
 * the same, and the reader refuses every malformed section — zero or too many images or
 * kernels, an image index out of range, an empty or unterminated PTX image, an empty or NUL-
 * bearing name, a short section, trailing bytes — as KC_ECORRUPT; and kc_entry_extract writes only
 * inside its folder, whatever names the section holds.  No NVRTC, no GPU.
 */
#include "helpers.h"

#include "common/internal.h"
#include "graph/graph_internal.h"
#include "kcache.h"

static kc_entry *entry_with(const void *kernels, size_t len) {
    kc_entry *e;
    kc_key k = {{0}};
    k.bytes[0] = 1;
    assert_int_equal(kc_entry_new(&e, &k, "sm_80"), KC_OK);
    if (kernels) assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, kernels, len), KC_OK);
    return e;
}

/* Two units for three kernels: k0 and k2 share image 0, k1 has image 1. */
static void write_section(kc_buf *b, const char *target, int is_ptx) {
    kc_graph_desc *d;
    assert_int_equal(kc_graph_desc_new(&d, "g"), KC_OK);
    const char *names[] = {"k0", "k1", "k2"};
    for (int i = 0; i < 3; i++) {
        kc_kernel_src k = {"f.cu", i == 1 ? "B" : "A", names[i], NULL, 0, NULL, 0, NULL, 0};
        assert_int_equal(kc_graph_add_kernel(d, &k, NULL), KC_OK);
    }
    kc_units u;
    kc_kernel_src ks[3];
    for (int i = 0; i < 3; i++) ks[i] = kc_graph_kernel_src(&d->kernels[i]);
    kc_units_group(ks, 3, &u);
    assert_int_equal(u.n, 2);
    static unsigned char img0[] = "IMAGE-ZERO", img1[] = "IMAGE-ONE!";
    char *low0[] = {"_lowered_k0", "_lowered_k2"}, *low1[] = {"_lowered_k1"};
    kc_compiled c0 = {img0, 10, low0[0], low0, 2, "", 0}, c1 = {img1, 10, low1[0], low1, 1, "", 0};
    kc_compiled *res[] = {&c0, &c1};
    kc_kernels_encode(b, d, &u, target, is_ptx, res);
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

static void test_round_trip(void **state) {
    (void)state;
    for (int is_ptx = 0; is_ptx <= 1; is_ptx++) {
        kc_buf b = {0};
        write_section(&b, is_ptx ? "compute_80" : "sm_80", is_ptx);
        kc_entry *e = entry_with(b.data, b.len);
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
        assert_ptr_equal(v[0].image, v[2].image); /* one image, shared */
        assert_memory_equal(v[1].image, "IMAGE-ONE!", 10);
        free(v);
        free(strs);
        kc_entry_free(e);
        kc_buf_free(&b);
    }
}

/* A hand-built section: nimg images (target, is_ptx, image), then the kernels. */
typedef struct hk { const char *name, *lowered; uint32_t image; } hk;
static void put_image(kc_buf *b, const char *target, uint8_t is_ptx, const void *img, uint64_t len) {
    kc_buf_put_str(b, target);
    kc_buf_put_u8(b, is_ptx);
    kc_buf_put_u64(b, len);
    kc_buf_put(b, img, (size_t)len);
}
static void put_kernels(kc_buf *b, const hk *k, uint32_t n) {
    kc_buf_put_u32(b, n);
    for (uint32_t i = 0; i < n; i++) {
        kc_buf_put_str(b, k[i].name);
        kc_buf_put_str(b, k[i].lowered);
        kc_buf_put_u32(b, k[i].image);
    }
}

static int parse(const kc_buf *b) {
    kc_entry *e = entry_with(b->data, b->len);
    seen s = {0};
    int rc = kc_entry_kernels(e, visit, &s);
    kc_entry_free(e);
    return rc;
}

static void test_hand_built_good_section(void **state) {
    (void)state;
    kc_buf b = {0};
    kc_buf_put_u32(&b, 1);
    put_image(&b, "sm_80", 0, "ELF", 3);
    hk k[] = {{"a", "a", 0}};
    put_kernels(&b, k, 1);
    assert_int_equal(parse(&b), KC_OK);
    kc_buf_free(&b);
}

static void test_malformed_sections_are_corrupt(void **state) {
    (void)state;
    hk one[] = {{"a", "a", 0}};
    for (int c = 0; c < 12; c++) {
        kc_buf b = {0};
        switch (c) {
        case 0: kc_buf_put_u32(&b, 0); put_kernels(&b, one, 1); break;              /* no image */
        case 1: kc_buf_put_u32(&b, 257); break;                                     /* too many images */
        case 2: kc_buf_put_u32(&b, 1); put_image(&b, "sm_80", 0, "E", 1); put_kernels(&b, one, 0); break; /* no kernel */
        case 3: { hk k[] = {{"a", "a", 1}};                                         /* index past the images */
                  kc_buf_put_u32(&b, 1); put_image(&b, "sm_80", 0, "E", 1); put_kernels(&b, k, 1); break; }
        case 4: kc_buf_put_u32(&b, 1); put_image(&b, "compute_80", 1, "PTX", 3);   /* PTX without its NUL */
                put_kernels(&b, one, 1); break;
        case 5: kc_buf_put_u32(&b, 1); put_image(&b, "sm_80", 0, "", 0); put_kernels(&b, one, 1); break; /* empty image */
        case 6: kc_buf_put_u32(&b, 1); put_image(&b, "sm_80", 2, "E", 1); put_kernels(&b, one, 1); break; /* kind 2 */
        case 7: { hk k[] = {{"", "a", 0}};                                          /* empty name */
                  kc_buf_put_u32(&b, 1); put_image(&b, "sm_80", 0, "E", 1); put_kernels(&b, k, 1); break; }
        case 8: kc_buf_put_u32(&b, 1); kc_buf_put_u32(&b, 5); kc_buf_put(&b, "sm\0_8", 5); /* NUL in a string */
                kc_buf_put_u8(&b, 0); kc_buf_put_u64(&b, 1); kc_buf_put(&b, "E", 1); put_kernels(&b, one, 1); break;
        case 9: kc_buf_put_u32(&b, 1); put_image(&b, "sm_80", 0, "E", 1); put_kernels(&b, one, 1);
                kc_buf_put_u8(&b, 0); break;                                        /* a trailing byte */
        case 10: kc_buf_put_u32(&b, 1); kc_buf_put_str(&b, "sm_80"); kc_buf_put_u8(&b, 0);
                 kc_buf_put_u64(&b, UINT64_MAX); break;                             /* image longer than the section */
        case 11: kc_buf_put_u32(&b, 1); put_image(&b, "sm_80", 0, "E", 1);
                 kc_buf_put_u32(&b, 2); kc_buf_put_str(&b, "a"); break;             /* cut short */
        }
        int rc = parse(&b);
        if (rc != KC_ECORRUPT) fail_msg("case %d: got %d (%s)", c, rc, kc_error_last()->message);
        kc_buf_free(&b);
    }
}

static void test_missing_section_is_corrupt(void **state) {
    (void)state;
    kc_entry *e = entry_with(NULL, 0);
    seen s = {0};
    assert_int_equal(kc_entry_kernels(e, visit, &s), KC_ECORRUPT);
    assert_int_equal(s.n, 0);
    kc_entry_free(e);
}

/* An image's target that names "d/../../../x" (an imported entry's bytes) must not lead
 * kc_entry_extract out of its folder, even where the folder holds a "k.d" directory that
 * would make the path resolve: every name in the path is a plain file-name part. */
static void test_extract_stays_in_its_folder(void **state) {
    (void)state;
    char *tmp = kct_tmpdir("extract");
    assert_non_null(tmp);
    char dir[1024], path[1200];
    snprintf(dir, sizeof dir, "%s/a", tmp);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(dir, sizeof dir, "%s/a/b", tmp);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(path, sizeof path, "%s/k.d", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    kc_buf b = {0};
    kc_buf_put_u32(&b, 1);
    put_image(&b, "d/../../../x", 0, "ELF", 3);
    hk k[] = {{"k", "k", 0}};
    put_kernels(&b, k, 1);
    kc_entry *e = entry_with(b.data, b.len);
    int count = 0;
    assert_int_equal(kc_entry_extract(e, dir, &count), KC_OK);
    assert_int_equal(count, 1);
    snprintf(path, sizeof path, "%s/x.cubin", tmp); /* where "<dir>/k.d/../../../x.cubin" lands */
    if (access(path, F_OK) == 0) fail_msg("kc_entry_extract wrote outside its folder: %s", path);
    snprintf(path, sizeof path, "%s/k.d__________x.cubin", dir);
    if (access(path, F_OK) != 0) fail_msg("the image is not at %s", path);
    kc_entry_free(e);
    kc_buf_free(&b);
    kct_rmtree(tmp);
    free(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_hand_built_good_section),
        cmocka_unit_test(test_malformed_sections_are_corrupt),
        cmocka_unit_test(test_missing_section_is_corrupt),
        cmocka_unit_test(test_extract_stays_in_its_folder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

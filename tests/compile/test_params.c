/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_params.c — a kernel's parameter table (compile/params.c) read from real NVRTC output:
 * cubins for sm_80, sm_90, sm_100, sm_120 and PTX for compute_80, of kernels shaped like a
 * tensor runtime's (pointers, const __restrict__ pointers, int, unsigned, size_t, float,
 * double, bool, a 12-byte struct, __nv_bfloat16 and __half by value, a template
 * instantiation, no parameters, 64 parameters of mixed sizes, a 4400-byte struct past the old
 * 4 KiB limit).  Each table is checked against the C ABI's layout written out here, and every
 * cubin's table against the PTX's.  Then hostile images: a cubin truncated at every length, a
 * PTX text cut at every length around an entry, a cubin's attributes patched (a size bit
 * flipped, an ordinal duplicated, one out of range, a record dropped, the total changed,
 * offsets overlapping, an unknown format, a record running past its section, the section
 * renamed), hand-written PTX (comments, strings, .ptr, .weak, prefix names, limits); each
 * KC_ECORRUPT naming what, never a crash.  Needs NVRTC and the toolkit's headers (they come
 * with the machine), not a GPU.
 */
#include "helpers.h"

#include "common/internal.h"
#include "compile/elf.h"
#include "compile/params.h"
#include "kcache.h"

/* ---- the kernels and their expected tables (C ABI: each at the next multiple of its alignment) ---- */

typedef struct want {
    uint32_t offset, size, align;
    uint8_t cls; /* as PTX says it */
} want;

static const want W_MIX[] = {
    {0, 8, 8, KC_PARAM_INT},     /* float *p */
    {8, 8, 8, KC_PARAM_INT},     /* const float *__restrict__ q */
    {16, 4, 4, KC_PARAM_INT},    /* int n */
    {20, 4, 4, KC_PARAM_INT},    /* unsigned u */
    {24, 8, 8, KC_PARAM_INT},    /* size_t sz */
    {32, 4, 4, KC_PARAM_FLOAT},  /* float f */
    {40, 8, 8, KC_PARAM_FLOAT},  /* double d */
    {48, 1, 1, KC_PARAM_INT},    /* bool b */
    {52, 12, 4, KC_PARAM_BYTES}, /* S12 s */
    {64, 2, 2, KC_PARAM_BYTES},  /* __nv_bfloat16 bf */
    {66, 2, 2, KC_PARAM_BYTES},  /* __half h */
};
static const want W_KT[] = {{0, 8, 8, KC_PARAM_INT}, {8, 8, 8, KC_PARAM_FLOAT}, {16, 4, 4, KC_PARAM_INT}};
static const want W_BIG[] = {{0, 1, 1, KC_PARAM_INT}, {4, 4400, 4, KC_PARAM_BYTES}, {4408, 8, 8, KC_PARAM_FLOAT}};

/* k_many's 64 parameters cycle through these C types. */
static const struct {
    const char *ctype;
    uint32_t size;
    uint8_t cls;
} MANY[] = {
    {"char", 1, KC_PARAM_INT},      {"double", 8, KC_PARAM_FLOAT}, {"short", 2, KC_PARAM_INT},
    {"int *", 8, KC_PARAM_INT},     {"float", 4, KC_PARAM_FLOAT},  {"bool", 1, KC_PARAM_INT},
    {"long long", 8, KC_PARAM_INT},
};
#define NMANY 64

enum { K_MIX, K_NONE, K_KT, K_MANY, K_BIG, NKERNELS };
static const char *NAMES[NKERNELS] = {"k_mix", "k_none", "kt<double>", "k_many", "k_big"};

static const char *SRC_HEAD =
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "struct S12 { float a, b, c; };\n"
    "struct Big { int v[1100]; };\n"
    "extern \"C\" __global__ void k_mix(float *p, const float *__restrict__ q, int n, unsigned u, size_t sz,\n"
    "    float f, double d, bool b, S12 s, __nv_bfloat16 bf, __half h) {\n"
    "  __shared__ float sh[32];\n" /* a barrier and blockIdx.z: NVAL and BVAL records in .nv.info */
    "  sh[threadIdx.x % 32] = f;\n"
    "  __syncthreads();\n"
    "  if (b) p[n + blockIdx.z] = q[u] + (float)sz + sh[3] + (float)d + s.a + s.c + __bfloat162float(bf) + __half2float(h);\n"
    "}\n"
    "extern \"C\" __global__ void k_none() {}\n"
    "template <typename T> __global__ void kt(T *x, T v, int n) { if (n) x[n] = v; }\n"
    "extern \"C\" __global__ void k_big(char c, Big big, double d) { if (c) ((double *)0)[big.v[c]] = d; }\n";

static char *many_source(void) {
    kc_buf b = {0};
    kc_buf_printf(&b, "%sextern \"C\" __global__ void k_many(", SRC_HEAD);
    for (int i = 0; i < NMANY; i++) kc_buf_printf(&b, "%s%s a%d", i ? ", " : "", MANY[i % 7].ctype, i);
    kc_buf_printf(&b, ") {\n  double s = 0;\n");
    for (int i = 0; i < NMANY; i++)
        kc_buf_printf(&b, "  s += (double)%sa%d;\n", strchr(MANY[i % 7].ctype, '*') ? "(size_t)" : "", i);
    kc_buf_printf(&b, "  if (s == 3) *(double *)a3 = s + a%d;\n}\n", NMANY - 1);
    return kc_buf_take_str(&b);
}

static size_t expected(int k, want *out) {
    switch (k) {
    case K_MIX: memcpy(out, W_MIX, sizeof W_MIX); return KC_ARRAY_LEN(W_MIX);
    case K_NONE: return 0;
    case K_KT: memcpy(out, W_KT, sizeof W_KT); return KC_ARRAY_LEN(W_KT);
    case K_BIG: memcpy(out, W_BIG, sizeof W_BIG); return KC_ARRAY_LEN(W_BIG);
    default: break;
    }
    uint32_t end = 0;
    for (int i = 0; i < NMANY; i++) {
        uint32_t s = MANY[i % 7].size;
        end = (end + s - 1) / s * s;
        out[i] = (want){end, s, s, MANY[i % 7].cls};
        end += s;
    }
    return NMANY;
}

/* ---- compiled once for the whole file ---- */

#define NTARGETS 5
static const char *TARGETS[NTARGETS] = {"sm_80", "sm_90", "sm_100", "sm_120", "compute_80"};
static kc_compiled *IMG[NTARGETS]; /* NULL: the local NVRTC does not know the target (said on stderr) */
#define PTX80 (NTARGETS - 1)

static int is_ptx(size_t t) { return strncmp(TARGETS[t], "compute_", 8) == 0; }

static int setup(void **state) {
    (void)state;
    char id[33];
    if (kc_toolkit_headers_id(id) != KC_OK) fail_msg("the toolkit's headers: %s", kc_error_last()->message);
    char *src = many_source();
    assert_non_null(src);
    static const char *opts[] = {"--std=c++17"};
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION,    "params.cu", src, NULL, NULL, 0, opts, 1, NULL,
                       KC_KERNEL_TOOLKIT_HEADERS};
    for (size_t t = 0; t < NTARGETS; t++) {
        int rc = kc_compile_names(&k, NAMES, NKERNELS, TARGETS[t], &IMG[t]);
        if (rc && (strcmp(TARGETS[t], "sm_100") == 0 || strcmp(TARGETS[t], "sm_120") == 0) &&
            strstr(kc_error_last()->message, "arch")) {
            fprintf(stderr, "test_params: this NVRTC has no %s (%s): not checked\n", TARGETS[t],
                    kc_error_last()->message);
            IMG[t] = NULL;
            continue;
        }
        if (rc) fail_msg("compile for %s: %s", TARGETS[t], kc_error_last()->message);
        assert_int_equal(IMG[t]->nnames, NKERNELS);
    }
    free(src);
    assert_non_null(IMG[0]);
    assert_non_null(IMG[1]);
    assert_non_null(IMG[PTX80]);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (size_t t = 0; t < NTARGETS; t++) kc_compiled_free(IMG[t]);
    return 0;
}

static kc_params must_read(const void *img, size_t len, int ptx, const char *sym) {
    kc_params p;
    int rc = kc_params_read(img, len, ptx, sym, &p);
    if (rc) fail_msg("kc_params_read(%s): %s", sym, kc_error_last()->message);
    return p;
}

/* rc must be KC_ECORRUPT and its message hold `what`. */
static void must_be_corrupt(int rc, const char *what, const char *how) {
    if (rc != KC_ECORRUPT) fail_msg("%s: expected KC_ECORRUPT, got %d (%s)", how, rc, kc_error_last()->message);
    if (what && !strstr(kc_error_last()->message, what))
        fail_msg("%s: the message does not say \"%s\": %s", how, what, kc_error_last()->message);
}

/* ---- 1. real kernels: the table, and cubin and PTX agree ---- */

static void test_tables_of_real_kernels(void **state) {
    (void)state;
    want w[NMANY];
    for (int k = 0; k < NKERNELS; k++) {
        size_t n = expected(k, w);
        kc_params ptx = must_read(IMG[PTX80]->image, IMG[PTX80]->len, 1, IMG[PTX80]->lowered_names[k]);
        assert_int_equal(ptx.n, n);
        for (size_t t = 0; t < NTARGETS; t++) {
            if (!IMG[t]) continue;
            const char *sym = IMG[t]->lowered_names[k];
            if (k == K_KT) assert_string_equal(sym, "_Z2ktIdEvPT_S0_i");
            kc_params p = must_read(IMG[t]->image, IMG[t]->len, is_ptx(t), sym);
            if (p.n != n) fail_msg("%s on %s: %zu parameters, expected %zu", sym, TARGETS[t], p.n, n);
            assert_int_equal(p.total, n ? w[n - 1].offset + w[n - 1].size : 0);
            assert_true(n ? p.v != NULL : p.v == NULL);
            for (size_t i = 0; i < n; i++) {
                if (p.v[i].offset != w[i].offset || p.v[i].size != w[i].size)
                    fail_msg("%s on %s, parameter %zu: (%u, %u), expected (%u, %u)", sym, TARGETS[t], i, p.v[i].offset,
                             p.v[i].size, w[i].offset, w[i].size);
                /* The cubin and the PTX of the same kernel agree on every parameter's place. */
                assert_int_equal(p.v[i].offset, ptx.v[i].offset);
                assert_int_equal(p.v[i].size, ptx.v[i].size);
                if (is_ptx(t)) {
                    assert_int_equal(p.v[i].align, w[i].align);
                    if (p.v[i].cls != w[i].cls)
                        fail_msg("%s parameter %zu: class %u, expected %u", sym, i, p.v[i].cls, w[i].cls);
                } else {
                    assert_int_equal(p.v[i].align, 0);
                    assert_int_equal(p.v[i].cls, KC_PARAM_ANY);
                }
            }
            kc_params_free(&p);
            assert_null(p.v);
            assert_int_equal(p.n, 0);
        }
        kc_params_free(&ptx);
    }
    kc_params_free(NULL);
}

static void test_ptx_with_its_nul(void **state) {
    (void)state;
    const kc_compiled *c = IMG[PTX80];
    kc_params p = must_read(c->image, c->len + 1, 1, "k_mix"); /* the terminating NUL may be counted */
    assert_int_equal(p.n, KC_ARRAY_LEN(W_MIX));
    kc_params_free(&p);
}

/* ---- 2. the wrong kernel, the wrong kind of image, bad arguments, no memory ---- */

static void test_wrong_kernel_or_image(void **state) {
    (void)state;
    const kc_compiled *cu = IMG[1], *px = IMG[PTX80];
    kc_params p;
    must_be_corrupt(kc_params_read(cu->image, cu->len, 0, "k_nope", &p), "no kernel k_nope", "cubin, no such kernel");
    assert_null(p.v);
    must_be_corrupt(kc_params_read(cu->image, cu->len, 0, "k_mi", &p), "no kernel k_mi", "cubin, a prefix of a name");
    must_be_corrupt(kc_params_read(px->image, px->len, 1, "k_nope", &p), "no PTX entry k_nope", "PTX, no such kernel");
    must_be_corrupt(kc_params_read(px->image, px->len, 1, "k_mi", &p), "no PTX entry k_mi", "PTX, a prefix of a name");
    must_be_corrupt(kc_params_read(px->image, px->len, 0, "k_mix", &p), "not an ELF64", "PTX read as a cubin");
    must_be_corrupt(kc_params_read(cu->image, cu->len, 1, "k_mix", &p), "no PTX entry", "a cubin read as PTX");
    /* A function symbol that is not a kernel has no table. */
    uint8_t *img = malloc(cu->len);
    memcpy(img, cu->image, cu->len);
    kc_elf_section_info s;
    assert_int_equal(kc_elf_section(img, cu->len, ".nv.info.k_mix", &s), 1);
    assert_int_equal(kc_elf_section(img, cu->len, ".nv.info.k_mi", &s), 0);
    assert_int_equal(kc_elf_section(img, cu->len, ".nv.info.k_mix", &s), 1);
    /* Rename the section in the section name table: ".nv.info.k_mix" -> ".nv.info.k_miX". */
    uint64_t shoff = kc_rd_u64(img + 40);
    uint16_t es = kc_rd_u16(img + 58), shstrndx = kc_rd_u16(img + 62);
    uint8_t *at = img + kc_rd_u64(img + shoff + (size_t)shstrndx * es + 24) + kc_rd_u32(img + shoff + s.index * es);
    assert_memory_equal(at, ".nv.info.k_mix", sizeof ".nv.info.k_mix");
    at[sizeof ".nv.info.k_mix" - 2] = 'X';
    must_be_corrupt(kc_params_read(img, cu->len, 0, "k_mix", &p), "no parameter table for k_mix", "section renamed");
    /* Not a CUDA machine. */
    memcpy(img, cu->image, cu->len);
    img[18] = 62; /* EM_X86_64 */
    must_be_corrupt(kc_params_read(img, cu->len, 0, "k_mix", &p), "ELF machine 62", "not EM_CUDA");
    free(img);
    assert_int_equal(kc_params_read(NULL, 10, 0, "k", &p), KC_EINVAL);
    assert_int_equal(kc_params_read(cu->image, cu->len, 0, NULL, &p), KC_EINVAL);
    assert_int_equal(kc_params_read(cu->image, cu->len, 0, "", &p), KC_EINVAL);
    assert_int_equal(kc_params_read(cu->image, cu->len, 0, "k", NULL), KC_EINVAL);
    must_be_corrupt(kc_params_read(NULL, 0, 1, "k", &p), "no PTX entry", "empty PTX");
    must_be_corrupt(kc_params_read(NULL, 0, 0, "k", &p), NULL, "empty cubin");
}

static void test_no_memory(void **state) {
    (void)state;
    for (size_t t = 1; t < NTARGETS; t += PTX80 - 1) {
        const kc_compiled *c = IMG[t];
        for (long nth = 1;; nth++) {
            kc_params p;
            kc_alloc_fail_at(nth, false);
            int rc = kc_params_read(c->image, c->len, is_ptx(t), c->lowered_names[K_MANY], &p);
            kc_alloc_fail_at(0, false);
            if (rc == KC_OK) {
                assert_int_equal(p.n, NMANY);
                kc_params_free(&p);
                assert_true(nth > 1); /* at least one allocation was failed on the way */
                break;
            }
            assert_int_equal(rc, KC_ENOMEM);
            assert_null(p.v);
            assert_true(nth < 100);
        }
    }
}

/* ---- 3. truncated images ---- */

static void test_truncated_cubin(void **state) {
    (void)state;
    for (size_t t = 0; t < PTX80; t++) {
        if (!IMG[t]) continue;
        const kc_compiled *c = IMG[t];
        /* On the heap at exactly each length, so that ASan sees a read one byte past it. */
        for (size_t len = 0; len < c->len; len += (t == 1 ? 1 : 7)) {
            uint8_t *img = malloc(len ? len : 1);
            memcpy(img, c->image, len);
            kc_params p;
            int rc = kc_params_read(img, len, 0, "k_mix", &p);
            if (rc != KC_ECORRUPT) fail_msg("%s cut to %zu of %zu bytes: %d", TARGETS[t], len, c->len, rc);
            assert_null(p.v);
            free(img);
        }
    }
}

static void test_truncated_ptx(void **state) {
    (void)state;
    const kc_compiled *c = IMG[PTX80];
    const char *txt = (const char *)c->image;
    const char *entry = strstr(txt, ".entry k_mix(");
    assert_non_null(entry);
    const char *brace = strchr(entry, '{');
    assert_non_null(brace);
    size_t from = (size_t)(entry - txt), body = (size_t)(brace - txt);
    for (size_t len = 0; len <= c->len; len += (len + 64 < from || len > body + 64 ? 61 : 1)) {
        char *img = malloc(len ? len : 1);
        memcpy(img, txt, len);
        kc_params p;
        int rc = kc_params_read(img, len, 1, "k_mix", &p);
        if (len <= body) { /* cut anywhere before the body: the table cannot be read whole */
            if (rc != KC_ECORRUPT)
                fail_msg("PTX cut to %zu bytes (entry at %zu, body at %zu): %d", len, from, body, rc);
            assert_null(p.v);
        } else {
            if (rc != KC_OK) fail_msg("PTX cut to %zu bytes, after the list: %s", len, kc_error_last()->message);
            assert_int_equal(p.n, KC_ARRAY_LEN(W_MIX));
            assert_int_equal(p.v[10].offset, 66);
            kc_params_free(&p);
        }
        free(img);
    }
}

/* ---- 4. a cubin's attributes patched ---- */

typedef struct rec {
    size_t at; /* offset of the record in the image */
    uint8_t fmt, attr;
} rec;

/* The records of section `sec` in `img`: fills r (up to cap), returns how many. */
static size_t records(uint8_t *img, size_t len, const char *sec, rec *r, size_t cap, size_t *sec_at, size_t *sec_size) {
    kc_elf_section_info s;
    assert_int_equal(kc_elf_section(img, len, sec, &s), 1);
    *sec_at = (size_t)(s.data - img);
    *sec_size = s.size;
    size_t n = 0;
    for (size_t i = 0; i < s.size && n < cap;) {
        r[n] = (rec){*sec_at + i, s.data[i], s.data[i + 1]};
        n++;
        i += 4 + (s.data[i] == 4 ? kc_rd_u16(s.data + i + 2) : 0);
    }
    return n;
}

/* The record with attribute `attr` whose ordinal (KPARAM_INFO) is `ordinal`; any ordinal for others. */
static size_t find(const uint8_t *img, const rec *r, size_t n, uint8_t attr, int ordinal) {
    for (size_t i = 0; i < n; i++)
        if (r[i].attr == attr && (ordinal < 0 || kc_rd_u16(img + r[i].at + 8) == ordinal)) return r[i].at;
    fail_msg("no attribute 0x%02x (ordinal %d)", attr, ordinal);
    return 0;
}

static void test_patched_cubin(void **state) {
    (void)state;
    for (size_t t = 0; t < PTX80; t++) {
        if (!IMG[t]) continue;
        const kc_compiled *c = IMG[t];
        uint8_t *img = malloc(c->len);
        rec r[64];
        size_t sec_at, sec_size, n;
        kc_params p;
#define FRESH() (memcpy(img, c->image, c->len), n = records(img, c->len, ".nv.info.k_mix", r, 64, &sec_at, &sec_size))
#define REC(attr, ord) find(img, r, n, (attr), (ord))
#define CORRUPT(what, how) must_be_corrupt(kc_params_read(img, c->len, 0, "k_mix", &p), (what), (how))
        FRESH();
        p = must_read(img, c->len, 0, "k_mix"); /* the walk below sees what the reader sees */
        kc_params_free(&p);
        size_t nk = 0, nfmt[5] = {0};
        for (size_t i = 0; i < n; i++) {
            nk += r[i].attr == 0x17;
            nfmt[r[i].fmt <= 4 ? r[i].fmt : 0]++;
        }
        assert_int_equal(nk, KC_ARRAY_LEN(W_MIX));
        /* The framing of every format is exercised by real records: BVAL (the barrier count)
         * everywhere, NVAL on sm_80 (4 bytes each, like HVAL). */
        assert_int_equal(nfmt[0], 0);
        assert_true(nfmt[2] >= 1 && nfmt[3] >= 1 && nfmt[4] >= KC_ARRAY_LEN(W_MIX));
        if (t == 0) assert_true(nfmt[1] >= 1);
        assert_int_equal(r[n - 1].at + 4 + (r[n - 1].fmt == 4 ? kc_rd_u16(img + r[n - 1].at + 2) : 0),
                         sec_at + sec_size);

        /* A size bit flipped: parameter 2 (int, 4 bytes) becomes 5 bytes and runs into parameter 3. */
        FRESH();
        img[REC(0x17, 2) + 4 + 10] ^= 0x04; /* bit 18 of the flags word: the size's low bit */
        CORRUPT("overlaps", "a size bit flipped");
        /* The last parameter one byte larger: the end no longer matches the recorded total. */
        FRESH();
        img[REC(0x17, 10) + 4 + 10] ^= 0x04;
        CORRUPT("table says 68", "last size changed");
        /* Size 0. */
        FRESH();
        kc_wr_u32(img + REC(0x17, 5) + 4 + 8, kc_rd_u32(img + REC(0x17, 5) + 4 + 8) & 0x3ffff);
        CORRUPT("size 0", "size 0");
        /* An ordinal duplicated (3 says it is 4). */
        FRESH();
        kc_wr_u16(img + REC(0x17, 3) + 4 + 4, 4);
        CORRUPT("ordinal 4 appears twice", "ordinal duplicated");
        /* An ordinal out of range (and so one missing). */
        FRESH();
        kc_wr_u16(img + REC(0x17, 7) + 4 + 4, 11);
        CORRUPT("ordinal 11 of 11", "ordinal out of range");
        /* A record dropped (its attribute id changed to one the reader skips): ordinal 10 has no slot. */
        FRESH();
        img[REC(0x17, 4) + 1] = 0x7e;
        CORRUPT("ordinal", "a record dropped");
        /* The last record dropped: all ordinals fit, but the total says 68 bytes. */
        FRESH();
        img[REC(0x17, 10) + 1] = 0x7e;
        CORRUPT("table says 68", "the last record dropped");
        /* Offsets out of order: parameter 6 placed on parameter 5. */
        FRESH();
        kc_wr_u16(img + REC(0x17, 6) + 4 + 6, 32);
        CORRUPT("overlaps", "offsets overlapping");
        /* The recorded total changed. */
        FRESH();
        kc_wr_u16(img + REC(0x19, -1) + 2, 72);
        CORRUPT("table says 72", "CBANK_PARAM_SIZE changed");
        /* The bank's size changed. */
        FRESH();
        kc_wr_u16(img + REC(0x0a, -1) + 4 + 6, 64);
        CORRUPT("bank holds 64", "PARAM_CBANK size changed");
        /* A parameter record of the wrong length. */
        FRESH();
        kc_wr_u16(img + REC(0x17, 0) + 2, 8);
        CORRUPT("8 bytes", "KPARAM_INFO of 8 bytes");
        /* CBANK_PARAM_SIZE in the wrong format. */
        FRESH();
        img[REC(0x19, -1)] = 2;
        CORRUPT("format 2", "CBANK_PARAM_SIZE as BVAL");
        /* An unknown format. */
        FRESH();
        img[REC(0x17, 1)] = 5;
        CORRUPT("unknown attribute format 0x05", "format 5");
        /* A record running past its section. */
        FRESH();
        kc_wr_u16(img + r[n - 1].at + 2, 0xfff0);
        img[r[n - 1].at] = 4;
        CORRUPT("runs past the section", "a record past the end");
        /* The section one byte short of its last record. */
        FRESH();
        {
            kc_elf_section_info s;
            assert_int_equal(kc_elf_section(img, c->len, ".nv.info.k_mix", &s), 1);
            /* the section header's sh_size: find the header whose offset field is sec_at */
            uint64_t shoff = kc_rd_u64(img + 40);
            uint8_t *sh = img + shoff + s.index * kc_rd_u16(img + 58);
            assert_int_equal(kc_rd_u64(sh + 24), sec_at);
            kc_wr_u64(sh + 32, sec_size - 1);
            CORRUPT(NULL, "section cut short");
            kc_wr_u64(sh + 32, 0xffffffffull);
            CORRUPT("out of bounds", "section past the image");
            kc_wr_u64(sh + 32, sec_size);
            kc_wr_u32(sh + 4, 1); /* SHT_PROGBITS */
            CORRUPT("section type 0x1", "wrong section type");
        }
        /* Another section (the kernel's code) or a segment running past the image: the image is cut. */
        FRESH();
        {
            kc_elf_section_info s;
            assert_int_equal(kc_elf_section(img, c->len, ".text.k_mix", &s), 1);
            uint8_t *sh = img + kc_rd_u64(img + 40) + s.index * kc_rd_u16(img + 58);
            kc_wr_u64(sh + 32, c->len);
            CORRUPT("out of bounds", "code section past the image");
            FRESH();
            assert_true(kc_rd_u16(img + 56) >= 1); /* e_phnum */
            uint8_t *ph = img + kc_rd_u64(img + 32) + (kc_rd_u16(img + 56) - 1) * kc_rd_u16(img + 54);
            kc_wr_u64(ph + 32, c->len); /* p_filesz of the last segment */
            CORRUPT("segment", "segment past the image");
            FRESH();
            kc_wr_u16(img + 56, 0xfff0);
            CORRUPT("program header table out of bounds", "program headers past the image");
        }
        /* The kernel's symbol: not marked a kernel; its table said to belong to other code; twice. */
        FRESH();
        {
            kc_elf_section_info text, st, info;
            assert_int_equal(kc_elf_section(img, c->len, ".text.k_mix", &text), 1);
            assert_int_equal(kc_elf_section(img, c->len, ".symtab", &st), 1);
            assert_int_equal(kc_elf_section(img, c->len, ".nv.info.k_mix", &info), 1);
            assert_true(info.flags & 0x40); /* SHF_INFO_LINK: the check below is live on real cubins */
            assert_int_equal(info.info, text.index);
            uint8_t *sym = NULL, *other = NULL;
            for (size_t o = 0; o + 24 <= st.size; o += 24) {
                uint8_t *e = img + (st.data - img) + o;
                if ((e[4] & 0xf) == 2 && kc_rd_u16(e + 6) == text.index) sym = e;
                else if ((e[4] & 0xf) == 2 && !other) other = e;
            }
            assert_non_null(sym);
            assert_non_null(other);
            assert_int_equal(sym[5] & 0x10, 0x10);
            sym[5] &= (uint8_t)~0x10;
            CORRUPT("a device function, not a kernel", "STO_CUDA_ENTRY cleared");
            FRESH();
            uint8_t *sh = img + kc_rd_u64(img + 40) + info.index * kc_rd_u16(img + 58);
            kc_wr_u32(sh + 44, (uint32_t)text.index + 1);
            CORRUPT("belongs to section", "sh_info of another section");
            FRESH();
            memcpy(other, sym, 4); /* another function named k_mix */
            CORRUPT("appears 2 times", "two functions of one name");
        }
        /* Two sections with the name. */
        FRESH();
        {
            kc_elf_section_info s;
            assert_int_equal(kc_elf_section(img, c->len, ".nv.info.k_mix", &s), 1);
            uint64_t shoff = kc_rd_u64(img + 40);
            uint16_t es = kc_rd_u16(img + 58);
            size_t other = s.index == 1 ? 2 : 1;
            kc_wr_u32(img + shoff + other * es, kc_rd_u32(img + shoff + s.index * es));
            CORRUPT("appears twice", "two sections of one name");
        }
        /* Large parameters (past 4 KiB) come in KPARAM_INFO_V2 records (0x45): the same checks. */
        memcpy(img, c->image, c->len);
        n = records(img, c->len, ".nv.info.k_big", r, 64, &sec_at, &sec_size);
        size_t v2 = 0;
        for (size_t i = 0; i < n; i++) v2 += r[i].attr == 0x45;
        assert_int_equal(v2, 3);
        kc_wr_u16(img + find(img, r, n, 0x45, 2) + 4 + 6, 4400); /* the double onto the struct */
        must_be_corrupt(kc_params_read(img, c->len, 0, "k_big", &p), "overlaps", "V2 offsets overlapping");
        memcpy(img, c->image, c->len);
        kc_wr_u16(img + find(img, r, n, 0x45, 0) + 4 + 4, 1);
        must_be_corrupt(kc_params_read(img, c->len, 0, "k_big", &p), "ordinal 1 appears twice",
                        "V2 ordinal duplicated");
        memcpy(img, c->image, c->len);
        kc_wr_u16(img + find(img, r, n, 0x45, 2) + 4 + 8, 16);
        must_be_corrupt(kc_params_read(img, c->len, 0, "k_big", &p), "table says 4416", "V2 size changed");
        free(img);
#undef FRESH
#undef REC
#undef CORRUPT
    }
}

/* A device function has a .nv.info.<name> section too (with -rdc), but no parameter table. */
static void test_device_function(void **state) {
    (void)state;
    static const char *opts[] = {"--relocatable-device-code=true"};
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION,
                       "dev.cu",
                       "__device__ __noinline__ int dev(int *p) { return p[1] + 1; }\n"
                       "extern \"C\" __global__ void kk(int *p) { p[0] = dev(p); }\n",
                       "kk",
                       NULL,
                       0,
                       opts,
                       1,
                       NULL,
                       0};
    kc_compiled *c;
    if (kc_compile_kernel(&k, "sm_90", &c)) fail_msg("%s", kc_error_last()->message);
    kc_elf_section_info s;
    assert_int_equal(kc_elf_section(c->image, c->len, ".nv.info._Z3devPi", &s), 1);
    assert_int_equal(kc_elf_has_function(c->image, c->len, "_Z3devPi"), 1);
    kc_params p;
    must_be_corrupt(kc_params_read(c->image, c->len, 0, "_Z3devPi", &p), "device function", "a device function");
    p = must_read(c->image, c->len, 0, "kk");
    assert_int_equal(p.n, 1);
    assert_int_equal(p.v[0].size, 8);
    kc_params_free(&p);
    kc_compiled_free(c);
}

/* ---- 5. PTX written by hand ---- */

static int ptx_read(const char *txt, const char *sym, kc_params *p) {
    return kc_params_read(txt, strlen(txt), 1, sym, p);
}

static void test_ptx_forms(void **state) {
    (void)state;
    kc_params p;
    /* Comments anywhere, a string that looks like an entry, .weak, no .visible, .ptr with its own
     * state space and alignment (the pointee's), a prefix of the name first. */
    const char *txt = ".version 8.0\n.target sm_80\n.address_size 64\n"
                      ".file 1 \"/tmp/.entry k1(.param .u8 x) {\"\n"
                      "/* .entry k1( .param .u8 a ) */\n"
                      ".visible .entry k10(.param .u8 a) { ret; }\n"
                      ".weak .entry k1 // a comment\n"
                      "( /* c */ .param .u64 .ptr .global .align 16 k1_p0 /* c */,\n"
                      "\t.param .align 2 .b8 k1_p1[2], .param .u64 .ptr.align 32 k1_p2, .param .f16 k1_p3,\n"
                      "\t.param .align 16 .b8 k1_p4[20],\n"
                      "\t.param .b128 k1_p5, .param .u32 .ptr .const k1_p6, .param .bf16x2 k1_p7, .param .s8 k1_p8\n"
                      ")\n.maxntid 128, 1, 1\n{ ret; }\n"
                      ".entry k0() { ret; }\n"
                      ".entry kn .maxntid 1 { ret; }\n"
                      ".entry kb { ret; }\n";
    assert_int_equal(ptx_read(txt, "k1", &p), KC_OK);
    static const kc_param W[] = {
        {0, 8, 8, KC_PARAM_INT},    {8, 2, 2, KC_PARAM_BYTES},    {16, 8, 8, KC_PARAM_INT},
        {24, 2, 2, KC_PARAM_FLOAT}, {32, 20, 16, KC_PARAM_BYTES}, {64, 16, 16, KC_PARAM_INT},
        {80, 4, 4, KC_PARAM_INT},   {84, 4, 4, KC_PARAM_FLOAT},   {88, 1, 1, KC_PARAM_INT},
    };
    assert_int_equal(p.n, KC_ARRAY_LEN(W));
    for (size_t i = 0; i < p.n; i++) {
        if (p.v[i].offset != W[i].offset || p.v[i].size != W[i].size || p.v[i].align != W[i].align ||
            p.v[i].cls != W[i].cls)
            fail_msg("k1 parameter %zu: (%u, %u, %u, %u)", i, p.v[i].offset, p.v[i].size, p.v[i].align, p.v[i].cls);
    }
    assert_int_equal(p.total, 89);
    kc_params_free(&p);
    assert_int_equal(ptx_read(txt, "k10", &p), KC_OK);
    assert_int_equal(p.n, 1);
    kc_params_free(&p);
    for (const char **k = (const char *[]){"k0", "kn", "kb", NULL}; *k; k++) {
        assert_int_equal(ptx_read(txt, *k, &p), KC_OK);
        assert_int_equal(p.n, 0);
        assert_null(p.v);
        assert_int_equal(p.total, 0);
    }
    must_be_corrupt(ptx_read(txt, "k", &p), "no PTX entry k ", "a prefix");
    must_be_corrupt(ptx_read(txt, "x", &p), "no PTX entry x ", "a name in a string");
}

static void test_ptx_refused(void **state) {
    (void)state;
    static const struct {
        const char *txt, *what;
    } cases[] = {
        {".entry k(\n\t.param .u64 k_p0,\n\t.param .u32", "no name"},
        {".entry k(\n\t.param .u64 k_p0,\n\t.param .u32 k_p1", "cut short"},
        {".entry k(\n\t.param .u64 k_p0,\n", "cut short"},
        {".entry k(\n\t.param .u64 k_p0)", "nothing follows"},
        {".entry k(.param .u64 a) /* unterminated", "nothing follows"},
        {".entry k", "neither a parameter list nor a body"},
        {".entry k(.param .u64 a) {}\n.entry k(.param .u64 a) {}", "appears twice"},
        {".entry k(.param .pred a) {}", "unknown qualifier .pred"},
        {".entry k(.param .u64 .u32 a) {}", "two types"},
        {".entry k(.param a) {}", "no type"},
        {".entry k(.param .align 3 .b8 a[4]) {}", "bad .align"},
        {".entry k(.param .align 4 .align 4 .b8 a[4]) {}", "two alignments"},
        {".entry k(.param .align .b8 a[4]) {}", "bad .align"},
        {".entry k(.param .b8 a[0]) {}", "bad array length"},
        {".entry k(.param .b8 a[]) {}", "bad array length"},
        {".entry k(.param .b8 a[4) {}", "bad array length"},
        {".entry k(.param .b8 a[40000]) {}", "bad array length"},
        {".entry k(.param .b8 a[32764], .param .u8 b) {}", "past 32764 bytes"},
        {".entry k(.param .u8 c, .param .align 8 .b8 a[32760]) {}", "past 32764 bytes"},
        {".entry k(.param .u64 .global a) {}", "state space out of place"},
        {".entry k(.param .u64 .ptr .ptr a) {}", "twice"},
        {".entry k(.param .u64 .ptr a[2]) {}", ".ptr array"},
        {".entry k(.reg .u64 a) {}", "not a .param"},
        {".entry k(.param .u64 a .param .u64 b) {}", "neither ',' nor ')'"},
        {".entry k(.param .u64 7a) {}", "no name"},
        {".entry k(,) {}", "not a .param"},
        {".entry k(\"s\") {}", "not a .param"},
    };
    for (size_t i = 0; i < KC_ARRAY_LEN(cases); i++) {
        kc_params p;
        char how[64];
        snprintf(how, sizeof how, "PTX case %zu", i);
        must_be_corrupt(ptx_read(cases[i].txt, "k", &p), cases[i].what, how);
        assert_null(p.v);
        assert_int_equal(p.n, 0);
    }
    /* An embedded NUL: the driver reads no further, and neither does the reader. */
    static const char nul[] = ".version 8.0\0.entry k(.param .u64 a) {}";
    kc_params p;
    must_be_corrupt(kc_params_read(nul, sizeof nul, 1, "k", &p), "no PTX entry k", "an entry after a NUL");
    /* The parameter limits: 4096 parameters read, 4097 refused. */
    for (int extra = 0; extra <= 1; extra++) {
        kc_buf b = {0};
        kc_buf_printf(&b, ".entry k(");
        for (int i = 0; i < KC_PARAMS_MAX + extra; i++) kc_buf_printf(&b, "%s.param .u8 p%d", i ? ", " : "", i);
        kc_buf_printf(&b, ") {}");
        char *txt = kc_buf_take_str(&b);
        int rc = ptx_read(txt, "k", &p);
        if (extra) must_be_corrupt(rc, "more than 4096 parameters", "4097 parameters");
        else {
            assert_int_equal(rc, KC_OK);
            assert_int_equal(p.n, KC_PARAMS_MAX);
            assert_int_equal(p.total, KC_PARAMS_MAX);
            kc_params_free(&p);
        }
        free(txt);
    }
    /* The byte limit exactly. */
    assert_int_equal(ptx_read(".entry k(.param .b8 a[32760], .param .u32 b) {}", "k", &p), KC_OK);
    assert_int_equal(p.total, KC_PARAMS_MAX_BYTES);
    kc_params_free(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tables_of_real_kernels),
        cmocka_unit_test(test_ptx_with_its_nul),
        cmocka_unit_test(test_wrong_kernel_or_image),
        cmocka_unit_test(test_no_memory),
        cmocka_unit_test(test_truncated_cubin),
        cmocka_unit_test(test_truncated_ptx),
        cmocka_unit_test(test_patched_cubin),
        cmocka_unit_test(test_device_function),
        cmocka_unit_test(test_ptx_forms),
        cmocka_unit_test(test_ptx_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

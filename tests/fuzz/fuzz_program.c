/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_program.c — libFuzzer target: launch-program decoding, binding and argument packing
 * (the walk is harness.h's fz_program, shared with the entry targets).  Input: one FORWARD or
 * BACKWARD section's bytes (grammar in src/graph/program.c); the seeds (corpus/program/) are
 * those of real entries, written by tools/fuzz_seeds.sh.
 *
 * The custom mutator is structure-aware: it reads the section by its grammar into its fields
 * (u32 counts and kernels, u8 types, roles, dtypes, ranks and flags, and str := len:u32 bytes —
 * every expression, symbol, argument and zero-step reference), changes one — a string's bytes
 * (libFuzzer's mutation) or a spelling the grammar knows in its place, a number among edge
 * values, two strings swapped — and writes it again with every string's length right, so the
 * mutations reach the expression, argument and tensor checks instead of the framing.  One time
 * in eight, and for bytes that do not follow the grammar, it mutates raw. */
#include "mutate_entry.h" /* harness.h, fz_rand, LLVMFuzzerMutate */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_program(data, size);
    return 0;
}

/* ---- the structure-aware mutator ---- */

enum { F_U32, F_U8, F_STR, F_MAX = 8192 };
typedef struct {
    int kind;
    uint32_t v;       /* F_U32, F_U8 */
    const uint8_t *s; /* F_STR: its bytes (in the input, or `own`) */
    uint32_t len;
    uint8_t *own;
} pfield;

typedef struct {
    const uint8_t *p, *end;
    pfield *f;
    size_t n;
    int bad;
} preader;

static uint32_t rd_num(preader *r, int kind) {
    size_t w = kind == F_U8 ? 1 : 4;
    if (r->bad || (size_t)(r->end - r->p) < w || r->n == F_MAX) return r->bad = 1, 0;
    uint32_t v = kind == F_U8 ? r->p[0] : fz_rd32(r->p);
    r->p += w;
    r->f[r->n++] = (pfield){kind, v, NULL, 0, NULL};
    return v;
}

static void rd_str(preader *r) {
    uint32_t l = rd_num(r, F_U32);
    if (r->bad || l > (size_t)(r->end - r->p)) return (void)(r->bad = 1);
    r->f[r->n - 1] = (pfield){F_STR, 0, r->p, l, NULL};
    r->p += l;
}

static uint32_t rd_count(preader *r) {
    uint32_t c = rd_num(r, F_U32);
    if (c > 4096) r->bad = 1;
    return r->bad ? 0 : c;
}

/* The grammar of program.c, field by field. */
static void rd_program(preader *r) {
    rd_num(r, F_U32); /* pass */
    for (uint32_t i = 0, n = rd_count(r); i < n && !r->bad; i++) rd_str(r);
    for (uint32_t i = 0, n = rd_count(r); i < n && !r->bad; i++) rd_str(r), rd_num(r, F_U8);
    for (uint32_t i = 0, n = rd_count(r); i < n && !r->bad; i++) {
        rd_num(r, F_U8), rd_num(r, F_U8);
        uint32_t rank = rd_num(r, F_U8), flags = rd_num(r, F_U8);
        if (flags & 8) rd_num(r, F_U32);
        for (uint32_t k = 0; k < rank && !r->bad; k++) rd_str(r), rd_str(r);
    }
    for (uint32_t i = 0, n = rd_count(r); i < n && !r->bad; i++) rd_str(r);
    for (uint32_t i = 0, n = rd_count(r); i < n && !r->bad; i++) {
        if (rd_num(r, F_U32) == 0xffffffffu) {
            rd_str(r);
            continue;
        }
        for (int k = 0; k < 7 && !r->bad; k++) rd_str(r);
        for (uint32_t a = 0, na = rd_count(r); a < na && !r->bad; a++) rd_str(r);
    }
}

static const char *const spellings[] = {
    "input:0",
    "output:0",
    "saved:0",
    "scratch:0",
    "grad_out:0",
    "grad_in:0",
    "input:1",
    "output:7",
    "input:0+N-1",
    "scratch:0+4",
    "grad_in:0+1",
    "null",
    "sym:N",
    "e32:N",
    "e64:N-1",
    "i32:-1",
    "u32:4000000000",
    "i64:-9223372036854775808",
    "f32:1.5",
    "f64:0.25",
    "bytes:00",
    "bytes:0000803f0000004000004040",
    "arg:lr",
    "arg:seed",
    "philox_seed",
    "philox_offset",
    "N",
    "ceildiv(N, 128)",
    "min(N, device_sm_count * 4)",
    "device_warp_size * 4",
    "N * 4",
    "N / 0",
    "N % 0",
    "-N",
    "0",
    "1",
    "65536",
    "2147483648",
    "18446744073709551615",
    "max(N, 1)",
    "(N",
    "",
};

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed) {
    uint64_t rs = seed * 0x9e3779b97f4a7c15ull + 13;
    pfield *f = fz_rand(&rs) % 8 ? malloc(F_MAX * sizeof *f) : NULL;
    if (!f) return LLVMFuzzerMutate(data, size, max);
    preader r = {data, data + size, f, 0, 0};
    rd_program(&r);
    if (r.bad || r.n == 0) {
        free(f);
        return LLVMFuzzerMutate(data, size, max);
    }
    static const uint32_t edge[] = {0, 1, 2, 3, 7, 8, 0xff, 0x100, 4096, 4097, 0xfffffffeu, 0xffffffffu};
    pfield *x = &f[fz_rand(&rs) % r.n];
    uint32_t op = fz_rand(&rs) % 4;
    if (x->kind != F_STR) {
        x->v = edge[fz_rand(&rs) % 12];
    } else if (op == 0) { /* two strings swapped */
        pfield *y = &f[fz_rand(&rs) % r.n];
        if (y->kind == F_STR) {
            pfield t = *x;
            *x = *y, *y = t;
        }
    } else if ((x->own = malloc(2 * x->len + 64))) {
        if (op == 1) {
            const char *s = spellings[fz_rand(&rs) % (sizeof spellings / sizeof *spellings)];
            x->len = (uint32_t)strlen(s);
            memcpy(x->own, s, x->len);
        } else {
            memcpy(x->own, x->s, x->len);
            x->len = (uint32_t)LLVMFuzzerMutate(x->own, x->len, 2 * x->len + 63);
        }
        x->s = x->own;
    }
    uint8_t *out = malloc(max ? max : 1);
    size_t at = 0;
    int fits = out != NULL;
    for (size_t i = 0; i < r.n && fits; i++) {
        size_t w = f[i].kind == F_U8 ? 1 : 4, l = f[i].kind == F_STR ? f[i].len : 0;
        if (at + w + l > max) {
            fits = 0;
            break;
        }
        uint32_t v = f[i].kind == F_STR ? f[i].len : f[i].v;
        if (f[i].kind == F_U8) out[at] = (uint8_t)v;
        else
            for (int k = 0; k < 4; k++) out[at + k] = (uint8_t)(v >> (8 * k));
        if (l) memcpy(out + at + w, f[i].s, l);
        at += w + l;
    }
    for (size_t i = 0; i < r.n; i++) free(f[i].own);
    free(f);
    if (fits) memcpy(data, out, at);
    free(out);
    return fits ? at : LLVMFuzzerMutate(data, size, max);
}

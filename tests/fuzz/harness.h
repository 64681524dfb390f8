/* SPDX-License-Identifier: Apache-2.0 */
/*
 * harness.h — what the checksum-aware fuzz targets share: fixing up checksums around the
 * fuzzer's bytes, and walking every section of a decoded entry through its parser.
 *
 * The one idea: a mutated entry or bundle almost always fails its first checksum, so a
 * target that hands the fuzzer's bytes straight to the decoder never reaches the section
 * parsers.  These helpers recompute the checksums the format demands (entry.h, bundle.h)
 * over whatever the fuzzer wrote, so the mutations land in the parsers behind them:
 * META (entry.c), KERNELS (graph/kernels.c), FORWARD/BACKWARD (graph/program.c), WRAPPERS
 * (graph/wrapper.c), PARAMS (graph/abi.c, read as the loader reads it: fz_params) and the second
 * level ([Note: two levels] in kcache/entry.h, entry/image.c): a graph entry's IMAGES references,
 * an image object, a unit record (fz_second_level).  KERNELS reads over IMAGES, and the loader
 * reads it with the images attached: fz_attach attaches made-up images of each reference's length,
 * so kc_kernels_of's attached-image path (and its length check) is fuzzed, not only the bare one.
 * A launch program is run as far as a GPU-less machine can (fz_program): its dimensions and
 * arguments evaluated with made-up symbols, device facts and runtime-argument values, so
 * "arg:NAME", "null", "u32:", "f64:", "bytes:", "ROLE:I+EXPR" and device_* reach their code.
 *
 * Only the fuzz targets in this folder include it (fuzz_entry_sums.c, fuzz_sections.c,
 * fuzz_bundle_sums.c, fuzz_bundle.c, fuzz_program.c, fuzz_image.c); it uses the graph part's internal header
 * (the program, KERNELS and PARAMS readers) as tests/graph/test_abi.c does.  Must not: abort on
 * input the library may refuse — a refusal is a correct answer; only a crash, a sanitizer
 * report or a broken invariant is a finding.
 */
#ifndef KCACHE_FUZZ_HARNESS_H
#define KCACHE_FUZZ_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "graph/graph_internal.h"
#include "graph/program.h"
#include "kcache.h"

static inline uint32_t fz_rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t fz_rd64(const uint8_t *p) { return (uint64_t)fz_rd32(p) | (uint64_t)fz_rd32(p + 4) << 32; }
static inline void fz_wr64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * Make an entry's checksums right for the bytes it holds (entry.h, format v3): total_len
 * becomes the buffer's length, each section whose bytes lie inside the buffer gets the
 * XXH3-64 of them, and header_sum covers the header and the (possibly mutated) table.
 * Lengths, offsets and codecs stay as the fuzzer wrote them.
 */
static inline void fz_fix_entry(uint8_t *p, size_t n) {
    enum { HDR = 96, SUM = 88, DESC = 40, MAXSEC = 16 };
    if (n < HDR) return;
    fz_wr64(p + 64, (uint64_t)n);
    uint32_t nsec = fz_rd32(p + 72);
    if (nsec > MAXSEC || HDR + (size_t)nsec * DESC > n) return; /* the decoder refuses it first */
    for (uint32_t i = 0; i < nsec; i++) {
        uint8_t *d = p + HDR + (size_t)i * DESC;
        uint64_t stored = fz_rd64(d + 16), off = fz_rd64(d + 24);
        if (off <= n && stored <= n - off) fz_wr64(d + 32, XXH3_64bits(p + off, (size_t)stored));
    }
    uint8_t tmp[SUM + MAXSEC * DESC];
    memcpy(tmp, p, SUM);
    memcpy(tmp + SUM, p + HDR, (size_t)nsec * DESC);
    fz_wr64(p + SUM, XXH3_64bits(tmp, SUM + (size_t)nsec * DESC));
}

/* A scratch cache for import targets (made once per process) and the path of the file the
 * fuzzer's bundle is written to, inside it.  Aborts only if the machine cannot make one. */
static inline kc_cache *fz_scratch_cache(const char *tag, char *path, size_t cap) {
    static kc_cache *cache;
    static char file[256];
    if (!cache) {
        char tmpl[96];
        snprintf(tmpl, sizeof tmpl, "/tmp/kcfuzz-%s-XXXXXX", tag);
        char *d = mkdtemp(tmpl);
        kc_options o = KC_OPTIONS_INIT;
        o.dir = d;
        o.flags = KC_OPEN_NO_ENV;
        if (!d || kc_cache_open(&cache, &o) != KC_OK) abort();
        snprintf(file, sizeof file, "%s/in.kcb", d);
    }
    snprintf(path, cap, "%s", file);
    return cache;
}

static inline int fz_resolve(void *ctx, int role, size_t i, void **ptr) {
    (void)ctx;
    *ptr = (void *)(uintptr_t)(role * 1000 + (int)i);
    return KC_OK;
}

/* KCACHE_FUZZ_VERBOSE=1: what each read answered (to see a seed reach the reader behind it). */
static inline void fz_say(const char *what, int rc) {
    if (getenv("KCACHE_FUZZ_VERBOSE")) fprintf(stderr, "%s: %d %s\n", what, rc, rc ? kc_error_last()->message : "ok");
}

/*
 * A launch program, as the loader and a call do it: decode; bind made-up device facts (an H100's,
 * as a loaded graph's p->dev) and one value of its declared type per runtime argument; then every
 * step's dims, each argument's ABI, and the arguments packed (kc_program_pack).
 */
static inline void fz_program(const void *data, size_t len) {
    kc_lprog *p;
    int rc = kc_program_decode(data, len, &p);
    fz_say("program decode", rc);
    if (rc != KC_OK) return;
    static const int64_t dev[KC_DEVICE_NFACTS] = {132, 2048, 1024, 48 << 10, 227 << 10, 228 << 10, 32};
    p->dev = dev;
    kc_value rv[KC_GRAPH_MAX_ARGS];
    for (size_t i = 0; i < p->nrargs && i < KC_GRAPH_MAX_ARGS; i++) {
        rv[i].type = p->rargs[i].type;
        rv[i].v.u64 = 0x3e800000u + i; /* a small float's bits; any member of any type */
    }
    const kc_value *vals_of = kc_program_check_values(p, rv, p->nrargs) == KC_OK ? rv : NULL;
    int64_t syms[64];
    for (size_t i = 0; i < 64; i++) syms[i] = (int64_t)(i * 37 + 64); /* sizes a ROLE:I+EXPR offset fits */
    if (p->nsyms <= 64)
        for (size_t i = 0; i < p->nsteps; i++) {
            unsigned g[3], b[3], sh;
            kc_argval vals[256];
            void *args[256];
            uint64_t philox[2] = {1, 2};
            fz_say("dims", kc_program_dims(p, i, syms, g, b, &sh));
            for (size_t a = 0; a < p->steps[i].nargs; a++) {
                kc_arg_abi abi;
                kc_program_arg_abi(p->rargs, p->nrargs, p->steps[i].args[a], &abi);
            }
            if (p->steps[i].nargs <= 256)
                fz_say("args",
                       kc_program_pack(p, i, &(kc_argpack){syms, fz_resolve, NULL, philox, vals_of}, vals, args));
        }
    kc_lprog_free(p);
}

static inline void fz_kernel_cb(const char *name, const char *lowered, const char *target, int is_ptx, size_t len,
                                void *ctx) {
    size_t *total = ctx;
    *total += strlen(name) + strlen(lowered) + strlen(target) + (size_t)is_ptx + len;
}

static inline int fz_base_call(void *ctx, kc_forward_call *c) {
    (void)ctx;
    (void)c;
    return KC_OK;
}

static inline void fz_params_cb(const char *name, const char *lowered, const kc_param_info *params, size_t n,
                                void *ctx) {
    size_t *total = ctx;
    *total += strlen(name) + strlen(lowered) + n;
    for (size_t i = 0; i < n; i++)
        *total += params[i].offset + params[i].size + params[i].align + strlen(params[i].cls);
}

/* One program of the entry, its steps' kernels in range, checked against the tables. */
static inline void fz_params_program(const kc_entry *e, kc_section_type type, const kc_params *abi, size_t n,
                                     const char *const *names) {
    const void *data;
    size_t len;
    kc_lprog *p;
    if (kc_entry_section(e, type, &data, &len) != KC_OK || kc_program_decode(data, len, &p) != KC_OK) return;
    int ok = 1;
    for (size_t i = 0; i < p->nsteps; i++)
        if (p->steps[i].kernel < 0 || (size_t)p->steps[i].kernel >= n) ok = 0;
    if (ok)
        fz_say(type == KC_SECTION_FORWARD ? "check forward" : "check backward",
               kc_abi_check_program("fuzz", p, abi, names));
    kc_lprog_free(p);
}

/*
 * PARAMS, as the loader (graph/loaded.c, before any image reaches a driver) and kcache show read
 * it: KERNELS gives the kernel count and names, kc_abi_decode reads one table per kernel, and
 * both launch programs are checked against the tables (kc_abi_check_program); kc_entry_params
 * reads it too.  A KERNELS section the fuzzer has broken would stop all of that at the first
 * check, so kc_abi_decode is also handed the count the PARAMS bytes declare (at most
 * KC_GRAPH_MAX_KERNELS, as a KERNELS section could say), and its table reader runs whatever
 * KERNELS holds.
 */
static inline void fz_params(const kc_entry *e) {
    size_t total = 0;
    fz_say("kc_entry_params", kc_entry_params(e, fz_params_cb, &total));
    kimg *v;
    size_t n, nimg;
    char *strs;
    kc_params *abi;
    if (kc_kernels_of(e, &v, &n, &nimg, &strs) == KC_OK) {
        const char **names = malloc(n * sizeof *names + 1);
        int rc = names ? kc_abi_decode(e, n, &abi) : KC_ENOMEM;
        fz_say("kc_abi_decode (KERNELS count)", rc);
        if (rc == KC_OK) {
            for (size_t i = 0; i < n; i++) names[i] = v[i].name;
            fz_params_program(e, KC_SECTION_FORWARD, abi, n, names);
            fz_params_program(e, KC_SECTION_BACKWARD, abi, n, names);
            kc_abi_free(abi, n);
        }
        free(names);
        free(v);
        free(strs);
    }
    const void *data;
    size_t len;
    if (kc_entry_section(e, KC_SECTION_PARAMS, &data, &len) == KC_OK && len >= 4) {
        uint32_t declared = fz_rd32(data);
        int rc = declared <= KC_GRAPH_MAX_KERNELS ? kc_abi_decode(e, declared, &abi) : KC_ECORRUPT;
        fz_say("kc_abi_decode (declared count)", rc);
        if (rc == KC_OK) {
            for (size_t i = 0; i < declared; i++) total += abi[i].n + abi[i].total;
            kc_abi_free(abi, declared);
        }
    }
    if (total == (size_t)-1) __builtin_trap(); /* keep the walk */
}

/* Largest made-up image fz_attach attaches (a reference may say up to 256 MiB), and most bytes it
 * attaches to one entry (256 references may each say 1 MiB). */
#define FZ_ATTACH_MAX (1u << 20)
#define FZ_ATTACH_TOTAL (4u << 20)

/*
 * Attach made-up images to a graph entry, as a lookup does once it has fetched and checked them:
 * each reference of at most FZ_ATTACH_MAX bytes gets that many bytes (PTX ending in its NUL), in
 * order, while the entry's images stay within FZ_ATTACH_TOTAL.
 * Then read KERNELS as the loader does (kc_kernels_of) and hold it to its promises: an attached
 * image is handed out with its reference's length, one that is not attached is NULL, and an image
 * attached with another length than its reference's makes the whole section refused.
 * Returns how many images were attached.
 */
static inline size_t fz_attach(kc_entry *e) {
    kc_image_ref *refs;
    size_t n, attached = 0, total = 0;
    int rc = kc_entry_images(e, &refs, &n);
    fz_say("kc_entry_images", rc);
    if (rc != KC_OK) return 0;
    if (n == 0 || n > KC_IMAGES_MAX) abort();
    static uint8_t fake[FZ_ATTACH_MAX + 1];
    for (size_t i = 0; i < n; i++) {
        if (refs[i].len > FZ_ATTACH_MAX || refs[i].len > FZ_ATTACH_TOTAL - total) continue;
        size_t len = (size_t)refs[i].len;
        total += len;
        memset(fake, 0x5a, len);
        if (refs[i].is_ptx) fake[len - 1] = 0;
        if (kc_entry_attach_image(e, i, fake, len) == KC_OK) attached++;
    }
    kimg *v;
    size_t nk, nimg;
    char *strs;
    rc = kc_kernels_of(e, &v, &nk, &nimg, &strs);
    fz_say("kc_kernels_of (images attached)", rc);
    if (rc == KC_OK) {
        if (nimg != n) abort();
        for (size_t i = 0; i < nk; i++) {
            const void *p;
            size_t l;
            int has = kc_entry_attached_image(e, v[i].image_index, &p, &l) == KC_OK;
            if (v[i].image_index >= n || v[i].len != refs[v[i].image_index].len ||
                v[i].is_ptx != refs[v[i].image_index].is_ptx)
                abort();
            if (has ? (v[i].image != p || l != v[i].len) : v[i].image != NULL) abort();
            if (strcmp(v[i].target, refs[v[i].image_index].target) != 0) abort();
        }
        uint32_t first = v[0].image_index;
        size_t len0 = v[0].len;
        free(v);
        free(strs);
        /* Image `first` attached one byte short: never handed out. */
        if (len0 > 1 && len0 <= FZ_ATTACH_MAX && kc_entry_attach_image(e, first, fake, len0 - 1) == KC_OK) {
            if (kc_kernels_of(e, &v, &nk, &nimg, &strs) != KC_ECORRUPT) abort();
            kc_entry_attach_image(e, first, fake, len0);
        }
    }
    free(refs);
    return attached;
}

/* The second level: IMAGES (with images attached: fz_attach), and the entry read as an image object
 * and as a unit record — each refuses an entry of another variant; one that is read holds to the
 * reader's promises (its bytes are its reference's length and XXH3-128, its id the entry's key). */
static inline void fz_second_level(kc_entry *e) {
    fz_attach(e);
    kc_image_ref ref;
    const void *p;
    size_t len;
    int rc = kc_image_entry_read(e, NULL, 1, &ref, &p, &len);
    fz_say("kc_image_entry_read", rc);
    if (rc == KC_OK) {
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, XXH3_128bits(p, len));
        if (len != ref.len || memcmp(c.digest, ref.id.bytes, 16) || memcmp(kc_entry_key(e)->bytes, ref.id.bytes, 16))
            abort();
    }
    rc = kc_unit_entry_read(e, &ref, NULL, 0, NULL);
    fz_say("kc_unit_entry_read", rc);
    if (rc == KC_OK && (ref.len == 0 || ref.len > KC_SECTION_MAX_RAW || kc_variant_check(ref.target) != KC_OK)) abort();
}

/* Every section of a decoded entry through its parser: META, KERNELS, programs, WRAPPERS, PARAMS,
 * and the second level (fz_second_level: IMAGES with images attached, IMAGE, UNIT). */
static inline void fz_consume(kc_entry *e) {
    size_t total = strlen(kc_entry_toolchain(e)) + strlen(kc_entry_variant(e));
    char origin[KC_ORIGIN_VALUE_MAX + 1]; /* ORIGIN (v4): decode validated it; a lookup by name walks it again */
    if (kc_entry_origin(e, "compile_us", origin, sizeof origin) == KC_OK) total += strlen(origin);
    for (size_t i = 0; i < kc_entry_digest_count(e); i++) {
        const char *name;
        kc_digest d;
        if (kc_entry_digest_at(e, i, &name, &d) == KC_OK) total += strlen(name);
    }
    kc_entry_kernels(e, fz_kernel_cb, &total);
    const void *data;
    size_t len;
    if (kc_entry_section(e, KC_SECTION_FORWARD, &data, &len) == KC_OK) fz_program(data, len);
    if (kc_entry_section(e, KC_SECTION_BACKWARD, &data, &len) == KC_OK) fz_program(data, len);
    kc_wrapper_chain *ch = NULL;
    kc_callable base = {fz_base_call, NULL};
    if (kc_wrapper_chain_build(&ch, e, &base) == KC_OK) kc_wrapper_chain_free(ch);
    void *out;
    size_t olen;
    if (kc_entry_encode(e, &out, &olen) == KC_OK) kc_free(out); /* a decoded entry re-encodes */
    fz_params(e);
    fz_second_level(e);
    if (total == (size_t)-1) __builtin_trap(); /* keep the walk */
}

#endif

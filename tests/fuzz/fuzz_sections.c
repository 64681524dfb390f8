/* fuzz_sections.c — libFuzzer target: an entry built through the public API from the fuzzer's
 * sections, encoded (so every checksum is right), decoded, and walked by fz_consume
 * (harness.h) and by the PARAMS walk below: the mutations land in the section parsers themselves.
 *
 * Input := { tag:u8 len:u16 bytes[len] }*   (len is cut to what is left)
 *   tag % 8: 2 FORWARD, 3 BACKWARD, 4 KERNELS, 5 WRAPPERS, 6 RUNTIME_META, 7 PARAMS (the bytes,
 *            raw); 1 the META toolchain string; 0 a META digest named by the bytes.
 * The seeds (tests/fuzz/corpus/sections/) are real entries written in this form by
 * tools/fuzz_seeds.sh.
 *
 * PARAMS (src/graph/abi.c) is read the way the loader reads it (graph/loaded.c, before any
 * image reaches a driver): KERNELS gives the kernel count and names, kc_abi_decode reads one
 * table per kernel, and both launch programs are checked against the tables; kc_entry_params
 * (kcache show) reads it too.  A KERNELS section the fuzzer has broken would stop all of that at
 * the first check, so kc_abi_decode is also handed the count the PARAMS bytes declare
 * (at most KC_GRAPH_MAX_KERNELS, as a KERNELS section could say), and its table reader runs
 * whatever KERNELS holds.
 *
 * Uses the graph part's internal header (kc_kernels_of, kc_abi_*) as tests/graph/test_abi.c does.
 * Invariant checked: what the library encodes, it decodes.  Must not: abort on anything the
 * library refuses (a refusal is a correct answer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "harness.h"

static void fz_params_cb(const char *name, const char *lowered, const kc_param_info *params, size_t n, void *ctx) {
    size_t *total = ctx;
    *total += strlen(name) + strlen(lowered) + n;
    for (size_t i = 0; i < n; i++) *total += params[i].offset + params[i].size + params[i].align + strlen(params[i].cls);
}

/* KCACHE_FUZZ_VERBOSE=1: what each read of PARAMS answered (to see a seed reach the reader). */
static void fz_say(const char *what, int rc) {
    if (getenv("KCACHE_FUZZ_VERBOSE")) fprintf(stderr, "%s: %d %s\n", what, rc, rc ? kc_error_last()->message : "ok");
}

/* One program of the entry, its steps' kernels in range, checked against the tables. */
static void fz_params_program(const kc_entry *e, kc_section_type type, const kc_params *abi, size_t n,
                              const char *const *names) {
    const void *data;
    size_t len;
    kc_program *p;
    if (kc_entry_section(e, type, &data, &len) != KC_OK || kc_program_decode(data, len, &p) != KC_OK) return;
    int ok = 1;
    for (size_t i = 0; i < p->nsteps; i++)
        if (p->steps[i].kernel < 0 || (size_t)p->steps[i].kernel >= n) ok = 0;
    if (ok) fz_say(type == KC_SECTION_FORWARD ? "check forward" : "check backward",
                   kc_abi_check_program("fuzz", p, abi, names));
    kc_program_free(p);
}

/* PARAMS, as the loader and kcache show read it, and once more with its own declared count. */
static void fz_params(const kc_entry *e) {
    size_t total = 0;
    fz_say("kc_entry_params", kc_entry_params(e, fz_params_cb, &total));
    kimg *v;
    size_t n, nimg;
    char *strs;
    kc_params *abi;
    if (kc_kernels_of(e, &v, &n, &nimg, &strs) == KC_OK) {
        const char **names = malloc(n * sizeof *names);
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    kc_key key;
    memset(&key, 0x5a, sizeof key);
    kc_entry *e = NULL;
    if (kc_entry_new(&e, &key, "sm_80") != KC_OK) abort();
    while (size >= 3) {
        unsigned tag = data[0] % 8;
        size_t len = (size_t)data[1] | (size_t)data[2] << 8;
        data += 3, size -= 3;
        if (len > size) len = size;
        char s[256];
        snprintf(s, sizeof s, "%.*s", (int)(len < 255 ? len : 255), (const char *)data);
        if (tag >= 2) kc_entry_set_section(e, (kc_section_type)tag, data, len);
        else if (tag == 1) kc_entry_set_toolchain(e, s);
        else {
            kc_digest d;
            memset(&d, (int)len, sizeof d);
            kc_entry_add_digest(e, s, &d);
        }
        data += len, size -= len;
    }
    void *bytes;
    size_t n;
    if (kc_entry_encode(e, &bytes, &n) == KC_OK) {
        kc_entry *back = NULL;
        if (kc_entry_decode(&back, bytes, n) != KC_OK) {
            fprintf(stderr, "an encoded entry does not decode: %s\n", kc_error_last()->message);
            abort();
        }
        fz_consume(back);
        fz_params(back);
        kc_entry_free(back);
        kc_free(bytes);
    }
    kc_entry_free(e);
    return 0;
}

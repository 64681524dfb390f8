/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_spec_direct.c — libFuzzer target: the spec direct mode's memo (graph/spec_direct.c,
 * [Note: spec direct mode]), read by kc_spec_direct_parse_, the reader kc_graph_desc_load calls:
 * "kcache-spec-direct 1 (...)", path, name, kernels, toolkit, toolchain, digest, key and key0
 * lines, then "s <sig>" (the spec) and "f <sig> <name>" lines (files beside it) and "end <count>".
 *
 * The harness keeps a spec and two files beside it in a scratch folder; in the input, "$P" is
 * replaced by the spec's absolute path, "$S" by its signature, "$A" and "$B" by the two files'
 * (names a.cu and b.cuh), so a seed written once vouches here and the mutations reach every check
 * behind the signatures.  The custom mutator works a line at a time (a line's bytes, a line dropped,
 * doubled or swapped) and writes the "end" line to count the lines again, so the line checks are
 * reached rather than the count; one time in eight the bytes are mutated raw.
 * Seeds (corpus/spec_direct/): a memo as kcache writes it, with the placeholders.
 *
 * Invariants (abort): a memo that vouches names a graph (a name without a newline), 1 to 256 kernels,
 * and a toolkit digest that is "" or 32 hex as its toolkit line says.  Must not: abort on anything refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/graph_internal.h"
#include "kcache.h"
#include "mutate_entry.h" /* fz_rand, LLVMFuzzerMutate */

static char spec[256], sig_s[17], sig_a[17], sig_b[17];

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) abort();
}

static void sig_of(const char *path, char out[17]) {
    struct stat st;
    if (stat(path, &st) != 0) abort();
    snprintf(out, 17, "%016llx", (unsigned long long)kc_spec_direct_sig_(&st));
}

static void fz_setup(void) {
    if (spec[0]) return;
    char tmpl[] = "/dev/shm/kcfuzz-specdirect-XXXXXX", tmpl2[] = "/tmp/kcfuzz-specdirect-XXXXXX", p[300];
    char *d = mkdtemp(tmpl);
    if (!d) d = mkdtemp(tmpl2);
    if (!d) abort();
    snprintf(spec, sizeof spec, "%s/g.json", d);
    put(spec, "{}\n");
    sig_of(spec, sig_s);
    snprintf(p, sizeof p, "%s/a.cu", d);
    put(p, "extern \"C\" __global__ void k() {}\n");
    sig_of(p, sig_a);
    snprintf(p, sizeof p, "%s/b.cuh", d);
    put(p, "#define B 1\n");
    sig_of(p, sig_b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_setup();
    if (size > (1u << 16)) return 0;
    kc_buf b = {0};
    for (size_t i = 0; i < size; i++) {
        const char *with = NULL;
        if (data[i] == '$' && i + 1 < size) {
            char c = (char)data[i + 1];
            with = c == 'P' ? spec : c == 'S' ? sig_s : c == 'A' ? sig_a : c == 'B' ? sig_b : NULL;
        }
        if (with) kc_buf_put(&b, with, strlen(with)), i++;
        else kc_buf_put(&b, data + i, 1);
    }
    if (b.failed) return kc_buf_free(&b), 0;
    kc_spec_direct sd;
    memset(&sd, 0, sizeof sd);
    char *name;
    if (kc_spec_direct_parse_((char *)b.data, b.len, spec, &sd, &name)) {
        if (!name || !*name || strchr(name, '\n') || sd.nkernels < 1 || sd.nkernels > KC_GRAPH_MAX_KERNELS ||
            (sd.toolkit ? strlen(sd.digest) != 32 || strspn(sd.digest, "0123456789abcdef") != 32 : sd.digest[0] != 0))
            abort();
    }
    kc_buf_free(&b);
    kc_error_clear();
    return 0;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed) {
    uint64_t rs = seed * 0x9e3779b97f4a7c15ull + 23;
    if (size < 2 || fz_rand(&rs) % 8 == 0) return LLVMFuzzerMutate(data, size, max);
    enum { MAXL = 512 };
    char *text = malloc(size + 1), *line[MAXL], extra[600];
    size_t nl = 0;
    if (!text) return size;
    memcpy(text, data, size);
    text[size] = 0;
    for (char *p = text, *e; nl < MAXL && *p; p = e + 1) {
        line[nl++] = p;
        if (!(e = strchr(p, '\n'))) break;
        *e = 0;
    }
    if (nl && strncmp(line[nl - 1], "end ", 4) == 0) nl--; /* made again below */
    if (nl > 1) {
        size_t at = 1 + fz_rand(&rs) % (nl - 1);
        uint32_t r = fz_rand(&rs) % 5;
        if (r == 0) memmove(line + at, line + at + 1, (nl - at - 1) * sizeof *line), nl--;
        else if (r == 1 && nl < MAXL) memmove(line + at + 1, line + at, (nl - at) * sizeof *line), nl++;
        else if (r == 2) {
            char *t = line[at];
            size_t o = 1 + fz_rand(&rs) % (nl - 1);
            line[at] = line[o], line[o] = t;
        } else {
            size_t l = strnlen(line[at], 500);
            memcpy(extra, line[at], l);
            l = LLVMFuzzerMutate((uint8_t *)extra, l, 599);
            extra[l] = 0;
            line[at] = extra;
        }
    }
    size_t out = 0, files = 0;
    for (size_t i = 0; i < nl; i++) {
        size_t l = strlen(line[i]);
        files += (line[i][0] == 's' || line[i][0] == 'f') && line[i][1] == ' ';
        if (out + l + 1 > max) break;
        memcpy(data + out, line[i], l);
        out += l;
        data[out++] = '\n';
    }
    char end[32];
    int el = snprintf(end, sizeof end, "end %zu\n", files + (fz_rand(&rs) % 16 == 0));
    if (out + (size_t)el <= max) memcpy(data + out, end, (size_t)el), out += (size_t)el;
    free(text);
    return out;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_toolkit.c — libFuzzer target: the toolkit direct mode's two formats (compile/toolkit.c,
 * [Note: toolkit direct mode]), read by the functions a lookup calls:
 *
 *   mode % 3 == 0  a direct manifest ("kcache-toolkit-direct 2 (...)", root, shims, digest lines,
 *              then "d <sig> <folder>" and "f <sig> <file>" lines and "end <count>"): rest is the
 *              file memo/fz, read by kc_toolkit_direct.
 *   mode % 3 == 1  an entry's ORIGIN "toolkit_reads" value ("<digest> <files> <first>,<delta>,…" in
 *              hex, or "-"): rest up to its first NUL, handed to kc_toolkit_direct_from_reads, which
 *              writes the manifest memo/fr when the reads are of this tree.
 *   mode % 3 == 2  the toolkit memo ("kcache-toolkit 1\nsig <16 hex>\ndigest <32 hex>\n", the
 *              digest of one installation's headers): rest := sig:u64 file, read by
 *              kc_toolkit_memo_read_ (kc_toolkit_digest's reader, which reads it once per process)
 *              as the memo of a walk whose signature is `sig`.
 *
 * The process walks the toolkit's include folder once (kc_toolkit_digest), as a lookup's process
 * does, so the reads are checked against a real tree.  The custom mutator is structure-aware: a
 * manifest keeps its four header lines (made by kcache: the seeds), its body is mutated a line at a
 * time (a signature's hex digit, a path, a line dropped, doubled, swapped or made of the other
 * kind), and its "end" line is made to count the lines again, so the line checks are reached
 * rather than the count; a reads value keeps its digest and file count and its list of deltas is
 * changed (one changed, added or dropped, or "-"); a memo is written again from its grammar with the
 * input's signature (or another), a digest with one digit changed, a line dropped.  One time in eight the bytes are mutated raw.
 * Seeds (corpus/toolkit/): a manifest and a reads value kcache wrote for a toolkit graph
 * (tools/fuzz_seeds.sh); they name this machine's toolkit (its root and stat signatures), so on
 * another the mutations reach the header checks only until the seeds are made there.
 *
 * Invariants (abort): a manifest that vouches gives a 32-hex digest; a manifest written from
 * reads vouches for this process's digest.  Must not: abort on anything refused.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compile/toolkit.h"
#include "kcache.h"
#include "mutate_entry.h" /* fz_rand, LLVMFuzzerMutate */

static char memo[128];
static char digest[33];

static void fz_setup(void) {
    if (memo[0]) return;
    /* In memory where there is a tmpfs: the writers fsync, which a disk makes 100 times slower. */
    char tmpl[] = "/dev/shm/kcfuzz-toolkit-XXXXXX", tmpl2[] = "/tmp/kcfuzz-toolkit-XXXXXX";
    char *d = mkdtemp(tmpl);
    if (!d) d = mkdtemp(tmpl2);
    if (!d) abort();
    snprintf(memo, sizeof memo, "%s", d);
    if (kc_toolkit_digest(NULL, 0, digest) != KC_OK) digest[0] = 0; /* no toolkit here: every read refuses */
    kc_error_clear();
}

static void put(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_setup();
    if (size < 1) return 0;
    char path[256], out[33];
    if (data[0] % 3 == 2) {
        if (size < 9) return 0;
        uint64_t sig = fz_rd64(data + 1);
        snprintf(path, sizeof path, "%s/memo.toolkit", memo);
        put(path, data + 9, size - 9);
        if (kc_toolkit_memo_read_(path, sig, out) && (strlen(out) != 32 || strspn(out, "0123456789abcdef") != 32))
            abort();
    } else if (data[0] % 3 == 0) {
        snprintf(path, sizeof path, "%s/fz", memo);
        put(path, data + 1, size - 1);
        if (kc_toolkit_direct(memo, "fz", out) && (strlen(out) != 32 || strspn(out, "0123456789abcdef") != 32)) abort();
    } else {
        size_t n = strnlen((const char *)data + 1, size - 1);
        char *s = malloc(n + 1);
        if (!s) return 0;
        memcpy(s, data + 1, n);
        s[n] = 0;
        snprintf(path, sizeof path, "%s/fr", memo);
        kc_toolkit_direct_from_reads(memo, "fr", s);
        if (access(path, F_OK) == 0) {
            if (!kc_toolkit_direct(memo, "fr", out) || strcmp(out, digest) != 0) {
                fprintf(stderr, "fuzz_toolkit: a manifest written from reads does not vouch for this tree's digest\n");
                abort();
            }
            unlink(path);
        }
        free(s);
    }
    kc_error_clear();
    return 0;
}

/* ---- the structure-aware mutator ---- */

static size_t manifest_mutate(uint8_t *data, size_t size, size_t max, uint64_t *rs) {
    enum { MAXL = 4096 };
    char *text = malloc(size + 1), **line = malloc(MAXL * sizeof *line), *extra = NULL;
    size_t nl = 0;
    if (!text || !line) return free(text), free(line), size;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    for (char *p = text, *e; nl < MAXL && p < text + size - 1; p = e + 1) {
        line[nl++] = p;
        if (!(e = strchr(p, '\n'))) break;
        *e = 0;
    }
    if (nl && strncmp(line[nl - 1], "end ", 4) == 0) nl--; /* made again below */
    if (nl > 4) {
        size_t at = 4 + fz_rand(rs) % (nl - 4);
        uint32_t r = fz_rand(rs) % 6;
        if (r == 0 && nl > 5) memmove(line + at, line + at + 1, (nl - at - 1) * sizeof *line), nl--;
        else if (r == 1 && nl < MAXL) memmove(line + at + 1, line + at, (nl - at) * sizeof *line), nl++;
        else if (r == 2) {
            char *t = line[at];
            size_t o = 4 + fz_rand(rs) % (nl - 4);
            line[at] = line[o], line[o] = t;
        } else if ((extra = malloc(600))) {
            size_t l = strnlen(line[at], 512);
            memcpy(extra, line[at], l);
            extra[l] = 0;
            if (r == 3 && l > 18) extra[2 + fz_rand(rs) % 16] = "0123456789abcdef"[fz_rand(rs) % 16]; /* a signature */
            else if (r == 4 && l) extra[0] = extra[0] == 'd' ? 'f' : 'd';      /* the other kind */
            else l = LLVMFuzzerMutate((uint8_t *)extra, l, 599), extra[l] = 0; /* its bytes */
            line[at] = extra;
        }
    }
    size_t out = 1, body = nl > 4 ? nl - 4 : 0;
    for (size_t i = 0; i < nl; i++) {
        size_t l = strlen(line[i]);
        if (out + l + 1 > max) break;
        memcpy(data + out, line[i], l);
        out += l;
        data[out++] = '\n';
    }
    char end[32];
    int el = snprintf(end, sizeof end, "end %zu\n", body + (fz_rand(rs) % 16 == 0));
    if (out + (size_t)el <= max) memcpy(data + out, end, (size_t)el), out += (size_t)el;
    free(extra);
    free(line);
    free(text);
    return out;
}

static size_t reads_mutate(uint8_t *data, size_t size, size_t max, uint64_t *rs) {
    /* "<digest> <n> <list>": keep the first two fields */
    const char *s = (const char *)data + 1;
    size_t len = strnlen(s, size - 1);
    const char *sp1 = memchr(s, ' ', len), *sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - s)) : NULL;
    if (!sp2) return LLVMFuzzerMutate(data, size, max);
    size_t head = (size_t)(sp2 + 1 - (const char *)data);
    unsigned long long n = strtoull(sp1 + 1, NULL, 16);
    unsigned long long d[256];
    size_t nd = 0;
    for (const char *p = sp2 + 1; nd < 256 && p < s + len && *p != '-';) {
        char *e;
        d[nd++] = strtoull(p, &e, 16);
        if (*e != ',') break;
        p = e + 1;
    }
    uint32_t r = fz_rand(rs) % 8;
    unsigned long long lim = n && n < ULLONG_MAX - 1 ? n + 2 : 4; /* n + 2 must not wrap to 0 (a hostile n) */
    unsigned long long v = fz_rand(rs) % lim;
    if (r < 3 && nd) d[fz_rand(rs) % nd] = r == 0 ? v : r == 1 ? 0 : d[0] + 1;
    else if (r < 6 && nd < 256) d[nd++] = r == 5 ? 1 : v % 64;
    else if (r == 6 && nd) nd--;
    else nd = 0;
    char buf[4200];
    size_t o = 0;
    for (size_t i = 0; i < nd && o < 4000; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, i ? ",%llx" : "%llx", d[i]);
    if (!nd) o = (size_t)snprintf(buf, sizeof buf, "-");
    if (head + o + 1 > max) return size;
    memcpy(data + head, buf, o);
    data[head + o] = 0;
    return head + o;
}

static size_t memo_mutate(uint8_t *data, size_t size, size_t max, uint64_t *rs) {
    if (max < 9 + 128) return LLVMFuzzerMutate(data, size, max);
    if (size < 9) memset(data + size, 0, 9 - size);
    uint64_t sig = fz_rd64(data + 1);
    char digest_hex[33] = "0123456789abcdef0123456789abcdef";
    const char *d = size > 9 ? memchr(data + 9, 'd', size - 9) : NULL; /* keep the input's digest */
    if (d && (size_t)((const uint8_t *)d - data) + 7 + 32 <= size && memcmp(d, "digest ", 7) == 0)
        memcpy(digest_hex, d + 7, 32);
    uint32_t r = fz_rand(rs) % 6;
    if (r == 0) digest_hex[fz_rand(rs) % 32] = "0123456789abcdefABCDEFg "[fz_rand(rs) % 24];
    uint64_t said = r == 1 ? sig ^ (1ull << (fz_rand(rs) % 64)) : sig;
    int n = snprintf((char *)data + 9, max - 9, "%s\nsig %016llx\n%sdigest %s\n",
                     r == 2 ? "kcache-toolkit 2" : "kcache-toolkit 1", (unsigned long long)said,
                     r == 3 ? "extra\n" : "", digest_hex);
    if (r == 4) n -= 1 + (int)(fz_rand(rs) % 20); /* cut short */
    if (r == 5) fz_wr64(data + 1, sig + 1);
    return 9 + (size_t)(n > 0 ? n : 0);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed) {
    uint64_t rs = seed * 0x9e3779b97f4a7c15ull + 11;
    if (size < 2 || max < 2 || fz_rand(&rs) % 8 == 0) return LLVMFuzzerMutate(data, size, max);
    switch (data[0] % 3) {
    case 0: return manifest_mutate(data, size, max, &rs);
    case 1: return reads_mutate(data, size, max, &rs);
    default: return memo_mutate(data, size, max, &rs);
    }
}

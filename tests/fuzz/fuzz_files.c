/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_files.c — libFuzzer target: the small files a cache directory and its user keep beside the
 * entries, each read by the library's own reader from a real file in a scratch cache:
 *
 *   mode % 4 == 0  a shard's stats file (store/local_stats.c, "KCSTATS1" v1): rest := slot:u8
 *                  n:u32 file.  The file goes to shard 00 with its XXH3-64 made right (unless
 *                  mode & 0x40), `n` is counted in `slot` and flushed (the reader, the locked add,
 *                  the writer) and the shard read back (kc_local_*; mode & 0x80: kc_cache_stats too).
 *                  Bytes past the counters are its latency section ("KCSTATL1"): whole, its magic
 *                  and dimensions set unless mode & 0x10 and its checksum made right unless
 *                  mode & 0x20; a lookup of `n` µs is observed under outcome `slot` and the
 *                  histograms read back (kc_local_latency; mode & 0x80: kc_cache_metrics too).
 *   mode % 4 == 1  the directory's record (cache/record.c, v1/record): rest is the file; the reader
 *                  (kc_cache_record_get, _foreach; mode & 0x80: kc_cache_toolchain for "pin") and a writer
 *                  (kc_cache_record_set) run over it.
 *   mode % 4 == 2  a site profile ("kcache-profile 1", cache.c [Note: profile format]): the strict
 *                  reader (kc_site_profile_check, kc_site_profile_merge) on the bytes, and the
 *                  lenient local reader on them as the file of site "fz" (kc_site_new, then
 *                  kc_site_save_profile merges into it and kc_site_profile_foreach reads it back).
 *   mode % 4 == 3  a key file (entry/sign.c, "kcache-ed25519-public 1" / "-private 1"): rest as a
 *                  keyring's one .pub file (kc_keyring_load) and as a private key (kc_signer_load).
 *
 * The custom mutator is structure-aware: a stats file is rebuilt with its magic, slot count and
 * counters set to edge values (0, 1, 2^63-1, 2^63, 2^64-1) and its checksum made right; the text
 * files are mutated a line at a time — a line replaced by one made from the format's grammar
 * (a key line with the key id computed from its key, so the reader gets past the id check), a
 * line dropped, doubled or swapped, or one line's bytes mutated by libFuzzer — and one time in
 * eight the whole input raw.  Seeds: tests/fuzz/corpus/files/ (tools/fuzz_seeds.sh).
 *
 * Invariants (abort): a profile the strict reader takes merges (dry run); every profile
 * kc_site_profile_foreach hands passes the strict reader; a record field set reads back as set.
 * Must not: abort on anything the library refuses (a refusal is a correct answer).
 */
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kcache.h"
#include "kcache/guard.h"
#include "kcache/sign.h"
#include "mutate_entry.h"     /* fz_rand, fz_wr64, LLVMFuzzerMutate */
#include "store/local_impl.h" /* kc_local_stats_read_, KC_STATS_SLOTS */

#define STATS_SIZE (8 + 4 + 4 + 8 * 32 + 8)
#define LAT_SIZE (8 + 4 + 4 + 8 * KC_LAT_SLOTS + 8)

static kc_cache *cache;
static kc_local *local; /* the same directory's local store (the stats mode) */
static char dir[128];

static void fz_setup(void) {
    if (cache) return;
    /* In memory where there is a tmpfs: the writers fsync, which a disk makes 100 times slower. */
    char tmpl[] = "/dev/shm/kcfuzz-files-XXXXXX", tmpl2[] = "/tmp/kcfuzz-files-XXXXXX";
    char *d = mkdtemp(tmpl);
    if (!d) d = mkdtemp(tmpl2);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = d;
    o.flags = KC_OPEN_NO_ENV;
    if (!d || kc_cache_open(&cache, &o) != KC_OK || kc_local_open(&local, d, 0, 0) != KC_OK) abort();
    snprintf(dir, sizeof dir, "%s", d);
}

static void put(const char *path, const void *data, size_t len, unsigned mode) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0 || chmod(path, mode) != 0) abort();
}

static void stats_fix(uint8_t *b) { fz_wr64(b + STATS_SIZE - 8, XXH3_64bits(b, STATS_SIZE - 8)); }

static void stats_mode(uint8_t mode, const uint8_t *p, size_t n) {
    if (n < 5) return;
    unsigned slot = p[0];
    uint32_t count = fz_rd32(p + 1);
    uint8_t b[STATS_SIZE + LAT_SIZE] = {0}, *t = b + STATS_SIZE;
    size_t len = n - 5 < sizeof b ? n - 5 : sizeof b;
    memcpy(b, p + 5, len);
    if (len < STATS_SIZE) len = STATS_SIZE;
    if (!(mode & 0x40)) stats_fix(b);
    if (len == sizeof b && !(mode & 0x10)) {
        uint32_t dims[2] = {KC_LOOKUP_OUTCOMES, KC_LAT_PER}; /* little-endian, as the rest of this target */
        memcpy(t, "KCSTATL1", 8);
        memcpy(t + 8, dims, 8);
    }
    if (len == sizeof b && !(mode & 0x20)) fz_wr64(t + LAT_SIZE - 8, XXH3_64bits(t, LAT_SIZE - 8));
    char path[256];
    snprintf(path, sizeof path, "%s/v1/00", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/v1/00/stats", dir);
    put(path, b, len, 0600);
    /* The local store's own calls on shard 00 alone (kc_cache_stats reads all 256 shards: 40 times
     * slower, the same reader): count, flush (read, add, write under the lock), read back. */
    kc_local_count(local, 0, (kc_stat)(slot % (KC_STAT_COUNT + 2)), (int64_t)count);
    kc_local_flush(local);
    int64_t v[KC_STATS_SLOTS];
    kc_local_stats_read_(local, 0, v);
    kc_local_observe(local, 0, (kc_lookup_outcome)(slot % (KC_LOOKUP_OUTCOMES + 1)), (uint64_t)count * 1000, 1);
    kc_latency lat = KC_LATENCY_INIT;
    kc_local_latency(local, &lat);
    if (mode & 0x80) { /* now and then the whole store's view */
        kc_stats st;
        kc_cache_stats(cache, &st);
        char text[256];
        kc_cache_metrics(cache, mode & 1 ? KC_METRICS_PROMETHEUS : KC_METRICS_OPENMETRICS, text, sizeof text, NULL);
    }
}

static int record_cb(const char *name, const char *value, void *ctx) {
    size_t *t = ctx;
    *t += strlen(name) + strlen(value);
    return 0;
}

static void record_mode(uint8_t mode, const uint8_t *p, size_t n) {
    char path[256], out[9000];
    snprintf(path, sizeof path, "%s/v1/record", dir);
    put(path, p, n, 0600);
    size_t t = 0;
    kc_cache_record_get(cache, "pin", out, sizeof out);
    kc_cache_record_get(cache, "a", out, 2);
    kc_cache_record_foreach(cache, "", record_cb, &t);
    kc_cache_record_foreach(cache, "toolchain.", record_cb, &t);
    kc_toolchain_choice tc;
    if (mode & 0x80) kc_cache_toolchain(cache, &tc); /* the pin's reader (slow: it finds NVRTC) */
    if (kc_cache_record_set(cache, "fz.v", "1") == KC_OK &&
        (kc_cache_record_get(cache, "fz.v", out, sizeof out) != KC_OK || strcmp(out, "1") != 0)) {
        fprintf(stderr, "fuzz_files: a record field set does not read back\n");
        abort();
    }
    kc_error_clear();
}

static int profile_cb(const void *data, size_t len, void *ctx) {
    (void)ctx;
    if (kc_site_profile_check(data, len, NULL, 0) != KC_OK) {
        fprintf(stderr, "fuzz_files: kc_site_profile_foreach handed a profile the strict reader refuses\n");
        abort();
    }
    return 0;
}

static void profile_mode(const uint8_t *p, size_t n) {
    char site[KC_SITE_NAME_MAX + 1], pdir[256], path[300];
    int changed;
    if (kc_site_profile_check(p, n, site, sizeof site) == KC_OK &&
        kc_site_profile_merge(cache, p, n, 1, &changed) != KC_OK) {
        fprintf(stderr, "fuzz_files: a sound profile does not merge: %s\n", kc_error_last()->message);
        abort();
    }
    if (kc_cache_profile_dir(cache, pdir, sizeof pdir) != KC_OK) abort();
    mkdir(pdir, 0700);
    snprintf(path, sizeof path, "%s/%016llx.profile", pdir, (unsigned long long)XXH3_64bits("fz", 2));
    put(path, p, n, 0600);
    kc_site *s;
    if (kc_site_new(&s, cache, "fz", NULL) == KC_OK) {
        kc_site_save_profile(s);
        kc_site_free(s);
    }
    kc_site_profile_foreach(cache, profile_cb, NULL);
    unlink(path);
    kc_error_clear();
}

static void key_mode(const uint8_t *p, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/ring", dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/ring/k.pub", dir);
    put(path, p, n, 0644);
    kc_keyring *kr;
    snprintf(path, sizeof path, "%s/ring", dir);
    if (kc_keyring_load(&kr, path) == KC_OK) kc_keyring_free(kr);
    snprintf(path, sizeof path, "%s/k.key", dir);
    put(path, p, n, 0600);
    kc_signer *sg;
    if (kc_signer_load(&sg, path) == KC_OK) kc_signer_free(sg);
    kc_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_setup();
    if (size < 1) return 0;
    switch (data[0] % 4) {
    case 0: stats_mode(data[0], data + 1, size - 1); break;
    case 1: record_mode(data[0], data + 1, size - 1); break;
    case 2: profile_mode(data + 1, size - 1); break;
    default: key_mode(data + 1, size - 1); break;
    }
    return 0;
}

/* ---- the structure-aware mutator ---- */

static void hex(const uint8_t *b, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* One line of the format `mode` names, made from its grammar (no newline). */
static int gen_line(unsigned mode, uint64_t *rs, char *out, size_t cap) {
    static const char *const names[] = {
        "pin", "toolchain.nvrtc-12.4", "nvrtc.file.0123456789abcdef", "size_limit", "fz.v", "a", "x:y-z.w_1"};
    uint32_t r = fz_rand(rs);
    if (mode == 1) {
        const char *nm = names[r % 7];
        return snprintf(out, cap, r & 8 ? "%s=%u" : "%s=", nm, fz_rand(rs) % 1000000);
    }
    if (mode == 2) {
        switch (r % 5) {
        case 0: return snprintf(out, cap, "kcache-profile %u", fz_rand(rs) % 3);
        case 1: return snprintf(out, cap, "site %s", r & 32 ? "fz" : "other");
        default: return snprintf(out, cap, "input %u %x", fz_rand(rs) % 34, fz_rand(rs) % 300);
        }
    }
    /* a key line, its id SHA-256's first 8 bytes of its key (or not, one time in four) */
    uint8_t key[32], d[32];
    for (int i = 0; i < 32; i++) key[i] = (uint8_t)fz_rand(rs);
    SHA256(key, 32, d);
    if ((r & 3) == 0) d[0] ^= 1;
    char kh[65], ih[17];
    hex(key, 32, kh);
    hex(d, 8, ih);
    return snprintf(out, cap, "kcache-ed25519-%s %s %s %s", r & 4 ? "private" : "public", r & 8 ? "1" : "2", ih, kh);
}

static size_t stats_mutate(uint8_t *data, size_t size, size_t max, uint64_t *rs) {
    size_t need = 1 + 5 + STATS_SIZE;
    if (max < need) return LLVMFuzzerMutate(data, size, max);
    if (size < need) memset(data + size, 0, need - size);
    uint8_t *b = data + 6;
    static const uint64_t edge[] = {0, 1, 2, 0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull, 1000};
    static const uint32_t counts[] = {32, 32, 0, 1, 7, 33, 0xffffffffu};
    memcpy(b, "KCSTATS1", 8);
    uint32_t r = fz_rand(rs);
    if (r % 4 == 0) {
        uint32_t c = counts[fz_rand(rs) % 7];
        memcpy(b + 8, &c, 4);
    }
    fz_wr64(b + 16 + 8 * (fz_rand(rs) % 32), edge[fz_rand(rs) % 7]);
    if (r & 16) data[1] = (uint8_t)(fz_rand(rs) % 24); /* the slot counted */
    if (r & 32) {
        uint32_t c = r & 64 ? 1 : 0xffffffffu;
        memcpy(data + 2, &c, 4);
    }                                          /* n */
    data[0] &= (uint8_t)~0x40;                 /* its checksum made right by the target */
    if ((r & 128) && max >= need + LAT_SIZE) { /* its latency section too, a value at an edge */
        if (size < need + LAT_SIZE)
            memset(data + (size > need ? size : need), 0, need + LAT_SIZE - (size > need ? size : need));
        fz_wr64(b + STATS_SIZE + 16 + 8 * (fz_rand(rs) % KC_LAT_SLOTS), edge[fz_rand(rs) % 7]);
        data[0] &= (uint8_t)~0x30; /* its magic, dimensions and checksum made right by the target */
        return need + LAT_SIZE;
    }
    return need;
}

/* A text file, a line at a time. */
static size_t lines_mutate(uint8_t *data, size_t size, size_t max, uint64_t *rs) {
    enum { MAXL = 64 };
    char *text = malloc(size + 1), *line[MAXL + 1];
    size_t nl = 0;
    if (!text) return size;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    for (char *p = text, *e; nl < MAXL && p < text + size - 1; p = e + 1) {
        line[nl++] = p;
        if (!(e = strchr(p, '\n'))) break;
        *e = 0;
    }
    char made[160], *extra = NULL;
    uint32_t r = fz_rand(rs) % 6, at = nl ? fz_rand(rs) % (uint32_t)nl : 0;
    if (r <= 1 || nl == 0) { /* replaced, or added */
        gen_line(data[0] % 4, rs, made, sizeof made);
        if (r == 0 && nl) line[at] = made;
        else if (nl < MAXL) memmove(line + at + 1, line + at, (nl - at) * sizeof *line), line[at] = made, nl++;
    } else if (r == 2 && nl > 1) { /* dropped */
        memmove(line + at, line + at + 1, (nl - at - 1) * sizeof *line), nl--;
    } else if (r == 3 && nl < MAXL) { /* doubled */
        memmove(line + at + 1, line + at, (nl - at) * sizeof *line), nl++;
    } else if (r == 4) { /* swapped */
        char *t = line[at];
        uint32_t o = fz_rand(rs) % (uint32_t)nl;
        line[at] = line[o], line[o] = t;
    } else if ((extra = malloc(512))) { /* one line's bytes */
        size_t l = strlen(line[at]) < 256 ? strlen(line[at]) : 256;
        memcpy(extra, line[at], l);
        l = LLVMFuzzerMutate((uint8_t *)extra, l, 511);
        extra[l] = 0;
        line[at] = extra;
    }
    size_t out = 1;
    int ends = fz_rand(rs) % 8 != 0; /* the last line ends, mostly */
    for (size_t i = 0; i < nl; i++) {
        size_t l = strlen(line[i]);
        if (out + l + 1 > max) break;
        memcpy(data + out, line[i], l);
        out += l;
        if (i + 1 < nl || ends) data[out++] = '\n';
    }
    free(extra);
    free(text);
    return out;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned seed) {
    uint64_t rs = seed * 0x9e3779b97f4a7c15ull + 7;
    if (size < 1 || max < 2 || fz_rand(&rs) % 8 == 0) return LLVMFuzzerMutate(data, size, max);
    if (data[0] % 4 == 0) return stats_mutate(data, size, max, &rs);
    return lines_mutate(data, size, max, &rs);
}

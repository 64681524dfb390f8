/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_bundle.c — bundles: export → clear → import gives every entry back with identical
 * bytes; importing twice writes nothing; filters; a truncated bundle or one with a byte
 * changed at random offsets is refused and the cache is unchanged; a bundle built by hand
 * (valid checksums) naming "../" is refused before anything is written; sizes that would wrap
 * a sum and payloads that declare far more than they could hold (decompression bombs) are refused
 * before anything is allocated from them (issue 15).
 */
#include <xxhash.h>
#include <zstd.h>

#include "kcache.h"
#include "helpers.h"

#include <errno.h>

#include "common/fs.h"

static char *dir;
static kc_cache *cache;

static int setup(void **state) {
    (void)state;
    return kct_open_cache("bundle", &dir, &cache);
}

static int teardown(void **state) {
    (void)state;
    return kct_close_cache(dir, cache);
}

static kc_key key_of(int i) { return kct_key("bundle", i); }

static void fill(int n) {
    unsigned s = 9;
    uint8_t buf[3000];
    for (int i = 0; i < n; i++) {
        kc_key k = key_of(i);
        kc_entry *e;
        kc_entry_new(&e, &k, i % 2 ? "sm_90" : "sm_80");
        for (size_t j = 0; j < sizeof buf; j++) buf[j] = (uint8_t)(j % 7 ? rand_r(&s) : 0);
        kc_entry_set_section(e, KC_SECTION_KERNELS, buf, sizeof buf);
        assert_int_equal(kc_cache_put(cache, e), KC_OK);
        kc_entry_free(e);
    }
}

typedef struct snap {
    char names[64][80];
    uint64_t sums[64];
    int n;
} snap;

static int snap_item(const kc_cache_item *it, void *ctx) {
    snap *s = ctx;
    size_t len;
    uint8_t *b = kct_read(it->path, &len);
    char hex[33];
    kc_key_to_hex(&it->key, hex);
    snprintf(s->names[s->n], sizeof s->names[0], "%s.%s", hex, it->variant);
    s->sums[s->n++] = b ? XXH3_64bits(b, len) : 0;
    free(b);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

/* The cache's entries and their bytes, order-independent. */
static uint64_t fingerprint(void) {
    snap s = {.n = 0};
    kc_cache_foreach(cache, snap_item, &s);
    char lines[64][100];
    memset(lines, 0, sizeof lines);
    for (int i = 0; i < s.n; i++)
        snprintf(lines[i], sizeof lines[i], "%s %016llx", s.names[i], (unsigned long long)s.sums[i]);
    qsort(lines, (size_t)s.n, sizeof lines[0], by_name);
    return XXH3_64bits(lines, sizeof lines[0] * (size_t)s.n) ^ (uint64_t)s.n;
}

static void test_round_trip_and_idempotence(void **state) {
    (void)state;
    fill(10);
    uint64_t before = fingerprint();
    char path[600];
    snprintf(path, sizeof path, "%s/warm.kcb", dir);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_export(cache, path, NULL, &r), KC_OK);
    assert_int_equal(r.entries, 10);
    assert_int_equal(kc_cache_clear(cache), KC_OK);
    assert_int_not_equal(fingerprint(), before);
    assert_int_equal(kc_bundle_import(cache, path, 1, &r), KC_OK); /* dry run writes nothing… */
    assert_int_equal(r.entries, 10);
    assert_int_equal(r.written, 10); /* …and says what it would write */
    assert_int_equal(r.graphs_written, 10);
    assert_int_equal(kct_count_files(dir, ".kce"), 0);
    assert_int_equal(kc_bundle_import(cache, path, 0, &r), KC_OK);
    assert_int_equal(r.written, 10);
    assert_int_equal(fingerprint(), before); /* identical bytes */
    for (int i = 0; i < 10; i++) {
        kc_key k = key_of(i);
        kc_entry *e;
        assert_int_equal(kc_cache_get(cache, &k, i % 2 ? "sm_90" : "sm_80", &e), KC_OK);
        kc_entry_free(e);
    }
    assert_int_equal(kc_bundle_import(cache, path, 0, &r), KC_OK);
    assert_int_equal(r.written, 0);
    assert_int_equal(r.unchanged, 10);
    /* A variant filter. */
    const char *only[] = {"sm_90"};
    kc_bundle_filter f = {only, 1, NULL, 0};
    assert_int_equal(kc_bundle_export(cache, path, &f, &r), KC_OK);
    assert_int_equal(r.entries, 5);
    kc_key k3 = key_of(3);
    kc_bundle_filter fk = {NULL, 0, &k3, 1};
    assert_int_equal(kc_bundle_export(cache, path, &fk, &r), KC_OK);
    assert_int_equal(r.entries, 1);
}

/* The payload of bundle bytes `b` (len bytes; header: raw size at 16, payload from 48), inflated into a
 * new buffer (*raw its length), or NULL when it does not inflate to its declared size. */
static uint8_t *payload_of(const uint8_t *b, size_t len, size_t *raw) {
    if (len < 48) return NULL;
    uint64_t r;
    memcpy(&r, b + 16, 8);
    if (r > (64u << 20)) return NULL;
    uint8_t *out = malloc(r ? (size_t)r : 1);
    size_t got = out ? ZSTD_decompress(out, (size_t)r, b + 48, len - 48) : 0;
    if (!out || ZSTD_isError(got) || got != r) {
        free(out);
        return NULL;
    }
    *raw = (size_t)r;
    return out;
}

/* Whether the changed file inflates to exactly the original's content: a zstd stream has bits a
 * decoder ignores, and such a change leaves the bundle the same bundle (its content checksum
 * passes because the content is the same), so importing it is right. */
static int same_content(const uint8_t *a, const uint8_t *b, size_t len) {
    size_t ra = 0, rb = 0;
    uint8_t *pa = payload_of(a, len, &ra), *pb = payload_of(b, len, &rb);
    int same = pa && pb && ra == rb && memcmp(pa, pb, ra) == 0 && memcmp(a, b, 48) == 0;
    free(pa), free(pb);
    return same;
}

static void test_damaged_bundles_change_nothing(void **state) {
    (void)state;
    fill(6);
    char path[600], bad[600];
    snprintf(path, sizeof path, "%s/b.kcb", dir);
    snprintf(bad, sizeof bad, "%s/bad.kcb", dir);
    assert_int_equal(kc_bundle_export(cache, path, NULL, NULL), KC_OK);
    size_t len;
    uint8_t *b = kct_read(path, &len);
    /* Import into a cache that holds other content, so "unchanged" means something. */
    kc_cache_clear(cache);
    kc_key k = key_of(100);
    kc_entry *e;
    kc_entry_new(&e, &k, "sm_90");
    kc_entry_set_section(e, KC_SECTION_KERNELS, "x", 1);
    kc_cache_put(cache, e);
    kc_entry_free(e);
    uint64_t before = fingerprint();
    unsigned s = 17;
    int trials = 0, ignored = 0;
    for (size_t n = 0; n < len; n += (n < 64 ? 1 : 1 + len / 97)) { /* truncations */
        kct_write(bad, b, n);
        assert_int_not_equal(kc_bundle_import(cache, bad, 0, NULL), KC_OK);
        trials++;
    }
    for (int t = 0; t < 300; t++) { /* a byte changed at a random offset */
        uint8_t *c = malloc(len);
        memcpy(c, b, len);
        size_t at = (size_t)rand_r(&s) % len;
        c[at] ^= (uint8_t)(1 + rand_r(&s) % 255);
        if (same_content(b, c, len)) { /* the same bundle, differently encoded: not a damaged one */
            free(c);
            ignored++;
            continue;
        }
        kct_write(bad, c, len);
        free(c);
        int rc = kc_bundle_import(cache, bad, 0, NULL);
        if (rc == KC_OK) fail_msg("a bundle with byte %zu changed was accepted", at);
        trials++;
    }
    assert_int_equal(fingerprint(), before);
    assert_true(trials > 350);
    assert_true(ignored < 10);
    free(b);
}

/* Build a bundle by hand from the documented format, with valid checksums. */
static void write_bundle(const char *path, const char *name, const uint8_t *entry, size_t elen) {
    uint8_t content[8192];
    size_t nl = strlen(name), off = 0;
    content[off++] = (uint8_t)nl;
    content[off++] = 0;
    memcpy(content + off, name, nl);
    off += nl;
    uint64_t v[3] = {0, elen, XXH3_64bits(entry, elen)};
    memcpy(content + off, v, 24); /* little-endian host */
    off += 24;
    memcpy(content + off, entry, elen);
    off += elen;
    uint8_t file[9000];
    size_t z = ZSTD_compress(file + 48, sizeof file - 48, content, off, 3);
    memcpy(file, "\x89KCB\r\n\x1a\n", 8);
    uint16_t ver = 1, res = 0;
    uint32_t count = 1;
    uint64_t raw = off, stored = z, psum = XXH3_64bits(content, off);
    memcpy(file + 8, &ver, 2);
    memcpy(file + 10, &res, 2);
    memcpy(file + 12, &count, 4);
    memcpy(file + 16, &raw, 8);
    memcpy(file + 24, &stored, 8);
    memcpy(file + 32, &psum, 8);
    uint64_t hsum = XXH3_64bits(file, 40);
    memcpy(file + 40, &hsum, 8);
    kct_write(path, file, 48 + z);
}

static void test_names_that_escape_are_refused(void **state) {
    (void)state;
    kc_key k = key_of(1);
    kc_entry *e;
    kc_entry_new(&e, &k, "sm_90");
    kc_entry_set_section(e, KC_SECTION_KERNELS, "cubin", 5);
    void *bytes;
    size_t len;
    kc_entry_encode(e, &bytes, &len);
    char hex[33], good[80], path[600];
    kc_key_to_hex(&k, hex);
    snprintf(good, sizeof good, "%s.sm_90", hex);
    snprintf(path, sizeof path, "%s/crafted.kcb", dir);
    /* The hand-built bundle is accepted with the right name (the format is as documented)… */
    write_bundle(path, good, bytes, len);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_import(cache, path, 1, &r), KC_OK);
    assert_int_equal(r.entries, 1);
    /* …and refused with names that could leave the directory or lie about the entry. */
    const char *bad[] = {"../../../tmp/evil.sm_90", "00112233445566778899aabbccddeeff./x", "/etc/passwd"};
    for (size_t i = 0; i < 3; i++) {
        write_bundle(path, bad[i], bytes, len);
        assert_int_equal(kc_bundle_import(cache, path, 0, NULL), KC_EPERM);
        assert_non_null(strstr(kc_error_last()->message, "refused"));
    }
    char other[80];
    snprintf(other, sizeof other, "%s.sm_80", hex); /* a valid name that is not the entry's */
    write_bundle(path, other, bytes, len);
    assert_int_equal(kc_bundle_import(cache, path, 0, NULL), KC_ECORRUPT);
    assert_int_equal(kct_count_files(dir, ".kce"), 0);
    kc_free(bytes);
    kc_entry_free(e);
}

/* With an HMAC key, an import takes only entries sealed with that key: anything else is
 * refused whole, before any entry is decoded, and counted. */
static void test_imports_need_a_valid_mac_when_a_key_is_set(void **state) {
    (void)state;
    static const char KEY[] = "import key of at least 16 bytes";
    fill(3);
    char plain[600], sealed[600];
    snprintf(plain, sizeof plain, "%s/plain.kcb", dir);
    snprintf(sealed, sizeof sealed, "%s/sealed.kcb", dir);
    assert_int_equal(kc_bundle_export(cache, plain, NULL, NULL), KC_OK);
    char *d2 = kct_tmpdir("bundle-mac");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = d2;
    o.flags = KC_OPEN_NO_ENV;
    o.hmac_key = KEY;
    o.hmac_key_len = sizeof KEY - 1;
    kc_cache *keyed;
    assert_int_equal(kc_cache_open(&keyed, &o), KC_OK);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_import(keyed, plain, 0, &r), KC_EUNTRUSTED);
    assert_non_null(strstr(kc_error_last()->message, "carries no MAC"));
    kc_stats st;
    kc_cache_stats(keyed, &st);
    assert_int_equal(st.v[KC_STAT_MAC_REJECTED], 1);
    assert_int_equal(kct_count_files(d2, ".kce"), 0);
    /* Entries put through the keyed cache are sealed; their bundle imports into another keyed cache. */
    kc_key k = key_of(7);
    kc_entry *e;
    kc_entry_new(&e, &k, "sm_90");
    kc_entry_set_section(e, KC_SECTION_KERNELS, "cubin", 5);
    assert_int_equal(kc_cache_put(keyed, e), KC_OK);
    kc_entry_free(e);
    assert_int_equal(kc_bundle_export(keyed, sealed, NULL, NULL), KC_OK);
    char *d3 = kct_tmpdir("bundle-mac2");
    o.dir = d3;
    kc_cache *other;
    assert_int_equal(kc_cache_open(&other, &o), KC_OK);
    assert_int_equal(kc_bundle_import(other, sealed, 0, &r), KC_OK);
    assert_int_equal(r.written, 1);
    /* …and not under another key. */
    static const char OTHER[] = "some other key, also 16+ bytes";
    o.hmac_key = OTHER;
    o.hmac_key_len = sizeof OTHER - 1;
    char *d4 = kct_tmpdir("bundle-mac3");
    o.dir = d4;
    kc_cache *wrong;
    assert_int_equal(kc_cache_open(&wrong, &o), KC_OK);
    assert_int_equal(kc_bundle_import(wrong, sealed, 0, &r), KC_EUNTRUSTED);
    assert_non_null(strstr(kc_error_last()->message, "does not match"));
    /* A key too short to be a key is refused at open. */
    o.hmac_key_len = 8;
    kc_cache *weak;
    assert_int_equal(kc_cache_open(&weak, &o), KC_EINVAL);
    kct_close_cache(d2, keyed);
    kct_close_cache(d3, other);
    kct_close_cache(d4, wrong);
}

/* Build a bundle by hand around any table of contents: the header and payload checksums are
 * valid, whatever the toc claims.  `sizes`/`sums` are written as given (little-endian host). */
static void write_bundle_toc(const char *path, uint32_t n, const char *const *names, const uint64_t *offs,
                             const uint64_t *sizes, const uint64_t *sums, const uint8_t *body, size_t blen) {
    uint8_t content[8192];
    size_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        size_t nl = strlen(names[i]);
        content[off++] = (uint8_t)nl;
        content[off++] = 0;
        memcpy(content + off, names[i], nl);
        off += nl;
        uint64_t v[3] = {offs[i], sizes[i], sums[i]};
        memcpy(content + off, v, 24);
        off += 24;
    }
    memcpy(content + off, body, blen);
    off += blen;
    uint8_t file[9000];
    size_t z = ZSTD_compress(file + 48, sizeof file - 48, content, off, 3);
    memcpy(file, "\x89KCB\r\n\x1a\n", 8);
    uint16_t ver = 1, res = 0;
    uint64_t raw = off, stored = z, psum = XXH3_64bits(content, off);
    memcpy(file + 8, &ver, 2);
    memcpy(file + 10, &res, 2);
    memcpy(file + 12, &n, 4);
    memcpy(file + 16, &raw, 8);
    memcpy(file + 24, &stored, 8);
    memcpy(file + 32, &psum, 8);
    uint64_t hsum = XXH3_64bits(file, 40);
    memcpy(file + 40, &hsum, 8);
    kct_write(path, file, 48 + z);
}

/* Issue 15 item 1: a 4 KB bundle with valid checksums whose toc gives sizes 2^64-1 and L+1
 * (L the bytes after the toc).  The running sum wraps to L, so a wrapping check passes and the
 * first entry's checksum runs over 2^64-1 bytes (SEGV).  Every size is bounded before it is
 * added: refused as corrupt, with or without a key, nothing written. */
static void test_sizes_that_wrap_are_refused(void **state) {
    (void)state;
    uint8_t body[4000];
    for (size_t i = 0; i < sizeof body; i++) body[i] = (uint8_t)(i * 131 + 7);
    const uint64_t L = sizeof body;
    const char *names[2] = {"00112233445566778899aabbccddeeff.sm_90", "00112233445566778899aabbccddeef0.sm_90"};
    const uint64_t wraps[][2] = {{UINT64_MAX, L + 1}, {L + 1, UINT64_MAX}, {UINT64_MAX - L, 2 * L + 1}};
    char path[600];
    snprintf(path, sizeof path, "%s/wrap.kcb", dir);
    for (size_t t = 0; t < sizeof wraps / sizeof wraps[0]; t++) {
        uint64_t offs[2] = {0, wraps[t][0]}, sums[2] = {1, 2};
        write_bundle_toc(path, 2, names, offs, wraps[t], sums, body, sizeof body);
        kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
        assert_int_equal(kc_bundle_import(cache, path, 1, &r), KC_ECORRUPT);
        assert_int_equal(kc_bundle_import(cache, path, 0, &r), KC_ECORRUPT);
        assert_non_null(strstr(kc_error_last()->message, "size"));
    }
    /* Two entries under one name (sizes that fit): refused. */
    const char *twice[2] = {names[1], names[1]};
    uint64_t o2[2] = {0, L / 2}, s2[2] = {L / 2, L - L / 2},
             c2[2] = {XXH3_64bits(body, L / 2), XXH3_64bits(body + L / 2, L - L / 2)};
    write_bundle_toc(path, 2, twice, o2, s2, c2, body, sizeof body);
    assert_int_equal(kc_bundle_import(cache, path, 1, NULL), KC_ECORRUPT);
    assert_non_null(strstr(kc_error_last()->message, "appears twice"));
    /* One entry claiming more than the bundle holds, or more than an entry may be. */
    uint64_t off0 = 0, big = KC_ENTRY_MAX_BYTES + 1, sum0 = 0;
    write_bundle_toc(path, 1, names, &off0, &big, &sum0, body, sizeof body);
    assert_int_equal(kc_bundle_import(cache, path, 1, NULL), KC_ECORRUPT);
    assert_int_equal(kct_count_files(dir, ".kce"), 0);
}

/* Issue 15 item 2: a bundle whose payload is a small zstd frame declaring GiBs of content is
 * refused from its header, before anything is allocated or inflated. */
static void test_a_decompression_bomb_is_refused_before_inflating(void **state) {
    (void)state;
    const uint64_t raw = 2ull << 30; /* 2 GiB of zeros */
    ZSTD_CCtx *cz = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cz, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setPledgedSrcSize(cz, raw);
    size_t cap = 1 << 20, zlen = 0;
    uint8_t *file = calloc(1, 48 + cap);
    static const uint8_t zeros[1 << 20];
    XXH3_state_t *xs = XXH3_createState();
    XXH3_64bits_reset(xs);
    for (uint64_t done = 0; done < raw; done += sizeof zeros) {
        ZSTD_inBuffer in = {zeros, sizeof zeros, 0};
        ZSTD_EndDirective end = done + sizeof zeros == raw ? ZSTD_e_end : ZSTD_e_continue;
        size_t left;
        do {
            ZSTD_outBuffer out = {file + 48, cap, zlen};
            left = ZSTD_compressStream2(cz, &out, &in, end);
            assert_false(ZSTD_isError(left));
            zlen = out.pos;
        } while (end == ZSTD_e_end ? left != 0 : in.pos < in.size);
        XXH3_64bits_update(xs, zeros, sizeof zeros);
    }
    uint64_t psum = XXH3_64bits_digest(xs);
    XXH3_freeState(xs);
    ZSTD_freeCCtx(cz);
    assert_true(zlen < 200000); /* the bomb is small */
    memcpy(file, "\x89KCB\r\n\x1a\n", 8);
    uint16_t ver = 1, res = 0;
    uint32_t count = 1;
    uint64_t stored = zlen;
    memcpy(file + 8, &ver, 2);
    memcpy(file + 10, &res, 2);
    memcpy(file + 12, &count, 4);
    memcpy(file + 16, &raw, 8);
    memcpy(file + 24, &stored, 8);
    memcpy(file + 32, &psum, 8);
    uint64_t hsum = XXH3_64bits(file, 40);
    memcpy(file + 40, &hsum, 8);
    char path[600];
    snprintf(path, sizeof path, "%s/bomb.kcb", dir);
    kct_write(path, file, 48 + zlen);
    free(file);
    assert_int_equal(kc_bundle_import(cache, path, 1, NULL), KC_ECORRUPT);
    assert_non_null(strstr(kc_error_last()->message, "compression ratio"));
    assert_int_equal(kct_count_files(dir, ".kce"), 0);
}

/* Content that compresses past the ratio cap (entries of zeros stored raw) still exports as a
 * bundle that imports: the exporter stores such a payload instead of compressing it. */
static void test_a_very_compressible_cache_still_round_trips(void **state) {
    (void)state;
    size_t n = 3u << 20;
    uint8_t *zero = calloc(1, n);
    for (int i = 0; i < 8; i++) {
        kc_key k = key_of(200 + i);
        kc_entry *e;
        kc_entry_new(&e, &k, "sm_90");
        assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, zero, n), KC_OK);
        assert_int_equal(kc_cache_put(cache, e), KC_OK);
        kc_entry_free(e);
    }
    free(zero);
    char path[600];
    snprintf(path, sizeof path, "%s/zeros.kcb", dir);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_export(cache, path, NULL, &r), KC_OK);
    size_t blen;
    free(kct_read(path, &blen));
    assert_true(blen > (size_t)8 * n); /* stored, not compressed 1000:1 */
    assert_int_equal(kc_cache_clear(cache), KC_OK);
    assert_int_equal(kc_bundle_import(cache, path, 0, &r), KC_OK);
    assert_int_equal(r.written, 8);
}

/* Issue 15 item 17: inputs the user names are followed through symbolic links (Bazel runfiles,
 * Kubernetes secret mounts: a link to a link to the file): a bundle imported through a link,
 * and KCACHE_HMAC_KEY_FILE naming a link. */
static void test_inputs_named_through_links_are_followed(void **state) {
    (void)state;
    fill(3);
    char real[600], hop[600], link[600];
    snprintf(real, sizeof real, "%s/warm.kcb", dir);
    snprintf(hop, sizeof hop, "%s/..data", dir);
    snprintf(link, sizeof link, "%s/runfile.kcb", dir);
    assert_int_equal(kc_bundle_export(cache, real, NULL, NULL), KC_OK);
    assert_int_equal(symlink("warm.kcb", hop), 0);
    assert_int_equal(symlink(hop, link), 0);
    assert_int_equal(kc_cache_clear(cache), KC_OK);
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_import(cache, link, 0, &r), KC_OK);
    assert_int_equal(r.written, 3);
    /* The key file as a secret mount lays it out: key -> ..data/key, ..data -> a dated folder. */
    char secret[600], dated[600], key[700], data_link[600], keylink[600];
    snprintf(secret, sizeof secret, "%s/secret", dir);
    snprintf(dated, sizeof dated, "%s/..2026_11_23", secret);
    snprintf(key, sizeof key, "%s/key", dated);
    snprintf(data_link, sizeof data_link, "%s/..data", secret);
    snprintf(keylink, sizeof keylink, "%s/key", secret);
    assert_int_equal(mkdir(secret, 0700), 0);
    assert_int_equal(mkdir(dated, 0700), 0);
    assert_int_equal(kct_write(key, "a key of at least sixteen bytes\n", 32), 0);
    assert_int_equal(chmod(key, 0600), 0);
    assert_int_equal(symlink("..2026_11_23", data_link), 0);
    assert_int_equal(symlink("..data/key", keylink), 0);
    char *d2 = kct_tmpdir("bundle-keylink");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = d2;
    setenv("KCACHE_HMAC_KEY_FILE", keylink, 1);
    kc_cache *keyed = NULL;
    int rc = kc_cache_open(&keyed, &o);
    unsetenv("KCACHE_HMAC_KEY_FILE");
    if (rc) fprintf(stderr, "%s\n", kc_error_last()->message);
    assert_int_equal(rc, KC_OK);
    kct_close_cache(d2, keyed);
}

/* Issue 15 item 18: an import that a full disk stops part-way says what it wrote (never that the
 * cache is unchanged), and a member refused for its name is no MAC rejection. */
static void test_import_messages_say_what_happened(void **state) {
    (void)state;
    fill(3);
    char path[600];
    snprintf(path, sizeof path, "%s/warm.kcb", dir);
    assert_int_equal(kc_bundle_export(cache, path, NULL, NULL), KC_OK);
    assert_int_equal(kc_cache_clear(cache), KC_OK);
    kc_fs_fault_set(KC_FS_RENAME, 2, ENOSPC, true); /* the first entry lands, the second finds the disk full */
    kc_bundle_report r = KC_BUNDLE_REPORT_INIT;
    int rc = kc_bundle_import(cache, path, 0, &r);
    kc_fs_fault_clear();
    assert_int_not_equal(rc, KC_OK);
    assert_int_equal(r.written, 1);
    assert_int_equal(kct_count_files(dir, ".kce"), 1);
    const char *m = kc_error_last()->message;
    if (!strstr(m, "after writing 1")) fail_msg("the message does not say one entry was written: %s", m);
    /* A hand-built bundle whose member's name is refused, with no key configured. */
    char bad[600];
    snprintf(bad, sizeof bad, "%s/badname.kcb", dir);
    const char *names[] = {"../../../etc/x.sm_90"};
    uint64_t offs[] = {0}, sizes[] = {4}, sums[] = {XXH3_64bits("abcd", 4)};
    write_bundle_toc(bad, 1, names, offs, sizes, sums, (const uint8_t *)"abcd", 4);
    kc_stats st;
    kc_cache_stats(cache, &st);
    uint64_t before = st.v[KC_STAT_MAC_REJECTED];
    assert_int_equal(kc_bundle_import(cache, bad, 0, NULL), KC_EPERM);
    kc_cache_stats(cache, &st);
    assert_int_equal(st.v[KC_STAT_MAC_REJECTED], before);
}

/* Issue 15 item 18: a KCACHE_HMAC_KEY_FILE others can read (or the group write) is refused at
 * open, saying how to fix it; 0600 and 0640 (a secret shared through a group) are accepted. */
static void test_a_key_file_others_can_read_is_refused(void **state) {
    (void)state;
    char key[600];
    snprintf(key, sizeof key, "%s/hmac.key", dir);
    assert_int_equal(kct_write(key, "a key of at least sixteen bytes\n", 32), 0);
    static const struct {
        mode_t mode;
        int rc;
    } cases[] = {
        {0644, KC_EPERM}, {0604, KC_EPERM}, {0620, KC_EPERM}, {0602, KC_EPERM},
        {0600, KC_OK},    {0640, KC_OK},    {0400, KC_OK},
    };
    char *d2 = kct_tmpdir("bundle-keymode");
    kc_options o = KC_OPTIONS_INIT;
    o.dir = d2;
    setenv("KCACHE_HMAC_KEY_FILE", key, 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(chmod(key, cases[i].mode), 0);
        kc_cache *k = NULL;
        int rc = kc_cache_open(&k, &o);
        if (rc != cases[i].rc) fail_msg("mode %03o: %d (%s)", (unsigned)cases[i].mode, rc, kc_error_last()->message);
        if (rc) assert_non_null(strstr(kc_error_last()->message, "chmod 600"));
        else kc_cache_close(k);
    }
    unsetenv("KCACHE_HMAC_KEY_FILE");
    kct_rmtree(d2);
    free(d2);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_round_trip_and_idempotence),
        T(test_damaged_bundles_change_nothing),
        T(test_names_that_escape_are_refused),
        T(test_imports_need_a_valid_mac_when_a_key_is_set),
        T(test_sizes_that_wrap_are_refused),
        T(test_a_decompression_bomb_is_refused_before_inflating),
        T(test_a_very_compressible_cache_still_round_trips),
        T(test_inputs_named_through_links_are_followed),
        T(test_import_messages_say_what_happened),
        T(test_a_key_file_others_can_read_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

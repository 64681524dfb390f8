/*
 * entry.c — encode and strictly validate entries (grammar in include/kcache/entry.h).
 *
 * The one idea: the decoder trusts nothing.  It checks the fixed header, then the header
 * checksum (which also covers the section table), then every section's bounds and declared
 * sizes against the caps and the compression-ratio rule ([Note: sizes] in entry.h), for the
 * whole table, before it allocates or inflates anything; then each section's checksum of its
 * stored bytes, and only then decompresses, into a buffer of the length the verified table
 * promises, requiring the frame to fill it exactly.  Any defect is
 * KC_ECORRUPT with a reason; no partial entry is ever returned.
 *
 * Must not: read outside the input, allocate from an unchecked length, or interpret the
 * opaque sections (that is the graph part's job).
 *
 * Callers: the store's tiers (kc_entry_decode_as on every read), the front door, bundles,
 * the graph part (sections of a compiled graph), and tools through entry.h.
 */
#include "kcache/entry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>
#include <zstd.h>

#include "../common/crypto.h"
#include "../common/internal.h"
#include "entry_internal.h"
#include "sign_internal.h"
#include "kcache/target.h" /* kc_variant_check */

#define HEADER_SIZE 96
#define SUM_OFFSET 88
#define DESC_SIZE 40
#define MAX_SECTIONS 16
#define NTYPES (KC_SECTION_ORIGIN + 1) /* types 1..KC_SECTION_ORIGIN */
#define MAC_LEN 32
#define FLAG_MAC 1u
#define FLAG_SIG 2u /* an Ed25519 signature trailer follows ([Note: signatures]); never with FLAG_MAC */
#define SIG_TRAILER (KC_SIGN_KEY_ID_LEN + KC_SIGN_LEN)
#define MAX_DIGESTS 4096
#define ZSTD_LEVEL 3
#define CORRUPT(...) kc_err(KC_ECORRUPT, "corrupt entry: " __VA_ARGS__)
#define COMPRESS_MIN 256 /* smaller sections are stored as they are: a frame to inflate costs more than it saves */

static const uint8_t MAGIC[8] = {0x89, 'K', 'C', 'E', '\r', '\n', 0x1a, '\n'};

typedef struct section {
    uint8_t *data;
    size_t len;
    int present;
} section;

typedef struct named_digest {
    char *name; /* its own allocation, or inside names_block (a decoded META's) */
    kc_digest d;
} named_digest;

struct kc_entry {
    kc_key key;
    char variant[KC_VARIANT_MAX + 1];
    section sec[NTYPES];
    named_digest *digests;
    size_t ndigests, capdigests;
    char *names_block; /* the names decode_meta read, one allocation: digests[0, nblock) point into it */
    size_t nblock;
    char toolchain[256];
    uint64_t created_at;
    struct attached { uint8_t *buf; const uint8_t *data; size_t len; } *att; /* images in memory, never encoded
                                                                                (entry.h); data lies in buf */
    size_t natt;
    int partial; /* kc_entry_decode_some: some sections or META's digests left out; never encoded */
};

/* ---- per-thread zstd contexts (freed at thread exit) ---- */
static pthread_key_t zkey;
static pthread_once_t zonce = PTHREAD_ONCE_INIT;
typedef struct zctx {
    ZSTD_CCtx *c;
    ZSTD_DCtx *d;
} zctx;
static void zfree(void *p) {
    zctx *z = p;
    ZSTD_freeCCtx(z->c);
    ZSTD_freeDCtx(z->d);
    free(z);
}
static void zinit(void) { pthread_key_create(&zkey, zfree); }
static zctx *zget(void) {
    pthread_once(&zonce, zinit);
    zctx *z = pthread_getspecific(zkey);
    if (!z) {
        z = kc_calloc(1, sizeof *z);
        if (!z) return NULL;
        if (pthread_setspecific(zkey, z) != 0) {
            free(z);
            return NULL;
        }
    }
    return z;
}

int kc_entry_new(kc_entry **out, const kc_key *key, const char *variant) {
    if (out) *out = NULL; /* on every failure too */
    if (!out || !key) return kc_err(KC_EINVAL, "kc_entry_new: NULL argument");
    *out = NULL;
    int rc = kc_variant_check(variant);
    if (rc) return rc;
    kc_entry *e = kc_calloc(1, sizeof *e);
    if (!e) return kc_err(KC_ENOMEM, "kc_entry_new: out of memory");
    e->key = *key;
    memcpy(e->variant, variant, strlen(variant) + 1); /* checked: at most KC_VARIANT_MAX */
    *out = e;
    return KC_OK;
}

void kc_entry_free(kc_entry *e) {
    if (!e) return;
    for (int i = 0; i < NTYPES; i++) free(e->sec[i].data);
    for (size_t i = e->nblock; i < e->ndigests; i++) free(e->digests[i].name);
    free(e->names_block);
    free(e->digests);
    for (size_t i = 0; i < e->natt; i++) free(e->att[i].buf);
    free(e->att);
    free(e);
}

/* Room for attached image `index`: KC_OK, or KC_ENOMEM (recorded). */
static int att_room(kc_entry *e, size_t index) {
    if (index < e->natt) return KC_OK;
    struct attached *a = kc_realloc(e->att, (index + 1) * sizeof *a);
    if (!a) return kc_err(KC_ENOMEM, "kc_entry_attach_image: out of memory");
    memset(a + e->natt, 0, (index + 1 - e->natt) * sizeof *a);
    e->att = a;
    e->natt = index + 1;
    return KC_OK;
}

int kc_entry_attach_image(kc_entry *e, size_t index, const void *bytes, size_t len) {
    if (!e || !bytes || !len || index >= KC_IMAGES_MAX) return kc_err(KC_EINVAL, "kc_entry_attach_image: bad argument");
    int rc = att_room(e, index);
    if (rc) return rc;
    uint8_t *copy = kc_malloc(len);
    if (!copy) return kc_err(KC_ENOMEM, "kc_entry_attach_image: out of memory");
    memcpy(copy, bytes, len);
    free(e->att[index].buf);
    e->att[index].buf = copy;
    e->att[index].data = copy;
    e->att[index].len = len;
    return KC_OK;
}

/*
 * [Note: attached, not copied] A lookup that loads a graph reads each image entry, inflates its
 * IMAGE section into a buffer of its own, checks the image inside it (kc_image_entry_read) and
 * frees the image entry.  The image's bytes are a tail of that buffer, so the buffer itself moves
 * to the graph entry (buf, with data pointing at the image in it) instead of a copy of the image:
 * one allocation and one copy of every image (tens of KB for a large cubin) fewer per load.  The
 * bytes attached are the bytes checked: nothing writes the buffer after the check.
 */
int kc_entry_attach_image_from_(kc_entry *e, size_t index, kc_entry *img, const void *bytes, size_t len) {
    if (!e || !img || !bytes || !len || index >= KC_IMAGES_MAX) return kc_err(KC_EINVAL, "kc_entry_attach_image: bad argument");
    section *s = &img->sec[KC_SECTION_IMAGE];
    const uint8_t *b = bytes;
    if (!s->present || !s->data || b < s->data || len > s->len || (size_t)(b - s->data) > s->len - len)
        return kc_entry_attach_image(e, index, bytes, len); /* not inside it: a copy */
    int rc = att_room(e, index);
    if (rc) return rc;
    free(e->att[index].buf);
    e->att[index].buf = s->data;
    e->att[index].data = b;
    e->att[index].len = len;
    s->data = NULL, s->len = 0, s->present = 0;
    return KC_OK;
}

int kc_entry_attached_image(const kc_entry *e, size_t index, const void **bytes, size_t *len) {
    if (!e || !bytes || !len) return kc_err(KC_EINVAL, "kc_entry_attached_image: NULL argument");
    if (index >= e->natt || !e->att[index].buf) return KC_MISS;
    *bytes = e->att[index].data;
    *len = e->att[index].len;
    return KC_OK;
}

int kc_entry_peek_version(const void *data, size_t len) {
    if (!data || len < HEADER_SIZE || memcmp(data, MAGIC, sizeof MAGIC) != 0) return -1;
    return kc_rd_u16((const uint8_t *)data + 8);
}

const kc_key *kc_entry_key(const kc_entry *e) { return &e->key; }
const char *kc_entry_variant(const kc_entry *e) { return e->variant; }

static int valid_type(int t) { return t >= KC_SECTION_META && t <= KC_SECTION_ORIGIN; }

/* ---- ORIGIN: name/value records (entry.h's grammar) ---- */

static int origin_name_ok(const uint8_t *s, size_t n) {
    if (n < 1 || n > KC_ORIGIN_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_')) return 0;
    return 1;
}

/* Walk an ORIGIN payload: KC_OK when it is well formed; with `name`, that record's value and its length
 * (KC_MISS when absent). */
static int origin_scan(const uint8_t *p, size_t n, const char *name, const uint8_t **value, uint32_t *vlen) {
    kc_reader r = kc_reader_make(p, n);
    uint32_t count = kc_rd_next_u32(&r);
    if (r.bad || count < 1 || count > KC_ORIGIN_MAX) return CORRUPT("ORIGIN record count %u", count);
    const uint8_t *names[KC_ORIGIN_MAX];
    uint32_t lens[KC_ORIGIN_MAX];
    int found = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t nl = kc_rd_next_u32(&r);
        const uint8_t *nm = r.bad || nl > KC_ORIGIN_NAME_MAX ? NULL : kc_rd_bytes(&r, nl);
        uint32_t vl = kc_rd_next_u32(&r);
        const uint8_t *v = r.bad || vl > KC_ORIGIN_VALUE_MAX ? NULL : kc_rd_bytes(&r, vl);
        if (r.bad || !nm || !v || !origin_name_ok(nm, nl) || memchr(v, 0, vl)) return CORRUPT("ORIGIN record %u is malformed", i);
        for (uint32_t j = 0; j < i; j++)
            if (lens[j] == nl && memcmp(names[j], nm, nl) == 0) return CORRUPT("ORIGIN names '%.*s' twice", (int)nl, (const char *)nm);
        names[i] = nm, lens[i] = nl;
        if (name && strlen(name) == nl && memcmp(name, nm, nl) == 0) *value = v, *vlen = vl, found = 1;
    }
    if (r.left) return CORRUPT("ORIGIN has %zu trailing bytes", r.left);
    return !name || found ? KC_OK : KC_MISS;
}

int kc_entry_set_origin(kc_entry *e, const char *name, const char *value) {
    if (!e || !name || !value) return kc_err(KC_EINVAL, "kc_entry_set_origin: NULL argument");
    size_t nl = strlen(name), vl = strlen(value);
    if (!origin_name_ok((const uint8_t *)name, nl)) return kc_err(KC_EINVAL, "origin name '%s': 1..%d of [a-z0-9_]", name, KC_ORIGIN_NAME_MAX);
    if (vl > KC_ORIGIN_VALUE_MAX) return kc_err(KC_EINVAL, "origin value of %zu bytes (at most %d)", vl, KC_ORIGIN_VALUE_MAX);
    /* Copy the other records, then this one (replacing an earlier value). */
    const section *old = &e->sec[KC_SECTION_ORIGIN];
    kc_buf b = {0};
    uint32_t count = 0;
    kc_buf_put_u32(&b, 0);
    if (old->present) {
        kc_reader r = kc_reader_make(old->data, old->len);
        uint32_t n = kc_rd_next_u32(&r);
        for (uint32_t i = 0; i < n && !r.bad; i++) {
            uint32_t l1 = kc_rd_next_u32(&r);
            const uint8_t *nm = kc_rd_bytes(&r, l1);
            uint32_t l2 = kc_rd_next_u32(&r);
            const uint8_t *v = kc_rd_bytes(&r, l2);
            if (r.bad || (l1 == nl && memcmp(nm, name, nl) == 0)) continue;
            kc_buf_put_u32(&b, l1), kc_buf_put(&b, nm, l1), kc_buf_put_u32(&b, l2), kc_buf_put(&b, v, l2);
            count++;
        }
    }
    if (count >= KC_ORIGIN_MAX) {
        kc_buf_free(&b);
        return kc_err(KC_EINVAL, "an entry's ORIGIN holds at most %d records", KC_ORIGIN_MAX);
    }
    kc_buf_put_u32(&b, (uint32_t)nl), kc_buf_put(&b, name, nl), kc_buf_put_u32(&b, (uint32_t)vl), kc_buf_put(&b, value, vl);
    if (b.failed) {
        kc_buf_free(&b);
        return kc_err(KC_ENOMEM, "kc_entry_set_origin: out of memory");
    }
    kc_wr_u32(b.data, count + 1);
    free(e->sec[KC_SECTION_ORIGIN].data);
    e->sec[KC_SECTION_ORIGIN].data = b.data;
    e->sec[KC_SECTION_ORIGIN].len = b.len;
    e->sec[KC_SECTION_ORIGIN].present = 1;
    return KC_OK;
}

int kc_entry_origin(const kc_entry *e, const char *name, char *out, size_t cap) {
    if (!e || !name || !out || cap == 0) return kc_err(KC_EINVAL, "kc_entry_origin: bad argument");
    out[0] = '\0';
    const section *s = &e->sec[KC_SECTION_ORIGIN];
    if (!s->present) return KC_MISS;
    const uint8_t *v = NULL;
    uint32_t vl = 0;
    int rc = origin_scan(s->data, s->len, name, &v, &vl);
    if (rc) return rc;
    if (vl >= cap) return kc_err(KC_EINVAL, "origin '%s' holds %u bytes, room for %zu", name, vl, cap - 1);
    memcpy(out, v, vl);
    out[vl] = '\0';
    return KC_OK;
}

int kc_entry_set_section(kc_entry *e, kc_section_type type, const void *data, size_t len) {
    if (!e || (!data && len)) return kc_err(KC_EINVAL, "kc_entry_set_section: NULL argument");
    if (!valid_type((int)type) || type == KC_SECTION_META || type == KC_SECTION_ORIGIN) /* kc_entry_set_origin */
        return kc_err(KC_EINVAL, "kc_entry_set_section: section type %d cannot be set", (int)type);
    if (len > KC_SECTION_MAX_RAW)
        return kc_err(KC_EINVAL, "section of %zu bytes is over the cap of %u", len, KC_SECTION_MAX_RAW);
    uint8_t *copy = kc_malloc(len);
    if (!copy) return kc_err(KC_ENOMEM, "kc_entry_set_section: out of memory");
    if (len) memcpy(copy, data, len);
    free(e->sec[type].data);
    e->sec[type].data = copy;
    e->sec[type].len = len;
    e->sec[type].present = 1;
    return KC_OK;
}

int kc_entry_section(const kc_entry *e, kc_section_type type, const void **data, size_t *len) {
    if (!e || !data || !len || !valid_type((int)type))
        return kc_err(KC_EINVAL, "kc_entry_section: bad argument");
    if (!e->sec[type].present) return KC_MISS;
    *data = e->sec[type].data;
    *len = e->sec[type].len;
    return KC_OK;
}

int kc_entry_add_digest(kc_entry *e, const char *name, const kc_digest *d) {
    if (!e || !name || !d) return kc_err(KC_EINVAL, "kc_entry_add_digest: NULL argument");
    size_t n = strlen(name);
    if (n == 0 || n > 255) return kc_err(KC_EINVAL, "digest name must be 1..255 bytes");
    if (e->ndigests >= MAX_DIGESTS) return kc_err(KC_EINVAL, "too many digests (max %d)", MAX_DIGESTS);
    if (e->ndigests == e->capdigests) {
        size_t cap = e->capdigests ? e->capdigests * 2 : 16;
        named_digest *p = kc_realloc(e->digests, cap * sizeof *p);
        if (!p) return kc_err(KC_ENOMEM, "kc_entry_add_digest: out of memory");
        e->digests = p;
        e->capdigests = cap;
    }
    char *copy = kc_strdup(name);
    if (!copy) return kc_err(KC_ENOMEM, "kc_entry_add_digest: out of memory");
    e->digests[e->ndigests].name = copy;
    e->digests[e->ndigests].d = *d;
    e->ndigests++;
    return KC_OK;
}

int kc_entry_add_key_digests(kc_entry *e, const kc_key_builder *kb) {
    size_t n = kc_key_digest_count(kb);
    if (n == 0) return kc_err(KC_EINVAL, "kc_entry_add_key_digests: key not finished");
    for (size_t i = 0; i < n; i++) {
        const char *name;
        kc_digest d;
        int rc = kc_key_digest_at(kb, i, &name, &d);
        if (rc == KC_OK) rc = kc_entry_add_digest(e, name, &d);
        if (rc) return rc;
    }
    return KC_OK;
}

size_t kc_entry_digest_count(const kc_entry *e) { return e ? e->ndigests : 0; }

int kc_entry_digest_at(const kc_entry *e, size_t i, const char **name_out, kc_digest *out) {
    if (!e || !name_out || !out || i >= e->ndigests) return kc_err(KC_EINVAL, "kc_entry_digest_at: bad index");
    *name_out = e->digests[i].name;
    *out = e->digests[i].d;
    return KC_OK;
}

int kc_entry_set_toolchain(kc_entry *e, const char *t) {
    if (!e || !t) return kc_err(KC_EINVAL, "kc_entry_set_toolchain: NULL argument");
    if (strlen(t) > 255) return kc_err(KC_EINVAL, "toolchain string over 255 bytes");
    snprintf(e->toolchain, sizeof e->toolchain, "%s", t);
    return KC_OK;
}

const char *kc_entry_toolchain(const kc_entry *e) { return e->toolchain; }
uint64_t kc_entry_created_at(const kc_entry *e) { return e->created_at; }
void kc_entry_set_created_at(kc_entry *e, uint64_t ns) { e->created_at = ns; }

/* XXH3-64 over header bytes [0, 88) followed by the section table (which must be present). */
static uint64_t header_sum(const uint8_t *h, uint32_t nsec) {
    uint8_t tmp[SUM_OFFSET + MAX_SECTIONS * DESC_SIZE];
    memcpy(tmp, h, SUM_OFFSET);
    memcpy(tmp + SUM_OFFSET, h + HEADER_SIZE, (size_t)nsec * DESC_SIZE);
    return XXH3_64bits(tmp, SUM_OFFSET + (size_t)nsec * DESC_SIZE);
}

/* The ratio rule of entry.h: may a zstd section of `stored` bytes declare `raw`?  Divides,
 * so it cannot wrap.  The encoder and the decoder ask the same question. */
static int ratio_ok(uint64_t raw, uint64_t stored) {
    return raw <= KC_SECTION_RATIO_FLOOR || raw / KC_SECTION_MAX_RATIO <= stored;
}

/* ---- encode ---- */

static int encode_meta(const kc_entry *e, uint64_t created, kc_buf *b) {
    kc_buf_put_u32(b, (uint32_t)e->ndigests);
    for (size_t i = 0; i < e->ndigests; i++) {
        size_t n = strlen(e->digests[i].name);
        kc_buf_put_u16(b, (uint16_t)n);
        kc_buf_put(b, e->digests[i].name, n);
        kc_buf_put(b, e->digests[i].d.bytes, 16);
    }
    kc_buf_put_u64(b, created);
    size_t tn = strlen(e->toolchain);
    kc_buf_put_u16(b, (uint16_t)tn);
    kc_buf_put(b, e->toolchain, tn);
    return b->failed ? kc_err(KC_ENOMEM, "encoding META: out of memory") : KC_OK;
}

typedef struct stored {
    const uint8_t *raw;
    size_t raw_len;
    uint8_t *zbuf; /* owned when compressed */
    size_t stored_len;
    uint32_t type, codec;
} stored;

int kc_entry_encode(const kc_entry *e, void **out, size_t *out_len) {
    if (out) *out = NULL; /* on every failure too */
    if (out_len) *out_len = 0;
    if (!e || !out || !out_len) return kc_err(KC_EINVAL, "kc_entry_encode: NULL argument");
    *out = NULL;
    *out_len = 0;
    if (e->partial) return kc_err(KC_EINVAL, "kc_entry_encode: a partly decoded entry (kc_entry_decode_some) is never encoded");
    kc_buf meta = {0}, b = {0};
    stored st[NTYPES];
    int nst = 0, rc;
    memset(st, 0, sizeof st);
    uint64_t created = e->created_at ? e->created_at : kc_now_ns();
    if ((rc = encode_meta(e, created, &meta))) goto done;
    zctx *z = zget();
    if (!z) {
        rc = kc_err(KC_ENOMEM, "kc_entry_encode: out of memory");
        goto done;
    }
    for (int t = KC_SECTION_META; t < NTYPES; t++) {
        const uint8_t *raw;
        size_t len;
        if (t == KC_SECTION_META) {
            raw = meta.data;
            len = meta.len;
        } else if (e->sec[t].present) {
            raw = e->sec[t].data;
            len = e->sec[t].len;
        } else {
            continue;
        }
        stored *s = &st[nst++];
        s->type = (uint32_t)t;
        s->raw = raw;
        s->raw_len = s->stored_len = len;
        s->codec = KC_CODEC_NONE;
        if (len > COMPRESS_MIN) {
            if (!z->c && !(z->c = ZSTD_createCCtx())) {
                rc = kc_err(KC_ENOMEM, "kc_entry_encode: out of memory (zstd)");
                goto done;
            }
            size_t bound = ZSTD_compressBound(len);
            uint8_t *zb = kc_malloc(bound);
            if (!zb) {
                rc = kc_err(KC_ENOMEM, "kc_entry_encode: out of memory");
                goto done;
            }
            size_t zn = ZSTD_compressCCtx(z->c, zb, bound, raw, len, ZSTD_LEVEL);
            /* Compressed only when it saves an eighth or more: a hit inflates every compressed section
             * of a graph entry and of each of its images, and a frame that saves a few bytes costs a
             * microsecond to set up.  Past the ratio: stored as is. */
            if (!ZSTD_isError(zn) && zn <= len - len / 8 && ratio_ok(len, zn)) {
                s->zbuf = zb;
                s->stored_len = zn;
                s->codec = KC_CODEC_ZSTD;
            } else {
                free(zb);
            }
        }
    }
    size_t total = HEADER_SIZE + (size_t)nst * DESC_SIZE;
    uint64_t raw_total = 0;
    for (int i = 0; i < nst; i++) total += st[i].stored_len, raw_total += st[i].raw_len;
    if (raw_total > KC_ENTRY_MAX_RAW || total > KC_ENTRY_MAX_BYTES) { /* each ≤ 256 MiB: no wrap */
        rc = kc_err(KC_EINVAL, "kc_entry_encode: %llu bytes of sections is over the cap of %llu",
                    (unsigned long long)raw_total, (unsigned long long)KC_ENTRY_MAX_RAW);
        goto done;
    }
    if ((rc = kc_buf_reserve(&b, total))) {
        rc = kc_err(KC_ENOMEM, "kc_entry_encode: out of memory");
        goto done;
    }
    uint8_t *h = b.data;
    memset(h, 0, HEADER_SIZE);
    memcpy(h, MAGIC, 8);
    kc_wr_u16(h + 8, KC_ENTRY_FORMAT_VERSION);
    kc_wr_u16(h + 10, HEADER_SIZE);
    kc_wr_u32(h + 12, 0);
    memcpy(h + 16, e->key.bytes, 16);
    memcpy(h + 32, e->variant, strlen(e->variant));
    kc_wr_u64(h + 64, (uint64_t)total);
    kc_wr_u32(h + 72, (uint32_t)nst);
    uint8_t *d = h + HEADER_SIZE;
    uint64_t off = HEADER_SIZE + (uint64_t)nst * DESC_SIZE;
    for (int i = 0; i < nst; i++, d += DESC_SIZE) {
        const uint8_t *bytes = st[i].zbuf ? st[i].zbuf : st[i].raw;
        kc_wr_u32(d, st[i].type);
        kc_wr_u32(d + 4, st[i].codec);
        kc_wr_u64(d + 8, st[i].raw_len);
        kc_wr_u64(d + 16, st[i].stored_len);
        kc_wr_u64(d + 24, off);
        kc_wr_u64(d + 32, XXH3_64bits(bytes, st[i].stored_len));
        if (st[i].stored_len) memcpy(h + off, bytes, st[i].stored_len);
        off += st[i].stored_len;
    }
    kc_wr_u64(h + SUM_OFFSET, header_sum(h, (uint32_t)nst));
    b.len = total;
    *out = b.data;
    *out_len = total;
    b.data = NULL;
    rc = KC_OK;
done:
    for (int i = 0; i < nst; i++) free(st[i].zbuf);
    kc_buf_free(&meta);
    kc_buf_free(&b);
    return rc;
}

/* ---- decode ---- */


/* A decoded META's digests: the array sized once, the names in one block (each name and its NUL
 * fit in the 2 + name + 16 bytes it takes in META), not an allocation per name. */
static int decode_meta(kc_entry *e, const uint8_t *p, size_t n) {
    kc_reader r = kc_reader_make(p, n);
    uint32_t count = kc_rd_next_u32(&r);
    if (r.bad || count > MAX_DIGESTS) return CORRUPT("META digest count %u", count);
    if (count && e->ndigests == 0 && !e->names_block && count <= n / 19) { /* 19: the least a digest takes */
        named_digest *ds = kc_realloc(e->digests, count * sizeof *ds);
        char *names = ds ? kc_malloc(n) : NULL;
        if (ds) e->digests = ds, e->capdigests = count;
        if (!names) return kc_err(KC_ENOMEM, "decoding entry: out of memory");
        e->names_block = names;
    }
    size_t at = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint16_t nl = kc_rd_next_u16(&r);
        const uint8_t *name = kc_rd_bytes(&r, nl);
        const uint8_t *dig = kc_rd_bytes(&r, 16);
        if (r.bad || nl == 0 || nl > 255) return CORRUPT("META digest %u is malformed", i);
        if (memchr(name, 0, nl)) return CORRUPT("META digest name %u holds a NUL", i);
        kc_digest d;
        memcpy(d.bytes, dig, 16);
        if (e->names_block && e->nblock == e->ndigests && at + nl + 1 <= n) {
            char *nm = e->names_block + at;
            memcpy(nm, name, nl);
            nm[nl] = '\0';
            at += (size_t)nl + 1;
            e->digests[e->ndigests].name = nm;
            e->digests[e->ndigests].d = d;
            e->nblock = ++e->ndigests;
            continue;
        }
        char tmp[256];
        memcpy(tmp, name, nl);
        tmp[nl] = '\0';
        int rc = kc_entry_add_digest(e, tmp, &d);
        if (rc) return rc;
    }
    uint64_t created = kc_rd_next_u64(&r);
    uint16_t tl = kc_rd_next_u16(&r);
    const uint8_t *tc = kc_rd_bytes(&r, tl);
    if (r.bad) return CORRUPT("META is truncated");
    if (r.left != 0) return CORRUPT("META has %zu trailing bytes", r.left);
    if (tl > 255 || memchr(tc, 0, tl)) return CORRUPT("META toolchain is malformed");
    e->created_at = created;
    memcpy(e->toolchain, tc, tl);
    e->toolchain[tl] = '\0';
    return KC_OK;
}

/*
 * [Note: checked, not inflated] A hit that only confirms an entry is stored (kc_graph_compile,
 * prewarm: nothing is loaded) needs its objects intact, not their bytes.  decode() with
 * `out` NULL runs every check a decode runs on the container — header, table, sizes and ratio
 * caps, the XXH3-64 of every section's stored bytes, a zstd frame's declared sizes — but
 * inflates no section and parses no META: the checksum already proves the stored bytes are the
 * ones written, and a frame's header proves what it inflates to; ORIGIN alone is always read
 * (it is small, and its records are validated).  What it cannot check is an
 * image's XXH3-128 over its raw bytes (that needs them); a local image is named by that
 * digest when this cache writes it, and an image from outside is checked in full before it is
 * kept (resolve.c), so a local object that passes this check holds the bytes its name was
 * made from; resolve.c also compares its IMAGE section's length with the reference.  Its target,
 * kind and SHA-256 (inside the compressed section) and the XXH3-128 of its bytes are checked
 * when it is loaded, which needs the bytes anyway: a compile-only hit can call an object stored
 * that a load then refuses (a miss, compiled again), never the reverse.  kc_entry_decode_some is
 * the middle way, for a graph entry of such a hit: the sections asked for are inflated and kept,
 * the others only checked (META too: without its bit the entry has no digests, toolchain or
 * creation time); such an entry is marked partial and is never encoded again.
 */
static int decode(kc_entry **out, const void *data, size_t len, int want_type, uint64_t *want_raw, unsigned keep) {
    const uint8_t *h = data;
    if (len < HEADER_SIZE) return CORRUPT("%zu bytes is shorter than the %d-byte header", len, HEADER_SIZE);
    if (memcmp(h, MAGIC, 8) != 0) return CORRUPT("bad magic");
    uint16_t version = kc_rd_u16(h + 8);
    if (version != KC_ENTRY_FORMAT_VERSION)
        return CORRUPT("format version %u is not supported (this build reads %d)", version,
                       KC_ENTRY_FORMAT_VERSION);
    if (kc_rd_u16(h + 10) != HEADER_SIZE) return CORRUPT("header size %u", kc_rd_u16(h + 10));
    uint32_t flags = kc_rd_u32(h + 12);
    if (flags & ~(FLAG_MAC | FLAG_SIG)) return CORRUPT("unknown flags 0x%x", flags);
    if ((flags & FLAG_MAC) && (flags & FLAG_SIG)) return CORRUPT("both a MAC and a signature");
    uint64_t total = kc_rd_u64(h + 64);
    if (total != len) return CORRUPT("header says %llu bytes, %zu present (truncated or padded)",
                                     (unsigned long long)total, len);
    if (total > KC_ENTRY_MAX_BYTES) return CORRUPT("%llu bytes is over the cap", (unsigned long long)total);
    uint32_t nsec = kc_rd_u32(h + 72);
    if (nsec < 1 || nsec > MAX_SECTIONS) return CORRUPT("%u sections", nsec);
    if (kc_rd_u32(h + 76) != 0 || kc_rd_u64(h + 80) != 0) return CORRUPT("reserved header bytes are not zero");
    size_t table_end = HEADER_SIZE + (size_t)nsec * DESC_SIZE;
    if (table_end > len) return CORRUPT("section table runs past the end");
    if (header_sum(h, nsec) != kc_rd_u64(h + SUM_OFFSET)) return CORRUPT("header checksum mismatch");

    /* The header is now trusted to be what was written; the variant must still be valid. */
    char variant[KC_VARIANT_MAX + 2];
    memcpy(variant, h + 32, 32);
    variant[32] = '\0';
    size_t vl = strlen(variant);
    for (size_t i = vl; i < 32; i++)
        if (h[32 + i] != 0) return CORRUPT("variant field is not NUL-padded");
    if (vl > KC_VARIANT_MAX || kc_variant_check(variant) != KC_OK) return CORRUPT("invalid variant");

    size_t trailer = (flags & FLAG_MAC) ? MAC_LEN : (flags & FLAG_SIG) ? SIG_TRAILER : 0;
    if (len < table_end + trailer) return CORRUPT("no room for the %s", (flags & FLAG_MAC) ? "MAC" : "signature");
    size_t end = len - trailer;
    kc_key key;
    memcpy(key.bytes, h + 16, 16);
    kc_entry *e = NULL;
    int rc = out ? kc_entry_new(&e, &key, variant) : KC_OK;
    if (rc) return rc;
    zctx *z = NULL;
    /* Pass one over the table: every declared size bounded ([Note: sizes] in entry.h), before
     * any section is checksummed, allocated or inflated.  expect ≤ end throughout. */
    uint64_t expect = table_end, raw_total = 0;
    unsigned seen_types = 0;
    for (uint32_t i = 0; i < nsec; i++) {
        const uint8_t *d = h + HEADER_SIZE + (size_t)i * DESC_SIZE;
        uint32_t type = kc_rd_u32(d), codec = kc_rd_u32(d + 4);
        uint64_t raw_len = kc_rd_u64(d + 8), stored_len = kc_rd_u64(d + 16), off = kc_rd_u64(d + 24);
        if (!valid_type((int)type)) { rc = CORRUPT("section %u has unknown type %u", i, type); goto fail; }
        if (seen_types & (1u << type)) { rc = CORRUPT("section type %u appears twice", type); goto fail; }
        seen_types |= 1u << type;
        if (raw_len > KC_SECTION_MAX_RAW) { rc = CORRUPT("section %u raw length over the cap", i); goto fail; }
        if (codec == KC_CODEC_NONE ? stored_len != raw_len
            : codec == KC_CODEC_ZSTD ? stored_len > raw_len + 1024 || stored_len == 0
            : 1) {
            rc = CORRUPT("section %u: codec %u with stored length %llu for raw %llu", i, codec,
                         (unsigned long long)stored_len, (unsigned long long)raw_len);
            goto fail;
        }
        if (codec == KC_CODEC_ZSTD && !ratio_ok(raw_len, stored_len)) {
            rc = CORRUPT("section %u declares %llu bytes from %llu stored, past the compression ratio cap of %u "
                         "(a decompression bomb?)", i, (unsigned long long)raw_len, (unsigned long long)stored_len,
                         KC_SECTION_MAX_RATIO);
            goto fail;
        }
        if (off != expect || stored_len > end - off) {
            rc = CORRUPT("section %u is out of place or out of bounds", i);
            goto fail;
        }
        expect = off + stored_len;
        raw_total += raw_len; /* each ≤ 256 MiB, at most 16: no wrap */
    }
    if (raw_total > KC_ENTRY_MAX_RAW) {
        rc = CORRUPT("sections declare %llu bytes, over the cap of %llu", (unsigned long long)raw_total,
                     (unsigned long long)KC_ENTRY_MAX_RAW);
        goto fail;
    }
    if (expect != end) { rc = CORRUPT("%llu bytes after the last section", (unsigned long long)(end - expect)); goto fail; }
    /* Pass two: checksums, then the bytes, each section into the length pass one bounded. */
    int seen_meta = 0;
    for (uint32_t i = 0; i < nsec; i++) {
        const uint8_t *d = h + HEADER_SIZE + (size_t)i * DESC_SIZE;
        uint32_t type = kc_rd_u32(d), codec = kc_rd_u32(d + 4);
        uint64_t raw_len = kc_rd_u64(d + 8), stored_len = kc_rd_u64(d + 16);
        uint64_t off = kc_rd_u64(d + 24), sum = kc_rd_u64(d + 32);
        const uint8_t *src = h + off;
        if (XXH3_64bits(src, (size_t)stored_len) != sum) { rc = CORRUPT("section %u checksum mismatch", i); goto fail; }
        if ((int)type == want_type && want_raw) *want_raw = raw_len;
        int kept = out && (keep & (1u << type));
        if (!kept && type != KC_SECTION_ORIGIN) { /* [Note: checked, not inflated] */
            seen_meta |= type == KC_SECTION_META;
            if (codec != KC_CODEC_NONE) {
                unsigned long long fcs = ZSTD_getFrameContentSize(src, (size_t)stored_len);
                size_t fsz = ZSTD_findFrameCompressedSize(src, (size_t)stored_len);
                if (fcs != raw_len || ZSTD_isError(fsz) || fsz != stored_len) {
                    rc = CORRUPT("section %u does not decompress to its length", i);
                    goto fail;
                }
            }
            continue;
        }
        uint8_t *raw = kc_malloc((size_t)raw_len);
        if (!raw) { rc = kc_err(KC_ENOMEM, "decoding entry: out of memory"); goto fail; }
        if (codec == KC_CODEC_NONE) {
            if (raw_len) memcpy(raw, src, (size_t)raw_len);
        } else {
            if (!z) z = zget();
            if (z && !z->d) z->d = ZSTD_createDCtx();
            if (!z || !z->d) {
                free(raw);
                rc = kc_err(KC_ENOMEM, "decoding entry: out of memory (zstd)");
                goto fail;
            }
            unsigned long long fcs = ZSTD_getFrameContentSize(src, (size_t)stored_len);
            size_t fsz = ZSTD_findFrameCompressedSize(src, (size_t)stored_len);
            size_t got = (fcs == raw_len && !ZSTD_isError(fsz) && fsz == stored_len)
                             ? ZSTD_decompressDCtx(z->d, raw, (size_t)raw_len, src, (size_t)stored_len)
                             : (size_t)-1;
            if (ZSTD_isError(got) || got != raw_len) {
                free(raw);
                rc = CORRUPT("section %u does not decompress to its length", i);
                goto fail;
            }
        }
        if (type == KC_SECTION_META) {
            rc = decode_meta(e, raw, (size_t)raw_len); /* kept: a META not kept was skipped above */
            free(raw);
            if (rc) goto fail;
            seen_meta = 1;
        } else if (type == KC_SECTION_ORIGIN && (rc = origin_scan(raw, (size_t)raw_len, NULL, NULL, NULL)) != KC_OK) {
            free(raw);
            goto fail;
        } else if (!kept) {
            free(raw); /* ORIGIN, checked and not kept */
        } else {
            e->sec[type].data = raw;
            e->sec[type].len = (size_t)raw_len;
            e->sec[type].present = 1;
        }
    }
    if (!seen_meta) { rc = CORRUPT("no META section"); goto fail; }
    if (out) *out = e;
    return KC_OK;
fail:
    kc_entry_free(e);
    return rc;
}

int kc_entry_decode(kc_entry **out, const void *data, size_t len) {
    if (out) *out = NULL; /* on every failure too */
    if (!out || (!data && len)) return kc_err(KC_EINVAL, "kc_entry_decode: NULL argument");
    return decode(out, data, len, -1, NULL, ~0u);
}

int kc_entry_decode_some(kc_entry **out, const void *data, size_t len, const kc_key *key, const char *variant,
                         unsigned sections) {
    if (out) *out = NULL; /* on every failure too */
    if (!out || (!data && len) || !key || !variant) return kc_err(KC_EINVAL, "kc_entry_decode_some: NULL argument");
    kc_entry *e;
    int rc = decode(&e, data, len, -1, NULL, sections);
    if (rc) return rc;
    if (memcmp(e->key.bytes, key->bytes, sizeof key->bytes) != 0 || strcmp(e->variant, variant) != 0) {
        kc_entry_free(e);
        return CORRUPT("it holds another key or variant than its name");
    }
    e->partial = sections != ~0u;
    *out = e;
    return KC_OK;
}

int kc_entry_check_stored(const void *data, size_t len, const kc_key *key, const char *variant, int section,
                          uint64_t *raw_len) {
    if (raw_len) *raw_len = 0;
    if (!data || !key || !variant) return kc_err(KC_EINVAL, "kc_entry_check_stored: NULL argument");
    uint64_t got = UINT64_MAX;
    int rc = decode(NULL, data, len, section, &got, 0);
    if (rc) return rc;
    /* decode() checked the header's variant field; the name's promise is checked here, as in
     * kc_entry_decode_as. */
    const uint8_t *h = data;
    char v[33];
    memcpy(v, h + 32, 32);
    v[32] = '\0';
    if (memcmp(h + 16, key->bytes, sizeof key->bytes) != 0 || strcmp(v, variant) != 0)
        return CORRUPT("it holds another key or variant than its name");
    if (section >= 0 && got == UINT64_MAX) return CORRUPT("it has no section of type %d", section);
    if (raw_len) *raw_len = got;
    return KC_OK;
}

/* ---- authentication ([Note: MAC]) ----
 * The MAC covers every byte before it, header included, so flipping any bit (the flag
 * too) breaks it.  Checking it reads only the fixed header's magic, flags and total_len:
 * nothing an attacker controls is parsed before the MAC has been verified. */

static int hmac(const void *key, size_t key_len, const void *data, size_t len, uint8_t out[MAC_LEN]) {
    unsigned int n = 0;
    if (key_len < KC_MAC_KEY_MIN) return kc_err(KC_EINVAL, "an HMAC key needs at least %d bytes", KC_MAC_KEY_MIN);
    const kc_crypto *c = kc_crypto_get();
    if (!c) return kc_err_prefix(KC_ERROR, "HMAC-SHA256");
    if (!c->hmac(c->sha256_md(), key, (int)key_len, data, len, out, &n) || n != MAC_LEN)
        return kc_err(KC_ERROR, "HMAC-SHA256 failed");
    return KC_OK;
}

int kc_entry_seal(void **data, size_t *len, const void *key, size_t key_len) {
    if (!data || !*data || !len || !key) return kc_err(KC_EINVAL, "kc_entry_seal: NULL argument");
    uint8_t *h = *data;
    if (*len < HEADER_SIZE || memcmp(h, MAGIC, 8) != 0 || kc_rd_u64(h + 64) != *len)
        return kc_err(KC_EINVAL, "kc_entry_seal: not an encoded entry");
    uint32_t nsec = kc_rd_u32(h + 72);
    if (nsec < 1 || nsec > MAX_SECTIONS || HEADER_SIZE + (size_t)nsec * DESC_SIZE > *len)
        return kc_err(KC_EINVAL, "kc_entry_seal: not an encoded entry");
    uint32_t fl = kc_rd_u32(h + 12);
    if (fl & FLAG_SIG) return kc_err(KC_EINVAL, "kc_entry_seal: the entry is signed (a signature or a MAC, not both)");
    size_t body = *len - ((fl & FLAG_MAC) ? MAC_LEN : 0);
    uint8_t *n = realloc(h, body + MAC_LEN);
    if (!n) return kc_err(KC_ENOMEM, "out of memory");
    *data = n;
    kc_wr_u32(n + 12, kc_rd_u32(n + 12) | FLAG_MAC);
    kc_wr_u64(n + 64, body + MAC_LEN);
    kc_wr_u64(n + SUM_OFFSET, header_sum(n, nsec));
    int rc = hmac(key, key_len, n, body, n + body);
    *len = body + MAC_LEN;
    return rc;
}

int kc_entry_mac_check(const void *data, size_t len, const void *key, size_t key_len) {
    if (!data || !key) return kc_err(KC_EINVAL, "kc_entry_mac_check: NULL argument");
    const uint8_t *h = data;
    if (len < HEADER_SIZE + MAC_LEN || memcmp(h, MAGIC, 8) != 0)
        return kc_err(KC_EUNTRUSTED, "not an authenticated entry (%zu bytes, no header)", len);
    if (!(kc_rd_u32(h + 12) & FLAG_MAC)) return kc_err(KC_EUNTRUSTED, "the entry carries no MAC");
    if (kc_rd_u64(h + 64) != len) return kc_err(KC_EUNTRUSTED, "the entry's length does not frame its MAC");
    uint8_t want[MAC_LEN];
    int rc = hmac(key, key_len, h, len - MAC_LEN, want);
    if (rc) return rc;
    if (kc_memcmp_ct(want, h + len - MAC_LEN, MAC_LEN) != 0)
        return kc_err(KC_EUNTRUSTED, "the entry's MAC does not match (altered, or written with another key)");
    return KC_OK;
}

/*
 * [Note: signatures] A producer signs an encoded entry with its Ed25519 key: flag bit 1 set,
 * total_len and the header checksum made final, then key_id[8] and the signature[64] appended,
 * the signature over every byte before it (header, sections, key id).  A consumer holds only
 * public keys (a keyring): kc_entry_sig_check reads the fixed header's magic, flags and length and
 * the trailer, nothing else, before it verifies — as the MAC check does.  An entry carries a MAC
 * or a signature, never both: signing replaces a MAC, sealing refuses a signed entry.
 */
int kc_entry_sign(void **data, size_t *len, const kc_signer *s) {
    if (!data || !*data || !len || !s) return kc_err(KC_EINVAL, "kc_entry_sign: NULL argument");
    uint8_t *h = *data;
    if (*len < HEADER_SIZE || memcmp(h, MAGIC, 8) != 0 || kc_rd_u64(h + 64) != *len)
        return kc_err(KC_EINVAL, "kc_entry_sign: not an encoded entry");
    uint32_t nsec = kc_rd_u32(h + 72), fl = kc_rd_u32(h + 12);
    if (nsec < 1 || nsec > MAX_SECTIONS || HEADER_SIZE + (size_t)nsec * DESC_SIZE > *len)
        return kc_err(KC_EINVAL, "kc_entry_sign: not an encoded entry");
    size_t body = *len - ((fl & FLAG_MAC) ? MAC_LEN : (fl & FLAG_SIG) ? SIG_TRAILER : 0);
    if (body < HEADER_SIZE + (size_t)nsec * DESC_SIZE) return kc_err(KC_EINVAL, "kc_entry_sign: not an encoded entry");
    uint8_t *n = realloc(h, body + SIG_TRAILER);
    if (!n) return kc_err(KC_ENOMEM, "out of memory");
    *data = n;
    kc_wr_u32(n + 12, (fl & ~FLAG_MAC) | FLAG_SIG);
    kc_wr_u64(n + 64, body + SIG_TRAILER);
    kc_wr_u64(n + SUM_OFFSET, header_sum(n, nsec));
    memcpy(n + body, kc_signer_key_id_bytes(s), KC_SIGN_KEY_ID_LEN);
    int rc = kc_sign_bytes(s, n, body + KC_SIGN_KEY_ID_LEN, n + body + KC_SIGN_KEY_ID_LEN);
    *len = body + SIG_TRAILER;
    return rc;
}

int kc_entry_signer(const void *data, size_t len, char key_id_hex[2 * KC_SIGN_KEY_ID_LEN + 1]) {
    if (key_id_hex) key_id_hex[0] = '\0';
    const uint8_t *h = data;
    if (!h || len < HEADER_SIZE + SIG_TRAILER || memcmp(h, MAGIC, 8) != 0 || !(kc_rd_u32(h + 12) & FLAG_SIG) ||
        kc_rd_u64(h + 64) != len)
        return KC_MISS;
    if (key_id_hex)
        for (int i = 0; i < KC_SIGN_KEY_ID_LEN; i++) snprintf(key_id_hex + 2 * i, 3, "%02x", h[len - SIG_TRAILER + i]);
    return KC_OK;
}

int kc_entry_sig_check(const void *data, size_t len, const kc_keyring *kr, char key_id_hex[2 * KC_SIGN_KEY_ID_LEN + 1]) {
    if (key_id_hex) key_id_hex[0] = '\0';
    if (!data || !kr) return kc_err(KC_EINVAL, "kc_entry_sig_check: NULL argument");
    const uint8_t *h = data;
    if (len < HEADER_SIZE + SIG_TRAILER || memcmp(h, MAGIC, 8) != 0)
        return kc_err(KC_EUNTRUSTED, "not a signed entry (%zu bytes, no header)", len);
    if (!(kc_rd_u32(h + 12) & FLAG_SIG)) return kc_err(KC_EUNTRUSTED, "the entry carries no signature");
    if (kc_rd_u64(h + 64) != len) return kc_err(KC_EUNTRUSTED, "the entry's length does not frame its signature");
    const uint8_t *id = h + len - SIG_TRAILER;
    if (key_id_hex)
        for (int i = 0; i < KC_SIGN_KEY_ID_LEN; i++) snprintf(key_id_hex + 2 * i, 3, "%02x", id[i]);
    return kc_keyring_verify(kr, id, h, len - KC_SIGN_LEN, h + len - KC_SIGN_LEN);
}

/* The identity check: a store name promises a key and a variant, and only an entry that keeps
 * the promise is used (one place, for every tier, verify and export). */
int kc_entry_decode_as(kc_entry **out, const void *data, size_t len, const kc_key *key, const char *variant) {
    if (out) *out = NULL;
    if (!out || !key || !variant) return kc_err(KC_EINVAL, "kc_entry_decode_as: NULL argument");
    return kc_entry_decode_some(out, data, len, key, variant, ~0u);
}

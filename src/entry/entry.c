/* SPDX-License-Identifier: Apache-2.0 */
/*
 * entry.c — an entry in memory (grammar in include/kcache/entry.h): its key and variant, its
 * sections, its named digests, its ORIGIN records, the images attached to it; and the thread's
 * zstd contexts the writer and the reader share.
 *
 * The one idea: an entry is built and read through these calls only; its bytes are made by
 * encode.c, read back (trusting nothing) by decode.c, and sealed or signed by seal.c, all
 * after the one layout in layout.h.  ORIGIN's records are checked here, as they are set and
 * as the decoder reads them (kc_entry_origin_scan_).
 *
 * Must not: accept a section, a digest or an ORIGIN record the grammar forbids (the decoder
 * would refuse what this wrote), or interpret the opaque sections (that is the graph part's job).
 *
 * Callers: the store's tiers, the front door, bundles, the graph part (sections of a compiled
 * graph), and tools through entry.h.
 */
#include "kcache/entry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "entry_internal.h"
#include "layout.h"
#include "kcache/target.h" /* kc_variant_check */

const uint8_t kc_entry_magic_[8] = {0x89, 'K', 'C', 'E', '\r', '\n', 0x1a, '\n'};

/* ---- per-thread zstd contexts (freed at thread exit) ---- */
static pthread_key_t zkey;
static pthread_once_t zonce = PTHREAD_ONCE_INIT;
static void zfree(void *p) {
    zctx *z = p;
    ZSTD_freeCCtx(z->c);
    ZSTD_freeDCtx(z->d);
    free(z);
}
static void zinit(void) { pthread_key_create(&zkey, zfree); }
zctx *kc_entry_zctx_(void) {
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
    if (!e || !img || !bytes || !len || index >= KC_IMAGES_MAX)
        return kc_err(KC_EINVAL, "kc_entry_attach_image: bad argument");
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

/* ---- ORIGIN: name/value records (entry.h's grammar) ---- */

static int origin_name_ok(const uint8_t *s, size_t n) {
    if (n < 1 || n > KC_ORIGIN_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++)
        if (!kc_name_char(s[i])) return 0;
    return 1;
}

/* Walk an ORIGIN payload: KC_OK when it is well formed; with `name`, that record's value and its length
 * (KC_MISS when absent). */
int kc_entry_origin_scan_(const uint8_t *p, size_t n, const char *name, const uint8_t **value, uint32_t *vlen) {
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
        if (r.bad || !nm || !v || !origin_name_ok(nm, nl) || memchr(v, 0, vl))
            return CORRUPT("ORIGIN record %u is malformed", i);
        for (uint32_t j = 0; j < i; j++)
            if (lens[j] == nl && memcmp(names[j], nm, nl) == 0)
                return CORRUPT("ORIGIN names '%.*s' twice", (int)nl, (const char *)nm);
        names[i] = nm, lens[i] = nl;
        if (name && strlen(name) == nl && memcmp(name, nm, nl) == 0) *value = v, *vlen = vl, found = 1;
    }
    if (r.left) return CORRUPT("ORIGIN has %zu trailing bytes", r.left);
    return !name || found ? KC_OK : KC_MISS;
}

int kc_entry_set_origin(kc_entry *e, const char *name, const char *value) {
    if (!e || !name || !value) return kc_err(KC_EINVAL, "kc_entry_set_origin: NULL argument");
    size_t nl = strlen(name), vl = strlen(value);
    if (!origin_name_ok((const uint8_t *)name, nl))
        return kc_err(KC_EINVAL, "origin name '%s': 1..%d of [a-z0-9_]", name, KC_ORIGIN_NAME_MAX);
    if (vl > KC_ORIGIN_VALUE_MAX)
        return kc_err(KC_EINVAL, "origin value of %zu bytes (at most %d)", vl, KC_ORIGIN_VALUE_MAX);
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
    kc_buf_put_u32(&b, (uint32_t)nl), kc_buf_put(&b, name, nl), kc_buf_put_u32(&b, (uint32_t)vl),
        kc_buf_put(&b, value, vl);
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
    /* An entry's ORIGIN was checked record by record where it was made (kc_entry_set_origin) or read
     * (decode.c), and nothing else sets it: finding a record only walks them, bounds still checked. */
    kc_reader r = kc_reader_make(s->data, s->len);
    uint32_t count = kc_rd_next_u32(&r), vl = 0;
    size_t want = strlen(name);
    const uint8_t *v = NULL;
    for (uint32_t i = 0; i < count && !r.bad && !v; i++) {
        uint32_t nl = kc_rd_next_u32(&r);
        const uint8_t *nm = kc_rd_bytes(&r, nl);
        uint32_t l = kc_rd_next_u32(&r);
        const uint8_t *val = kc_rd_bytes(&r, l);
        if (!r.bad && nl == want && memcmp(nm, name, nl) == 0) v = val, vl = l;
    }
    if (r.bad) return CORRUPT("ORIGIN is malformed");
    if (!v) return KC_MISS;
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
    if (!e || !data || !len || !valid_type((int)type)) return kc_err(KC_EINVAL, "kc_entry_section: bad argument");
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

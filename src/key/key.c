/* SPDX-License-Identifier: Apache-2.0 */
/*
 * key.c — canonical cache keys: XXH3-128 per named component, then over all of them.
 *
 * The one idea: every value enters a hash through an explicit, tagged, length-prefixed
 * little-endian encoding (never memory as laid out by the compiler), so that a key is a
 * function of the inputs alone — the same on every host, in every process, forever, as
 * the golden tests in tests/golden/keys.txt pin down.
 *
 *   item      := tag:u8 label_len:u32 label value
 *   bytes     := tag 1, len:u64, bytes            (kc_key_add_bytes / _string)
 *   u64       := tag 2, u64                       (kc_key_add_u64)
 *   key       := XXH3-128 over { index:u32 name_len:u32 name digest[16] } for every
 *                component in kc_component order (empty components included)
 *
 * [Note: stable symbol ids] A symbolic size is entered as the id of its source name:
 * low 32 bits of XXH3-64(name); if that id is held by another name, the next id, and so
 * on (linear probing).  An allocation counter would renumber every later symbol when one
 * more dimension becomes dynamic and turn every later key into a miss.
 *
 * Must not: touch files, know about entries or CUDA.
 *
 * Callers: the graph part (graph_key.c), the guard part, and the public key.h API.
 */
#include "kcache/key.h"

#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

#include "../common/internal.h"

#define KEY_SCHEME_VERSION 1
#define TAG_BYTES 1
#define TAG_U64 2

typedef struct named_digest {
    char *name;
    kc_digest d;
} named_digest;

typedef struct symbol {
    char *name;
    uint32_t id;
} symbol;

struct kc_key_builder {
    XXH3_state_t *state[KC_COMP_COUNT];
    symbol *syms;
    size_t nsyms, capsyms;
    named_digest *fine; /* finer digests, in the order recorded */
    size_t nfine, capfine;
    uint32_t ninputs;
    int finished;
    int lean; /* finer digests not kept (kc_key_builder_lean_): nobody will read them */
    kc_digest comp[KC_COMP_COUNT];
    kc_key key;
};

static const char *const comp_names[KC_COMP_COUNT] = {
    "format", "graph", "inputs", "options", "toolchain", "backend", "globals", "hooks", "extra",
};

const char *kc_component_name(kc_component comp) { return (unsigned)comp < KC_COMP_COUNT ? comp_names[comp] : NULL; }

static void digest_from_hash(XXH128_hash_t h, kc_digest *out) {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out->bytes, c.digest, 16);
}

void kc_key_builder_free(kc_key_builder *kb) {
    if (!kb) return;
    for (int i = 0; i < KC_COMP_COUNT; i++) XXH3_freeState(kb->state[i]);
    for (size_t i = 0; i < kb->nsyms; i++) free(kb->syms[i].name);
    for (size_t i = 0; i < kb->nfine; i++) free(kb->fine[i].name);
    free(kb->syms);
    free(kb->fine);
    free(kb);
}

int kc_key_builder_new(kc_key_builder **out) {
    if (!out) return kc_err(KC_EINVAL, "kc_key_builder_new: out is NULL");
    *out = NULL;
    kc_key_builder *kb = kc_calloc(1, sizeof *kb);
    if (!kb) return kc_err(KC_ENOMEM, "kc_key_builder_new: out of memory");
    for (int i = 0; i < KC_COMP_COUNT; i++) {
        kb->state[i] = XXH3_createState();
        if (!kb->state[i] || XXH3_128bits_reset(kb->state[i]) != XXH_OK) {
            kc_key_builder_free(kb);
            return kc_err(KC_ENOMEM, "kc_key_builder_new: out of memory");
        }
    }
    int rc = kc_key_add_u64(kb, KC_COMP_FORMAT, "key_scheme", KEY_SCHEME_VERSION);
    if (rc != KC_OK) {
        kc_key_builder_free(kb);
        return rc;
    }
    *out = kb;
    return KC_OK;
}

static int check_open(kc_key_builder *kb, kc_component comp, const char *label) {
    if (!kb) return kc_err(KC_EINVAL, "key builder is NULL");
    if ((unsigned)comp >= KC_COMP_COUNT) return kc_err(KC_EINVAL, "unknown key component %d", (int)comp);
    if (!label) return kc_err(KC_EINVAL, "key item label is NULL");
    if (kb->finished) return kc_err(KC_EINVAL, "key builder already finished");
    return KC_OK;
}

static void put_item_header(XXH3_state_t *s, uint8_t tag, const char *label) {
    uint8_t h[5];
    size_t n = strlen(label);
    h[0] = tag;
    kc_wr_u32(h + 1, (uint32_t)n);
    XXH3_128bits_update(s, h, 5);
    XXH3_128bits_update(s, label, n);
}

int kc_key_add_bytes(kc_key_builder *kb, kc_component comp, const char *label, const void *data, size_t len) {
    int rc = check_open(kb, comp, label);
    if (rc) return rc;
    if (!data && len) return kc_err(KC_EINVAL, "key item '%s': data is NULL", label);
    XXH3_state_t *s = kb->state[comp];
    put_item_header(s, TAG_BYTES, label);
    uint8_t l[8];
    kc_wr_u64(l, (uint64_t)len);
    XXH3_128bits_update(s, l, 8);
    if (len) XXH3_128bits_update(s, data, len);
    return KC_OK;
}

int kc_key_add_string(kc_key_builder *kb, kc_component comp, const char *label, const char *str) {
    if (!str) return kc_err(KC_EINVAL, "key item '%s': string is NULL", label ? label : "?");
    return kc_key_add_bytes(kb, comp, label, str, strlen(str));
}

int kc_key_add_u64(kc_key_builder *kb, kc_component comp, const char *label, uint64_t value) {
    int rc = check_open(kb, comp, label);
    if (rc) return rc;
    put_item_header(kb->state[comp], TAG_U64, label);
    uint8_t v[8];
    kc_wr_u64(v, value);
    XXH3_128bits_update(kb->state[comp], v, 8);
    return KC_OK;
}

void kc_key_builder_lean_(kc_key_builder *kb) {
    if (kb) kb->lean = 1;
}

static int add_fine(kc_key_builder *kb, const char *name, const void *data, size_t len) {
    if (kb->lean) return KC_OK; /* the key is the same: finer digests are beside it, never in it */
    if (kb->nfine == kb->capfine) {
        size_t cap = kb->capfine ? kb->capfine * 2 : 16;
        named_digest *p = kc_realloc(kb->fine, cap * sizeof *p);
        if (!p) return kc_err(KC_ENOMEM, "key: out of memory");
        kb->fine = p;
        kb->capfine = cap;
    }
    char *n = kc_strdup(name);
    if (!n) return kc_err(KC_ENOMEM, "key: out of memory");
    kb->fine[kb->nfine].name = n;
    digest_from_hash(XXH3_128bits(data, len), &kb->fine[kb->nfine].d);
    kb->nfine++;
    return KC_OK;
}

int kc_key_note(kc_key_builder *kb, const char *name, const void *data, size_t len) {
    int rc = check_open(kb, KC_COMP_EXTRA, name);
    if (rc) return rc;
    if (!data && len) return kc_err(KC_EINVAL, "kc_key_note '%s': data is NULL", name);
    return add_fine(kb, name, data, len);
}

int kc_key_symbol_id(kc_key_builder *kb, const char *source_name, uint32_t *out) {
    if (!kb || !source_name || !out) return kc_err(KC_EINVAL, "kc_key_symbol_id: NULL argument");
    if (!*source_name) return kc_err(KC_EINVAL, "kc_key_symbol_id: empty symbol name");
    for (size_t i = 0; i < kb->nsyms; i++)
        if (strcmp(kb->syms[i].name, source_name) == 0) return *out = kb->syms[i].id, KC_OK;
    uint32_t id = (uint32_t)XXH3_64bits(source_name, strlen(source_name));
    for (;;) { /* linear probing: terminates, at most nsyms ids are taken */
        size_t i;
        for (i = 0; i < kb->nsyms; i++)
            if (kb->syms[i].id == id) break;
        if (i == kb->nsyms) break;
        id++;
    }
    if (kb->nsyms == kb->capsyms) {
        size_t cap = kb->capsyms ? kb->capsyms * 2 : 8;
        symbol *p = kc_realloc(kb->syms, cap * sizeof *p);
        if (!p) return kc_err(KC_ENOMEM, "key: out of memory");
        kb->syms = p;
        kb->capsyms = cap;
    }
    char *n = kc_strdup(source_name);
    if (!n) return kc_err(KC_ENOMEM, "key: out of memory");
    kb->syms[kb->nsyms].name = n;
    kb->syms[kb->nsyms].id = id;
    kb->nsyms++;
    *out = id;
    return KC_OK;
}

/* dims := { kind:u8 (0 static, 1 symbolic) , value:u64 | symbol id:u32 } */
static int encode_dims(kc_key_builder *kb, const kc_dim *dims, int rank, const char *what, uint32_t index,
                       int allow_negative, uint8_t *buf, size_t *len) {
    size_t n = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d].sym) {
            uint32_t id;
            int rc = kc_key_symbol_id(kb, dims[d].sym, &id);
            if (rc) return rc;
            buf[n++] = 1;
            kc_wr_u32(buf + n, id);
            n += 4;
        } else {
            if (dims[d].value < 0 && !allow_negative)
                return kc_err(KC_EINVAL, "input %u %s[%d] is negative (%lld)", index, what, d,
                              (long long)dims[d].value);
            buf[n++] = 0;
            kc_wr_u64(buf + n, (uint64_t)dims[d].value);
            n += 8;
        }
    }
    *len = n;
    return KC_OK;
}

int kc_key_add_tensor(kc_key_builder *kb, const kc_tensor_meta *t) {
    int rc = check_open(kb, KC_COMP_INPUTS, "");
    if (rc) return rc;
    if (!t) return kc_err(KC_EINVAL, "kc_key_add_tensor: tensor is NULL");
    uint32_t i = kb->ninputs;
    if (t->rank < 0 || t->rank > KC_MAX_RANK)
        return kc_err(KC_EINVAL, "input %u: rank %d is out of range 0..%d", i, t->rank, KC_MAX_RANK);
    if (t->dtype < KC_DTYPE_F32 || t->dtype > KC_DTYPE_F8E5M2)
        return kc_err(KC_EINVAL, "input %u: unknown dtype %d", i, (int)t->dtype);
    if (t->device != KC_DEVICE_CPU && t->device != KC_DEVICE_CUDA)
        return kc_err(KC_EINVAL, "input %u: unknown device type %d", i, (int)t->device);
    if (t->requires_grad != 0 && t->requires_grad != 1)
        return kc_err(KC_EINVAL, "input %u: requires_grad must be 0 or 1", i);

    uint8_t sizes[KC_MAX_RANK * 9], strides[KC_MAX_RANK * 9], small[4];
    size_t nsizes, nstrides;
    if ((rc = encode_dims(kb, t->sizes, t->rank, "size", i, 0, sizes, &nsizes))) return rc;
    if ((rc = encode_dims(kb, t->strides, t->rank, "stride", i, 1, strides, &nstrides))) return rc;

    char label[64];
    struct {
        const char *field;
        const void *data;
        size_t len;
        uint32_t v;
    } fields[] = {
        {"dtype", NULL, 4, (uint32_t)t->dtype}, {"device", NULL, 4, (uint32_t)t->device},
        {"rank", NULL, 4, (uint32_t)t->rank},   {"sizes", sizes, nsizes, 0},
        {"strides", strides, nstrides, 0},      {"requires_grad", NULL, 4, (uint32_t)t->requires_grad},
    };
    for (size_t f = 0; f < KC_ARRAY_LEN(fields); f++) {
        const void *data = fields[f].data;
        if (!data) {
            kc_wr_u32(small, fields[f].v);
            data = small;
        }
        kc_cat_index(label, sizeof label, "inputs", "", (long long)i, ""),
            kc_cat_index(label + strlen(label), sizeof label - strlen(label), ".", fields[f].field, -1, "");
        if ((rc = kc_key_add_bytes(kb, KC_COMP_INPUTS, label, data, fields[f].len))) return rc;
        if ((rc = add_fine(kb, label, data, fields[f].len))) return rc;
    }
    kb->ninputs++;
    return KC_OK;
}

int kc_key_finish(kc_key_builder *kb, kc_key *out) {
    if (!kb || !out) return kc_err(KC_EINVAL, "kc_key_finish: NULL argument");
    if (!kb->finished) {
        XXH3_state_t *all = XXH3_createState();
        if (!all || XXH3_128bits_reset(all) != XXH_OK) {
            XXH3_freeState(all);
            return kc_err(KC_ENOMEM, "kc_key_finish: out of memory");
        }
        for (int c = 0; c < KC_COMP_COUNT; c++) {
            digest_from_hash(XXH3_128bits_digest(kb->state[c]), &kb->comp[c]);
            uint8_t h[8];
            size_t n = strlen(comp_names[c]);
            kc_wr_u32(h, (uint32_t)c);
            kc_wr_u32(h + 4, (uint32_t)n);
            XXH3_128bits_update(all, h, 8);
            XXH3_128bits_update(all, comp_names[c], n);
            XXH3_128bits_update(all, kb->comp[c].bytes, 16);
        }
        kc_digest k;
        digest_from_hash(XXH3_128bits_digest(all), &k);
        XXH3_freeState(all);
        memcpy(kb->key.bytes, k.bytes, 16);
        kb->finished = 1;
    }
    *out = kb->key;
    return KC_OK;
}

int kc_key_component_digest(const kc_key_builder *kb, kc_component comp, kc_digest *out) {
    if (!kb || !out || (unsigned)comp >= KC_COMP_COUNT)
        return kc_err(KC_EINVAL, "kc_key_component_digest: bad argument");
    if (!kb->finished) return kc_err(KC_EINVAL, "kc_key_component_digest: key not finished");
    *out = kb->comp[comp];
    return KC_OK;
}

size_t kc_key_digest_count(const kc_key_builder *kb) { return kb && kb->finished ? KC_COMP_COUNT + kb->nfine : 0; }

int kc_key_digest_at(const kc_key_builder *kb, size_t i, const char **name_out, kc_digest *out) {
    if (!kb || !name_out || !out || !kb->finished || i >= kc_key_digest_count(kb))
        return kc_err(KC_EINVAL, "kc_key_digest_at: bad argument or key not finished");
    if (i < KC_COMP_COUNT) {
        *name_out = comp_names[i];
        *out = kb->comp[i];
    } else {
        *name_out = kb->fine[i - KC_COMP_COUNT].name;
        *out = kb->fine[i - KC_COMP_COUNT].d;
    }
    return KC_OK;
}

void kc_key_to_hex(const kc_key *key, char out[KC_KEY_HEX_LEN + 1]) { kc_hex(key->bytes, 16, out); }
void kc_digest_to_hex(const kc_digest *d, char out[KC_KEY_HEX_LEN + 1]) { kc_hex(d->bytes, 16, out); }

int kc_key_from_hex(kc_key *out, const char *hex) {
    if (!out || !hex || strlen(hex) != KC_KEY_HEX_LEN || kc_unhex(hex, 16, out->bytes) != KC_OK)
        return kc_err(KC_EINVAL, "not a key (32 hex digits): '%s'", hex ? hex : "(null)");
    return KC_OK;
}

int kc_key_debug(const kc_key_builder *kb, char **out) {
    if (out) *out = NULL; /* on every failure too */
    if (!kb || !out || !kb->finished) return kc_err(KC_EINVAL, "kc_key_debug: key not finished");
    kc_buf b = {0};
    char hex[KC_KEY_HEX_LEN + 1];
    for (int c = 0; c < KC_COMP_COUNT; c++) {
        kc_digest_to_hex(&kb->comp[c], hex);
        kc_buf_printf(&b, "%-9s %s\n", comp_names[c], hex);
    }
    kc_key_to_hex(&kb->key, hex);
    kc_buf_printf(&b, "%-9s %s\n", "key", hex);
    *out = kc_buf_take_str(&b);
    return *out ? KC_OK : kc_err(KC_ENOMEM, "kc_key_debug: out of memory");
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wrapper.c — the registry of post-compile wrappers and the rebuilding of a recorded chain.
 *
 * The one idea: an entry records only names, versions and parameters; the code lives in
 * the process (registered by the caller), so loading an entry runs no code from the cache.
 * A recorded wrapper that is not registered is a clear KC_EUNREGISTERED, never a guess.
 *
 * WRAPPERS section := count:u32 { name:str version:u32 len:u32 params[len] }
 *   str := len:u32 bytes[len] (1..255 bytes, no NUL); count <= 64.  The items' bytes
 *   without the count are also hashed into the graph key (graph_key.c).
 *
 * Callers: lookup.c writes the section (kc_wrappers_encode), loaded.c rebuilds the chain;
 * callers of the public API register wrappers.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "graph_internal.h"

#define MAX_WRAPPERS 64

void kc_wrappers_encode_items(const kc_graph_desc *d, kc_buf *b) {
    for (size_t i = 0; i < d->nwrappers; i++) {
        kc_buf_put_str(b, d->wrappers[i].name);
        kc_buf_put_u32(b, d->wrappers[i].version);
        kc_buf_put_u32(b, (uint32_t)d->wrappers[i].len);
        kc_buf_put(b, d->wrappers[i].params, d->wrappers[i].len);
    }
}

void kc_wrappers_encode(const kc_graph_desc *d, kc_buf *b) {
    kc_buf_put_u32(b, (uint32_t)d->nwrappers);
    kc_wrappers_encode_items(d, b);
}

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static kc_wrapper registry[MAX_WRAPPERS];
static size_t nregistry;

int kc_wrapper_register(const kc_wrapper *w) {
    if (!w || !w->name || !*w->name || !w->wrap)
        return kc_err(KC_EINVAL, "kc_wrapper_register: name and wrap are required");
    char *name = kc_strdup(w->name);
    if (!name) return kc_err(KC_ENOMEM, "out of memory");
    pthread_mutex_lock(&reg_mu);
    size_t i;
    for (i = 0; i < nregistry; i++)
        if (strcmp(registry[i].name, w->name) == 0 && registry[i].version == w->version) break;
    int rc = KC_OK;
    if (i == nregistry && nregistry == MAX_WRAPPERS) {
        rc = kc_err(KC_EINVAL, "too many wrappers registered (max %d)", MAX_WRAPPERS);
        free(name);
    } else {
        if (i < nregistry) free((char *)registry[i].name);
        else nregistry++;
        registry[i] = *w;
        registry[i].name = name;
    }
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

int kc_wrapper_unregister(const char *name, uint32_t version) {
    if (!name) return kc_err(KC_EINVAL, "kc_wrapper_unregister: name is NULL");
    int rc = KC_MISS;
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < nregistry; i++)
        if (strcmp(registry[i].name, name) == 0 && registry[i].version == version) {
            free((char *)registry[i].name);
            registry[i] = registry[--nregistry];
            rc = KC_OK;
            break;
        }
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

/* ---- built in: philox ---- */

typedef struct philox_layer {
    kc_callable inner;
    uint64_t increment;
} philox_layer;

static int philox_call(void *ctx, kc_forward_call *c) {
    philox_layer *l = ctx;
    if (!c->rng)
        return kc_err(KC_EINVAL, "this graph was recorded with the philox wrapper: pass an RNG state "
                                 "(kc_graph_forward_rng)");
    c->philox_seed = c->rng->seed;
    c->philox_offset = c->rng->offset;
    c->philox_set = 1;
    c->rng->offset += l->increment;
    return l->inner.call(l->inner.ctx, c);
}

static int philox_wrap(const kc_callable *inner, const void *params, size_t len, kc_callable *out) {
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return kc_err(KC_ECORRUPT, "philox: parameters must be the increment in decimal");
    memcpy(buf, params, len);
    buf[len] = '\0';
    char *end;
    unsigned long long inc = strtoull(buf, &end, 10);
    if (*end || buf[0] < '0' || buf[0] > '9') return kc_err(KC_ECORRUPT, "philox: bad increment '%s'", buf);
    philox_layer *l = kc_malloc(sizeof *l);
    if (!l) return kc_err(KC_ENOMEM, "out of memory");
    l->inner = *inner;
    l->increment = inc;
    out->call = philox_call;
    out->ctx = l;
    return KC_OK;
}

static void philox_unwrap(kc_callable *c) { free(c->ctx); }

static pthread_once_t builtins_once = PTHREAD_ONCE_INIT;
static void register_builtins(void) {
    kc_wrapper philox = {"philox", 1, philox_wrap, philox_unwrap};
    kc_wrapper_register(&philox);
    kc_wrapper cuda_graph = {"cuda_graph", 1, kc_cudagraph_wrap, kc_cudagraph_unwrap};
    kc_wrapper_register(&cuda_graph);
}

struct kc_wrapper_chain {
    size_t n;
    kc_callable layers[MAX_WRAPPERS + 1]; /* [0] is the base */
    void (*unwrap[MAX_WRAPPERS + 1])(kc_callable *);
};

void kc_wrapper_chain_free(kc_wrapper_chain *ch) {
    if (!ch) return;
    for (size_t i = ch->n; i >= 1; i--)
        if (ch->unwrap[i]) ch->unwrap[i](&ch->layers[i]);
    free(ch);
}

int kc_wrapper_chain_build(kc_wrapper_chain **out, const kc_entry *e, const kc_callable *base) {
    if (out) *out = NULL;
    if (!out || !e || !base) return kc_err(KC_EINVAL, "kc_wrapper_chain_build: NULL argument");
    const void *data = NULL;
    size_t len = 0;
    int rc = kc_entry_section(e, KC_SECTION_WRAPPERS, &data, &len);
    if (rc == KC_MISS) len = 0;
    else if (rc) return rc;
    pthread_once(&builtins_once, register_builtins);
    kc_wrapper_chain *ch = kc_calloc(1, sizeof *ch);
    if (!ch) return kc_err(KC_ENOMEM, "out of memory");
    ch->layers[0] = *base;
    kc_reader r = kc_reader_make(data, len);
    uint32_t n = len ? kc_rd_next_u32(&r) : 0;
    if (r.bad || n > MAX_WRAPPERS) {
        kc_wrapper_chain_free(ch);
        return kc_err(KC_ECORRUPT, "corrupt entry: WRAPPERS");
    }
    for (uint32_t i = 0; i < n; i++) {
        uint32_t nl = kc_rd_next_u32(&r);
        const uint8_t *name = kc_rd_bytes(&r, nl);
        uint32_t version = kc_rd_next_u32(&r);
        uint32_t pl = kc_rd_next_u32(&r);
        const uint8_t *params = kc_rd_bytes(&r, pl);
        if (r.bad || nl == 0 || nl > 255 || memchr(name, 0, nl)) {
            kc_wrapper_chain_free(ch);
            return kc_err(KC_ECORRUPT, "corrupt entry: WRAPPERS item %u", i);
        }
        char nm[256];
        memcpy(nm, name, nl);
        nm[nl] = '\0';
        kc_wrapper w;
        int found = 0;
        pthread_mutex_lock(&reg_mu);
        for (size_t k = 0; k < nregistry; k++)
            if (strcmp(registry[k].name, nm) == 0 && registry[k].version == version) w = registry[k], found = 1;
        pthread_mutex_unlock(&reg_mu);
        if (!found) {
            kc_wrapper_chain_free(ch);
            return kc_err(KC_EUNREGISTERED,
                          "the entry's post-compile wrapper '%s' version %u is not registered "
                          "(kc_wrapper_register it before loading)",
                          nm, version);
        }
        rc = w.wrap(&ch->layers[ch->n], params, pl, &ch->layers[ch->n + 1]);
        if (rc) {
            kc_wrapper_chain_free(ch);
            return kc_err_prefix(rc, "wrapper '%s'", nm);
        }
        ch->unwrap[++ch->n] = w.unwrap;
    }
    if (r.left) {
        kc_wrapper_chain_free(ch);
        return kc_err(KC_ECORRUPT, "corrupt entry: trailing bytes in WRAPPERS");
    }
    *out = ch;
    return KC_OK;
}

int kc_wrapper_chain_call(kc_wrapper_chain *ch, kc_forward_call *c) {
    if (!ch || !c) return kc_err(KC_EINVAL, "kc_wrapper_chain_call: NULL argument");
    kc_callable *top = &ch->layers[ch->n];
    return top->call(top->ctx, c);
}

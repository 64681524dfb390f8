/* SPDX-License-Identifier: Apache-2.0 */
/*
 * build.c — a missed graph made: its compile units obtained (found stored or compiled), its
 * launch ABI checked, its graph entry written and stored over stored images.
 *
 * The one idea: a lookup that missed hands this file a key and a target parsed once at the
 * lookup's boundary (kc_target), and gets back an entry whose images are attached for a load,
 * stored in the order a reader can trust — images and unit records first, the graph entry last,
 * and never over an image that is not stored.  Which tier was asked, the lock, the outcome's
 * counters are lookup.c's; the units' locks and records are unitobtain.c's and unitstore.c's.
 *
 * Callers: lookup.c only (kc_graph_build_, kc_graph_uncacheable_).  Must not: store a graph whose
 * source is not cacheable (__DATE__ …), count a lookup's outcome (a compile, a bypass and the
 * compile errors are this file's: what was built), or store a graph entry whose images are not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../cache/internal.h"
#include "../cache/record.h"
#include "../common/internal.h"
#include "../compile/targets.h"
#include "../compile/toolkit.h"
#include "../entry/trust.h"
#include "graph_internal.h"
#include "kcache/sign.h"
#include "kcache/target.h"
#include "program.h"

/*
 * Why the description cannot be stored (__DATE__ in a source, an unhashed hook), or NULL.  The
 * scan of every kernel's text costs more than the rest of a warm lookup together (tens of µs per
 * kernel), so a description found cacheable remembers it (cacheable_memo, cleared when a kernel
 * or hook is added); an uncacheable one is scanned again, which costs nothing next to its compile.
 */
const char *kc_graph_uncacheable_(const kc_graph_desc *d) {
    if (__atomic_load_n(&d->cacheable_memo, __ATOMIC_ACQUIRE) == 1) return NULL;
    if (d->hook_unhashed) return "a saved-tensor hook has no cache hash";
    for (size_t i = 0; i < d->nkernels; i++) {
        kc_kernel_src k = kc_graph_kernel_src(&d->kernels[i]);
        const char *why;
        if (!kc_kernel_cacheable(&k, &why)) return why;
    }
    __atomic_store_n(&((kc_graph_desc *)d)->cacheable_memo, 1,
                     __ATOMIC_RELEASE); /* the memo is not the description's meaning */
    return NULL;
}

/* One build: the description, its units for the target, and what obtaining them left. */
typedef struct build {
    const kc_graph_desc *d;
    const char *bypass; /* why it is not cacheable, or NULL */
    kc_kernel_src *ks;  /* the description's kernels, as compile units take them */
    char *label;        /* "graph '<name>'", for messages */
    kc_units u;
    kc_unit_set set; /* the units for the target (its name formed once, in set.variant) */
    kc_unit_results r;
    kc_toolchain_choice tc;
    char headers[33], meta[256];
    char *reads; /* the toolkit files the compiles read ([Note: toolkit reads travel]) */
} build;

static void build_free(build *b) {
    free(b->ks);
    free(b->label);
    kc_units_free(b->r.res, b->u.n);
    free(b->r.refs);
    free(b->reads);
}

/* The toolchain string of what this host compiles: the toolchain, and the toolkit headers'
 * digest when a kernel reads them — what a host without the toolkit keys such a graph by (cache/record.h). */
int kc_unit_toolchain_meta_(const char *headers, char meta[256]) {
    kc_toolchain tc;
    int rc = kc_toolchain_local(&tc);
    if (!rc) rc = kc_toolchain_meta(&tc, meta, 256 - 48);
    if (!rc && headers[0]) snprintf(meta + strlen(meta), 256 - strlen(meta), " headers %s", headers);
    return rc;
}

/* The description's kernels grouped into units, and the arrays their results go to. */
static int build_alloc(build *b) {
    const kc_graph_desc *d = b->d;
    b->ks = kc_calloc(d->nkernels ? d->nkernels : 1, sizeof *b->ks);
    b->label = kc_malloc(strlen(d->name) + 16); /* the whole name, as before the split */
    b->u.n = 0;
    if (b->ks && b->label) {
        for (size_t i = 0; i < d->nkernels; i++) b->ks[i] = kc_graph_kernel_src(&d->kernels[i]);
        kc_units_group(b->ks, d->nkernels, &b->u);
        b->r.res = kc_calloc(b->u.n ? b->u.n : 1, sizeof *b->r.res);
        b->r.refs = kc_calloc(b->u.n ? b->u.n : 1, sizeof *b->r.refs);
    }
    if (!b->ks || !b->label || !b->r.res || !b->r.refs) return kc_err(KC_ENOMEM, "graph '%s': out of memory", d->name);
    snprintf(b->label, strlen(d->name) + 16, "graph '%s'", d->name);
    return KC_OK;
}

/* Every unit, found or compiled (kc_units_obtain_), by the toolchain the key names only: a host
 * without NVRTC, or whose NVRTC is not a pinned or recorded toolchain, says so (KC_ENONVRTC). */
static int build_units(kc_cache *c, build *b, const kc_target *target, int reuse, kc_graph_info *info) {
    const kc_graph_desc *d = b->d;
    char variant[16];
    kc_target_name(target, variant);
    int rc = kc_device_check_desc(d, target); /* launches no known device of the target could run */
    if (!rc && d->nkernels > KC_UNITS_MAX)
        rc = kc_err(KC_EINVAL, "%s: %zu kernels; at most %d compile together", b->label, d->nkernels, KC_UNITS_MAX);
    if (!rc) rc = kc_cache_toolchain(c, &b->tc);
    if (!rc) rc = kc_cache_toolchain_can_compile_(&b->tc);
    if (!rc) rc = kc_target_compilable_(target);
    if (!rc) rc = kc_graph_toolkit_id_(c, d, b->headers); /* memoised: the key computed it */
    if (!rc) rc = kc_unit_toolchain_meta_(b->headers, b->meta);
    struct kc_toolkit_watch *watch = NULL; /* what the compiles read, for the direct manifest */
    if (!rc) kc_graph_watch_begin_(c, d, &watch);
    kc_unit_set_init_(&b->set, b->ks, d->nkernels, &b->u, target, b->tc.id, b->headers);
    if (!rc) rc = kc_units_obtain_(c, &b->set, b->bypass == NULL, reuse, b->label, b->meta, &b->r);
    info->compile_ms = b->r.ms;
    /* Only when every unit was compiled under the watch are the graph's reads known whole. */
    int whole = rc == KC_OK && !b->bypass && b->u.n > 0 && (size_t)b->r.ncompiled == b->u.n;
    kc_graph_watch_end_(c, d, b->tc.id, variant, watch, whole, &b->reads);
    info->units = (int)b->u.n;
    info->units_compiled = b->r.ncompiled;
    return rc;
}

/* A build whose units failed: counted, and under must-hit said with the lookup's key and reason. */
static int build_failed(kc_cache *c, const build *b, const kc_key *key, int rc, const kc_graph_info *info) {
    if (rc == KC_ECOMPILE) kc_cache_count(c, key, KC_STAT_COMPILE_ERRORS, 1);
    if (rc != KC_ENOTCACHED) return rc;
    /* must-hit: the lookup's miss is counted by its caller; this says why it failed */
    kc_cache_count(c, key, KC_STAT_COMPILES_REFUSED, 1);
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(key, hex);
    rc = kc_err_prefix(rc, "graph '%s' (key %s, variant %s) missed (%s)", b->d->name, hex, b->set.variant,
                       info->miss_reason[0] ? info->miss_reason : "not stored");
    kc_log(KC_LOG_GRAPH, "%s", kc_error_last()->message);
    return rc;
}

/* The sections of a graph entry, encoded into one buffer each. */
typedef struct sections {
    kc_buf k, fw, bw, wr, pa;
} sections;

/* Build the graph entry of a compiled graph: its own sections and its images' references
 * (IMAGES), with the images attached in memory for a load that follows. */
static int make_entry(const build *b, const kc_key *key, const kc_key_builder *kb, const kc_params *abi,
                      kc_entry **out) {
    const kc_graph_desc *d = b->d;
    const kc_units *u = &b->u;
    kc_compiled *const *res = b->r.res;
    kc_entry *e;
    int rc = kc_entry_new(&e, key, b->set.variant);
    if (rc) return rc;
    sections s = {{0}, {0}, {0}, {0}, {0}};
    kc_kernels_encode(&s.k, d, u, res);
    kc_abi_encode(&s.pa, abi, d->nkernels);
    kc_program_encode(d, KC_PASS_FORWARD, &s.fw);
    if (kc_graph_desc_has_backward_(d)) kc_program_encode(d, KC_PASS_BACKWARD, &s.bw);
    kc_wrappers_encode(d, &s.wr);
    if (s.k.failed || s.fw.failed || s.bw.failed || s.wr.failed || s.pa.failed)
        rc = kc_err(KC_ENOMEM, "entry: out of memory");
    if (!rc) rc = kc_entry_set_images(e, b->r.refs, u->n);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_KERNELS, s.k.data, s.k.len);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_PARAMS, s.pa.data, s.pa.len);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_FORWARD, s.fw.data, s.fw.len);
    if (!rc && s.bw.len) rc = kc_entry_set_section(e, KC_SECTION_BACKWARD, s.bw.data, s.bw.len);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_WRAPPERS, s.wr.data, s.wr.len);
    if (!rc && d->runtime_meta_len)
        rc = kc_entry_set_section(e, KC_SECTION_RUNTIME_META, d->runtime_meta, d->runtime_meta_len);
    if (!rc) rc = kc_entry_add_key_digests(e, kb);
    if (!rc) rc = kc_entry_set_toolchain(e, b->meta);
    double nvrtc_s = 0; /* what a hit of this entry saves: its units' NVRTC time when first compiled */
    for (size_t i = 0; i < u->n; i++) nvrtc_s += res[i]->seconds;
    char cu[24];
    snprintf(cu, sizeof cu, "%llu", (unsigned long long)(nvrtc_s * 1e6 + 0.5));
    if (!rc) rc = kc_entry_set_origin(e, "compile_us", cu);
    for (size_t i = 0; i < u->n && !rc; i++) /* PTX with its NUL, as referred to */
        rc = kc_entry_attach_image(e, i, res[i]->image, (size_t)b->r.refs[i].len);
    kc_buf_free(&s.k);
    kc_buf_free(&s.fw);
    kc_buf_free(&s.bw);
    kc_buf_free(&s.wr);
    kc_buf_free(&s.pa);
    if (rc) {
        kc_entry_free(e);
        return rc;
    }
    *out = e;
    return KC_OK;
}

/* Where a graph entry compiled here came from (ORIGIN, beside compile_us): this host, the key
 * that signs it (a build host's), the manifest a prewarm compiles.  Shown by `kcache show`. */
static int set_provenance(kc_cache *c, kc_entry *e) {
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    int rc = host[0] ? kc_entry_set_origin(e, "host", host) : KC_OK;
    const kc_trust *t = c ? kc_cache_trust_(c) : NULL;
    if (!rc && t && t->signer) rc = kc_entry_set_origin(e, "producer", kc_signer_key_id(t->signer));
    const char *m = c ? kc_cache_origin_manifest_(c) : "";
    if (!rc && m[0]) rc = kc_entry_set_origin(e, "manifest", m);
    return rc;
}

/* The graph entry of the obtained units: the launch ABI, every step against its kernel's parameter
 * table, checked before anything is stored; then the entry, its wall time, provenance and reads. */
static int build_entry(kc_cache *c, build *b, const kc_key *key, const kc_key_builder *kb, double wall_ms,
                       kc_entry **out) {
    const kc_graph_desc *d = b->d;
    kc_params *abi = NULL;
    int rc = kc_abi_tables(d, &b->u, b->set.target.ptx, b->r.res, &abi);
    if (!rc) rc = kc_abi_check_desc(d, abi);
    kc_entry *e = NULL;
    kc_key_builder *own_kb = NULL; /* the key's builder, made on the miss path only ([Note: key memo]) */
    kc_key k2;
    if (!rc && !kb && !(rc = kc_graph_key_in(c, d, &k2, &own_kb))) kb = own_kb;
    if (!rc) rc = make_entry(b, key, kb, abi, &e);
    kc_key_builder_free(own_kb);
    if (!rc && (rc = kc_graph_set_compile_wall_(e, wall_ms)) != KC_OK) kc_entry_free(e), e = NULL;
    if (!rc && (rc = set_provenance(c, e)) != KC_OK) kc_entry_free(e), e = NULL;
    if (!rc) { /* its name, for `kcache ls` and `show`: the first name stored under the key, cut to 255 bytes */
        char nm[256];
        size_t n = strlen(d->name);
        if (n > 255) /* cut at a character's start: a UTF-8 continuation byte (10xxxxxx) goes with its lead */
            for (n = 255; n > 0 && ((unsigned char)d->name[n] & 0xC0) == 0x80;) n--;
        memcpy(nm, d->name, n);
        nm[n] = '\0';
        if (kc_entry_set_origin(e, "graph", nm) != KC_OK) kc_error_clear();
    }
    /* The reads travel with the entry ([Note: toolkit reads travel]); without them, the fleet walks. */
    if (!rc && b->reads && kc_entry_set_origin(e, "toolkit_reads", b->reads) != KC_OK) kc_error_clear();
    kc_abi_free(abi, d->nkernels);
    *out = e;
    return rc;
}

/* KC_OK when every image `e` refers to is in the local directory (a unit's image whose write
 * failed — a full disk — must not leave a graph entry pointing at nothing); else why not. */
static int images_stored(kc_cache *c, const kc_entry *e) {
    if (kc_cache_mode(c) != KC_CACHE_READWRITE) return KC_OK; /* the put says why it is not stored */
    kc_image_ref *refs;
    size_t n;
    int rc = kc_entry_images(e, &refs, &n);
    for (size_t i = 0; i < n && !rc; i++)
        if (kc_cache_exists(c, &refs[i].id, KC_VARIANT_IMAGE) != 1) {
            char hex[KC_KEY_HEX_LEN + 1];
            kc_key_to_hex(&refs[i].id, hex);
            rc = kc_err(KC_EIO, "image %s.img was not stored, so the graph entry is not", hex);
        }
    free(refs);
    return rc;
}

/* A compiled graph's outcome: a bypass (not cacheable: counted, not stored) or a compile, whose
 * graph entry is stored last, and only over stored images.  Strict, not stored is the error. */
static int build_store(kc_cache *c, const build *b, const kc_key *key, kc_entry *e, kc_graph_info *info) {
    const kc_graph_desc *d = b->d;
    if (b->bypass) {
        info->source = KC_FROM_BYPASS;
        snprintf(info->miss_reason, sizeof info->miss_reason, "not cacheable: %s", b->bypass);
        kc_log(KC_LOG_GRAPH, "%s: bypassed (%s)", d->name, b->bypass); /* counted by the lookup (lookup_counts.c) */
        return KC_OK;
    }
    info->source = KC_FROM_COMPILE;
    kc_cache_count(c, key, KC_STAT_COMPILES, 1); /* a graph built; its units: unit_compiles, unit_hits */
    int prc = b->r.store_rc ? kc_err(b->r.store_rc, "%s", b->r.store_msg) : images_stored(c, e);
    if (prc == KC_OK) prc = kc_cache_put(c, e);
    info->store_status = prc;
    if (prc == KC_OK) { /* for hosts without NVRTC, or without the toolkit's headers */
        kc_cache_toolchain_note_(c, kc_entry_toolchain(e));
        kc_cache_toolkit_note_(c, kc_entry_toolchain(e));
    }
    if (prc != KC_OK && prc != KC_EREADONLY) /* a full disk costs the next process a compile, not us */
        kc_log(KC_LOG_GRAPH, "%s: not stored: %s", d->name, kc_error_last()->message);
    if (prc != KC_OK && prc != KC_EREADONLY && kc_cache_strict_(c)) /* strict: ... unless the cache is strict */
        return kc_err_prefix(prc, "graph '%s' compiled, but not stored, and the cache is strict (KCACHE_STRICT)",
                             d->name);
    return KC_OK;
}

int kc_graph_build_(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const kc_key_builder *kb,
                    const kc_target *target, int reuse, kc_graph_info *info, kc_entry **entry_out) {
    int rrc = kc_spec_direct_ready_(d); /* read by the confirm already ([Note: spec direct mode]) */
    if (rrc) return rrc;
    const char *bypass = kc_graph_uncacheable_(d);
    if (bypass && kc_cache_strict_(c)) /* strict: a bypass is an anomaly, not a compile */
        return kc_err(KC_EINVAL, "graph '%s' is not cacheable (%s), and the cache is strict (KCACHE_STRICT)", d->name,
                      bypass);
    build b;
    memset(&b, 0, sizeof b);
    b.d = d, b.bypass = bypass;
    int rc = build_alloc(&b);
    if (!rc && (rc = build_units(c, &b, target, reuse, info)) != KC_OK) {
        rc = build_failed(c, &b, key, rc, info);
        build_free(&b);
        return rc;
    }
    kc_entry *e = NULL;
    if (!rc) rc = build_entry(c, &b, key, kb, info->compile_ms, &e);
    build_free(&b);
    if (rc == KC_ECOMPILE) kc_cache_count(c, key, KC_STAT_COMPILE_ERRORS, 1);
    if (rc) return rc;
    snprintf(info->variant, sizeof info->variant, "%s", b.set.variant);
    if ((rc = build_store(c, &b, key, e, info)) != KC_OK) {
        kc_entry_free(e);
        return rc;
    }
    if (entry_out) *entry_out = e;
    else kc_entry_free(e);
    return KC_OK;
}

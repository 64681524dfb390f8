/*
 * lookup.c — from a description to compiled, stored and loaded kernels: kc_graph_compile
 * (compile-only, for prewarming a fleet) and kc_graph_get (a device's loaded graph).
 *
 * The one idea: a lookup computes the key once, then tries the cheapest place first — the
 * process's loaded graphs, the local directory, the remote tier — under the device's ordered
 * candidate variants ([Note: variant selection]); only a miss compiles, under the key's lock
 * ([Note: single-flight]), and every outcome is counted exactly once ([Note: one outcome] in
 * lookup_counts.c).  A driver that refuses
 * a stored image is a counted miss, never a failure.
 *
 * Callers: the public API (graph.h), the prewarm part, the guard part.  Must not: store a
 * graph whose source is not cacheable (__DATE__ …), load an entry without full validation,
 * or fail a lookup because of the cache (cache trouble costs a miss).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../cache/internal.h"
#include "../cache/record.h"
#include "../common/internal.h"
#include "../compile/toolkit.h"
#include "../entry/trust.h"
#include "../store/tiers.h" /* kc_tiers_take_failure: strict */
#include "graph_internal.h"
#include "kcache/cuda.h"
#include "kcache/sign.h"
#include "kcache/target.h"
#include "program.h"

/* Whether the description has a backward pass: a kernel step or a zero step (desc.c keeps those apart, in
 * d->zeros) of pass BACKWARD.  A pass of zero steps alone is a pass: its section is written. */
int kc_graph_desc_has_backward_(const kc_graph_desc *d) {
    for (size_t i = 0; i < d->nsteps; i++)
        if (d->steps[i].pass == KC_PASS_BACKWARD) return 1;
    for (size_t i = 0; i < d->nzeros; i++)
        if (d->zeros[i].pass == KC_PASS_BACKWARD) return 1;
    return 0;
}

/* The toolchain string of what this host compiles: the toolchain, and the toolkit headers'
 * digest when a kernel reads them — what a host without the toolkit keys such a graph by (cache/record.h). */
static int toolchain_meta(const char *headers, char meta[256]) {
    kc_toolchain tc;
    int rc = kc_toolchain_local(&tc);
    if (!rc) rc = kc_toolchain_meta(&tc, meta, 256 - 48);
    if (!rc && headers[0]) snprintf(meta + strlen(meta), 256 - strlen(meta), " headers %s", headers);
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

/* Build the graph entry of a compiled graph: its own sections and its images' references
 * (IMAGES), with the images attached in memory for a load that follows. */
static int set_provenance(kc_cache *c, kc_entry *e);

static int make_entry(const kc_graph_desc *d, const kc_units *u, const kc_key *key, const kc_key_builder *kb,
                      const char *target, kc_compiled **res, const kc_image_ref *refs, const kc_params *abi,
                      const char *meta, kc_entry **out) {
    kc_entry *e;
    int rc = kc_entry_new(&e, key, target);
    if (rc) return rc;
    kc_buf k = {0}, fw = {0}, bw = {0}, wr = {0}, pa = {0};
    kc_kernels_encode(&k, d, u, res);
    kc_abi_encode(&pa, abi, d->nkernels);
    kc_program_encode(d, KC_PASS_FORWARD, &fw);
    if (kc_graph_desc_has_backward_(d)) kc_program_encode(d, KC_PASS_BACKWARD, &bw);
    kc_wrappers_encode(d, &wr);
    if (k.failed || fw.failed || bw.failed || wr.failed || pa.failed) rc = kc_err(KC_ENOMEM, "entry: out of memory");
    if (!rc) rc = kc_entry_set_images(e, refs, u->n);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_KERNELS, k.data, k.len);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_PARAMS, pa.data, pa.len);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_FORWARD, fw.data, fw.len);
    if (!rc && bw.len) rc = kc_entry_set_section(e, KC_SECTION_BACKWARD, bw.data, bw.len);
    if (!rc) rc = kc_entry_set_section(e, KC_SECTION_WRAPPERS, wr.data, wr.len);
    if (!rc && d->runtime_meta_len) rc = kc_entry_set_section(e, KC_SECTION_RUNTIME_META, d->runtime_meta, d->runtime_meta_len);
    if (!rc) rc = kc_entry_add_key_digests(e, kb);
    if (!rc) rc = kc_entry_set_toolchain(e, meta);
    double nvrtc_s = 0; /* what a hit of this entry saves: its units' NVRTC time when first compiled */
    for (size_t i = 0; i < u->n; i++) nvrtc_s += res[i]->seconds;
    char cu[24];
    snprintf(cu, sizeof cu, "%llu", (unsigned long long)(nvrtc_s * 1e6 + 0.5));
    if (!rc) rc = kc_entry_set_origin(e, "compile_us", cu);
    for (size_t i = 0; i < u->n && !rc; i++) /* PTX with its NUL, as referred to */
        rc = kc_entry_attach_image(e, i, res[i]->image, (size_t)refs[i].len);
    kc_buf_free(&k);
    kc_buf_free(&fw);
    kc_buf_free(&bw);
    kc_buf_free(&wr);
    kc_buf_free(&pa);
    if (rc) {
        kc_entry_free(e);
        return rc;
    }
    *out = e;
    return KC_OK;
}

/*
 * Why the description cannot be stored (__DATE__ in a source, an unhashed hook), or NULL.  The
 * scan of every kernel's text costs more than the rest of a warm lookup together (tens of µs per
 * kernel), so a description found cacheable remembers it (cacheable_memo, cleared when a kernel
 * or hook is added); an uncacheable one is scanned again, which costs nothing next to its compile.
 */
static const char *first_uncacheable(const kc_graph_desc *d) {
    if (__atomic_load_n(&d->cacheable_memo, __ATOMIC_ACQUIRE) == 1) return NULL;
    if (d->hook_unhashed) return "a saved-tensor hook has no cache hash";
    for (size_t i = 0; i < d->nkernels; i++) {
        kc_kernel_src k = kc_graph_kernel_src(&d->kernels[i]);
        const char *why;
        if (!kc_kernel_cacheable(&k, &why)) return why;
    }
    __atomic_store_n(&((kc_graph_desc *)d)->cacheable_memo, 1, __ATOMIC_RELEASE); /* the memo is not the description's meaning */
    return NULL;
}

static double us_since(uint64_t t0) { return (double)(kc_mono_ns() - t0) / 1e3; }

/* Compile for `target` — each compile unit found stored is not compiled again ([Note: two
 * levels]) unless !reuse (the device refused what was stored: every unit afresh) —, store unless bypassed (images and unit records first, the graph entry last);
 * *entry_out (may be NULL) gets the entry, its images attached. */
static int compile_and_store(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const kc_key_builder *kb,
                             const char *target, int reuse, kc_graph_info *info, kc_entry **entry_out) {
    const char *bypass = first_uncacheable(d);
    if (bypass && kc_cache_strict_(c)) /* strict: a bypass is an anomaly, not a compile */
        return kc_err(KC_EINVAL, "graph '%s' is not cacheable (%s), and the cache is strict (KCACHE_STRICT)", d->name, bypass);
    kc_compiled **res = NULL;
    kc_image_ref *refs = NULL;
    kc_kernel_src *ks = kc_calloc(d->nkernels ? d->nkernels : 1, sizeof *ks);
    char *label = kc_malloc(strlen(d->name) + 16); /* the whole name, as before the split */
    kc_units u;
    u.n = 0;
    if (ks && label) {
        for (size_t i = 0; i < d->nkernels; i++) ks[i] = kc_graph_kernel_src(&d->kernels[i]);
        kc_units_group(ks, d->nkernels, &u);
        res = kc_calloc(u.n ? u.n : 1, sizeof *res);
        refs = kc_calloc(u.n ? u.n : 1, sizeof *refs);
    }
    if (!ks || !label || !res || !refs) {
        free(ks), free(label), free(res), free(refs);
        return kc_err(KC_ENOMEM, "graph '%s': out of memory", d->name);
    }
    snprintf(label, strlen(d->name) + 16, "graph '%s'", d->name);
    /* Only the toolchain the key names may compile: a host without NVRTC, or whose NVRTC is
     * not a pinned or recorded toolchain, says so (KC_ENONVRTC) instead. */
    kc_toolchain_choice tc;
    char headers[33] = "", meta[256] = "", store_msg[300] = "";
    int ncompiled = 0, store_rc = KC_OK;
    int rc = kc_device_check_desc(d, target); /* launches no known device of the target could run */
    if (!rc && d->nkernels > KC_UNITS_MAX) rc = kc_err(KC_EINVAL, "%s: %zu kernels; at most %d compile together", label, d->nkernels, KC_UNITS_MAX);
    if (!rc) rc = kc_cache_toolchain(c, &tc);
    if (!rc) rc = kc_cache_toolchain_can_compile_(&tc);
    if (!rc) rc = kc_graph_toolkit_id_(c, d, headers); /* memoised: the key computed it */
    if (!rc) rc = toolchain_meta(headers, meta);
    struct kc_toolkit_watch *watch = NULL; /* what the compiles read, for the direct manifest */
    if (!rc) kc_graph_watch_begin_(c, d, &watch);
    if (!rc) rc = kc_units_obtain_(c, bypass == NULL, reuse, ks, d->nkernels, &u, target, label, tc.id, headers, meta, res, refs,
                                   &ncompiled, &info->compile_ms, &store_rc, store_msg, sizeof store_msg);
    /* Only when every unit was compiled under the watch are the graph's reads known whole. */
    char *reads = NULL;
    kc_graph_watch_end_(c, d, tc.id, target, watch, rc == KC_OK && !bypass && u.n > 0 && (size_t)ncompiled == u.n, &reads);
    free(ks);
    free(label);
    info->units = (int)u.n;
    info->units_compiled = ncompiled;
    if (rc) {
        if (rc == KC_ECOMPILE) kc_cache_count(c, key, KC_STAT_COMPILE_ERRORS, 1);
        if (rc == KC_ENOTCACHED) { /* must-hit: the lookup's miss is counted by its caller; this says why it failed */
            kc_cache_count(c, key, KC_STAT_COMPILES_REFUSED, 1);
            char hex[KC_KEY_HEX_LEN + 1];
            kc_key_to_hex(key, hex);
            rc = kc_err_prefix(rc, "graph '%s' (key %s, variant %s) missed (%s)", d->name, hex, target,
                               info->miss_reason[0] ? info->miss_reason : "not stored");
            kc_log(KC_LOG_GRAPH, "%s", kc_error_last()->message);
        }
        kc_units_free(res, u.n);
        free(refs);
        free(reads);
        return rc;
    }
    /* The launch ABI: every step against its kernel's parameter table, before anything is stored. */
    kc_target tt;
    kc_params *abi = NULL;
    kc_target_parse(target, &tt);
    rc = kc_abi_tables(d, &u, tt.ptx, res, &abi);
    if (!rc) rc = kc_abi_check_desc(d, abi);
    kc_entry *e = NULL;
    kc_key_builder *own_kb = NULL; /* the key's builder, made on the miss path only ([Note: key memo]) */
    kc_key k2;
    if (!rc && !kb && !(rc = kc_graph_key_in(c, d, &k2, &own_kb))) kb = own_kb;
    if (!rc) rc = make_entry(d, &u, key, kb, target, res, refs, abi, meta, &e);
    kc_key_builder_free(own_kb);
    if (!rc && (rc = kc_graph_set_compile_wall_(e, info->compile_ms)) != KC_OK) kc_entry_free(e), e = NULL;
    if (!rc && (rc = set_provenance(c, e)) != KC_OK) kc_entry_free(e), e = NULL;
    /* The reads travel with the entry ([Note: toolkit reads travel]); without them, the fleet walks. */
    if (!rc && reads && kc_entry_set_origin(e, "toolkit_reads", reads) != KC_OK) kc_error_clear();
    free(reads);
    kc_abi_free(abi, d->nkernels);
    kc_units_free(res, u.n);
    free(refs);
    if (rc == KC_ECOMPILE) kc_cache_count(c, key, KC_STAT_COMPILE_ERRORS, 1);
    if (rc) return rc;
    snprintf(info->variant, sizeof info->variant, "%s", target);
    if (bypass) {
        info->source = KC_FROM_BYPASS;
        snprintf(info->miss_reason, sizeof info->miss_reason, "not cacheable: %s", bypass);
        kc_cache_count(c, key, KC_STAT_BYPASSES, 1);
        kc_log(KC_LOG_GRAPH, "%s: bypassed (%s)", d->name, bypass);
    } else {
        info->source = KC_FROM_COMPILE;
        kc_cache_count(c, key, KC_STAT_COMPILES, 1); /* a graph built; its units: unit_compiles, unit_hits */
        /* A graph entry is stored last, and only over stored images. */
        int prc = store_rc ? kc_err(store_rc, "%s", store_msg) : images_stored(c, e);
        if (prc == KC_OK) prc = kc_cache_put(c, e);
        info->store_status = prc;
        if (prc == KC_OK) { /* for hosts without NVRTC, or without the toolkit's headers */
            kc_cache_toolchain_note_(c, kc_entry_toolchain(e));
            kc_cache_toolkit_note_(c, kc_entry_toolchain(e));
        }
        if (prc != KC_OK && prc != KC_EREADONLY) /* a full disk costs the next process a compile, not us */
            kc_log(KC_LOG_GRAPH, "%s: not stored: %s", d->name, kc_error_last()->message);
        if (prc != KC_OK && prc != KC_EREADONLY && kc_cache_strict_(c)) { /* strict: ... unless the cache is strict */
            kc_entry_free(e);
            return kc_err_prefix(prc, "graph '%s' compiled, but not stored, and the cache is strict (KCACHE_STRICT)", d->name);
        }
    }
    if (entry_out) *entry_out = e;
    else kc_entry_free(e);
    return KC_OK;
}

/*
 * [Note: single-flight] A miss compiles under the key+variant's lock.  A process that finds
 * the lock held waits, polling every few milliseconds, for the entry to appear (then it is
 * a hit) or for the lock to come free (the holder finished without storing, or died: the
 * kernel released its flock) — then it takes over.  The wait is bounded (KCACHE_LOCK_WAIT
 * seconds, default 600): past it, it compiles without the lock rather than fail.
 */
/* A stored entry found and refused ([Note: refusals are said] in src/store/refusal.c): the tiers' reason
 * (the entry, or an image it names: signature, MAC, corrupt) into `why` when there is one, else
 * `fallback` (may be NULL: `why` kept).  Strict (KCACHE_STRICT), the refusal is the lookup's error, with
 * its status (KC_EUNTRUSTED, KC_ECORRUPT; `status` when the tiers recorded none); else KC_MISS. */
static int refusal(kc_cache *c, int status, const char *fallback, char *why, size_t cap) {
    char r[400];
    int rc = kc_tiers_take_refusal(r, sizeof r);
    if (!rc && fallback) snprintf(r, sizeof r, "%s", fallback);
    if (why && (rc || fallback)) snprintf(why, cap, "%s", r);
    if (!kc_cache_strict_(c) || (!rc && !fallback)) return KC_MISS;
    return kc_err(rc ? rc : status, "strict (KCACHE_STRICT): %s", r);
}

int kc_graph_strict_refusal_(kc_cache *c) {
    int rc = refusal(c, KC_ECORRUPT, NULL, NULL, 0);
    return rc == KC_MISS ? KC_OK : rc;
}

/* The local graph entry of key.variant with its images resolved: KC_OK, or KC_MISS (absent;
 * corrupt: quarantined; an image missing or failing its check: counted, the reason in `why`). */
static int local_graph(kc_cache *c, const kc_key *key, const char *variant, int attach, kc_entry **out, char *why,
                       size_t cap) {
    /* `why` NULL: a look again under the compile lock, whose lookup counted its own detail already */
    *out = NULL;
    kc_entry *e;
    /* A compile-only hit needs its graph entry's images and origin, nothing else ([Note: checked,
     * not inflated] in src/entry/entry.c); a load needs all of it. */
    unsigned sections = attach ? ~0u : 1u << KC_SECTION_IMAGES | 1u << KC_SECTION_ORIGIN;
    int rc = kc_cache_get_local_some_(c, key, variant, sections, &e);
    if (rc == KC_ECORRUPT && why) return refusal(c, KC_ECORRUPT, "stored entry was corrupt", why, cap);
    if (rc) return KC_MISS;
    if ((rc = kc_graph_resolve_(c, e, attach, 1)) != KC_OK) {
        char r[160];
        snprintf(r, sizeof r, "stored entry for %s refused: %.110s", variant, kc_error_last()->message);
        if (why) kc_cache_count(c, key, KC_STAT_IMAGES_MISSING, 1);
        kc_log(KC_LOG_GRAPH, "stored graph %s not usable: %s", variant, kc_error_last()->message);
        kc_entry_free(e);
        if (rc == KC_ENOMEM) return rc;
        return why ? refusal(c, KC_ECORRUPT, r, why, cap) : KC_MISS; /* an image refused, else missing */
    }
    *out = e;
    return KC_OK;
}

/* The remote's graph entry under the first present of `variants`, its images resolved, then kept
 * locally — its images first (resolve wrote them), the graph entry last.  KC_OK or KC_MISS. */
static int remote_graph(kc_cache *c, const kc_key *key, const char *const *variants, size_t n, size_t *which,
                        kc_entry **out, char *why, size_t cap) {
    *out = NULL;
    kc_entry *e;
    void *raw;
    size_t raw_len, w = 0;
    if (kc_cache_remote_fetch_(c, key, variants, n, &w, &e, &raw, &raw_len) != KC_OK)
        return refusal(c, KC_EUNTRUSTED, NULL, why, cap); /* absent, or found and refused: said */
    int rc = kc_graph_resolve_(c, e, 1, 1);
    if (rc == KC_OK) {
        (void)kc_cache_keep_local_(c, key, variants[w], raw, raw_len);
    } else {
        kc_cache_count(c, key, KC_STAT_IMAGES_MISSING, 1);
        char r[160];
        snprintf(r, sizeof r, "remote entry for %s refused: %.110s", variants[w], kc_error_last()->message);
        kc_entry_free(e);
        e = NULL;
        if (rc != KC_ENOMEM) rc = refusal(c, KC_ECORRUPT, r, why, cap);
    }
    free(raw);
    if (!e) return rc;
    if (which) *which = w;
    *out = e;
    return KC_OK;
}

/* If key.target is stored now (with its images), take it as a disk hit (with why) and return 1. */
static int take_stored(kc_cache *c, const kc_key *key, const char *target, kc_graph_info *info, const char *why,
                       kc_entry **entry_out) {
    kc_entry *e;
    if (local_graph(c, key, target, entry_out != NULL, &e, NULL, 0) != KC_OK) return 0;
    info->source = KC_FROM_DISK;
    snprintf(info->variant, sizeof info->variant, "%s", target);
    snprintf(info->miss_reason, sizeof info->miss_reason, "%s", why);
    if (entry_out) *entry_out = e;
    else kc_entry_free(e);
    return 1;
}

static int single_flight(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const kc_key_builder *kb,
                         const char *target, int take, kc_graph_info *info, kc_entry **entry_out) {
    double wait_s = 600.0; /* strict (common/env.c): in [0, a day], so the cast below is defined */
    int erc = (wait_s = kc_cache_settings_(c)->lock_wait, KC_OK); /* checked once, at the open (config/) */
    if (erc) return erc;
    uint64_t deadline = kc_mono_ns() + (uint64_t)(wait_s * 1e9);
    int waited = 0;
    for (;;) {
        kc_lock *lk = NULL;
        int rc = kc_cache_trylock(c, key, target, &lk);
        if (rc == KC_OK) {
            /* Someone may have stored it between our miss and the lock. */
            if (take && take_stored(c, key, target, info, "stored by another process meanwhile", entry_out)) {
                kc_cache_unlock(lk);
                return KC_OK;
            }
            rc = compile_and_store(c, d, key, kb, target, take, info, entry_out);
            kc_cache_unlock(lk);
            return rc;
        }
        if (rc != KC_EBUSY || kc_mono_ns() > deadline) {
            if (rc == KC_EBUSY) kc_log(KC_LOG_GRAPH, "%s: waited %.0f s for another compile; compiling", d->name, wait_s);
            else kc_log(KC_LOG_GRAPH, "%s: no compile lock (%s); compiling", d->name, kc_error_last()->message);
            return compile_and_store(c, d, key, kb, target, take, info, entry_out);
        }
        if (!waited++) kc_log(KC_LOG_GRAPH, "%s: another process compiles %s; waiting", d->name, target);
        if (take && take_stored(c, key, target, info, "waited for another process's compile", entry_out)) return KC_OK;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
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

static void info_init(kc_graph_info *info, const kc_key *key) {
    memset(info, 0, sizeof *info);
    kc_key_to_hex(key, info->key);
}

/* The common start of a lookup: the key, its digests, and the info record. */
/* Strict (KCACHE_STRICT): a remote read failure this lookup met (it went on without the remote)
 * is its error. */
static int strict_remote(kc_cache *c) {
    char why[256];
    if (!kc_cache_strict_(c) || !kc_tiers_take_failure(why, sizeof why)) return KC_OK;
    return kc_err(KC_EIO, "strict (KCACHE_STRICT): the remote failed during this lookup: %s", why);
}

/* `variant`: the one whose direct manifest may vouch for the key's toolkit digest (*vouched). */
static int lookup_begin(kc_cache *c, const kc_graph_desc *d, const char *variant, kc_graph_info *info, kc_key *key,
                        kc_key_builder **kb, uint64_t *t0, int *vouched) {
    *t0 = kc_mono_ns();
    (void)kc_tiers_take_failure(NULL, 0); /* strict: only this lookup's remote failures count */
    (void)kc_tiers_take_refusal(NULL, 0); /* and only its refusals are said */
    *kb = NULL; /* the memo: the builder is made on a miss, when an entry is written (compile_and_store) */
    int rc = kc_graph_key_lookup_(c, d, variant, key, vouched);
    if (rc) return rc;
    info_init(info, key);
    info->key_us = us_since(*t0);
    info->kernels = (int)d->nkernels;
    return KC_OK;
}

/* A key whose toolkit digest a direct manifest vouched for serves that manifest's variant from
 * the local directory and nothing else: before a remote is asked, another variant tried or a miss
 * counted, the walk confirms it ([Note: toolkit direct mode]).  0 when it stands (*vouched is
 * then 0), 1 when it moved (the tree changed where this graph does not read: look up again, now
 * under the walked digest — at most once, the digest being the walk's from then on), else the
 * walk's error. */
static int confirm_vouched(kc_cache *c, const kc_graph_desc *d, const kc_key *key, int *vouched) {
    if (!*vouched) return 0;
    kc_key k2;
    int rc = kc_graph_key_in(c, d, &k2, NULL);
    if (rc) return rc;
    if (memcmp(&k2, key, sizeof k2) != 0) {
        kc_log(KC_LOG_GRAPH, "%s: the toolkit's tree changed since its direct manifest: looking up again", d->name);
        return 1;
    }
    *vouched = 0;
    return 0;
}

/* A lookup made again: its time counts from the first one's start (the walk included). */
static void relookup_time(kc_graph_info *info, uint64_t *t0, uint64_t *t_first) {
    if (*t_first) {
        *t0 = *t_first;
        info->key_us = us_since(*t0);
    } else {
        *t_first = *t0;
    }
}

/*
 * [Note: kernel-less graphs] A graph of zero steps only (zeroing gradients between training steps)
 * has no kernel: nothing to compile, store or fetch, so no entry is ever written for it and no
 * tier is asked — a compile checks its launches against the known devices and succeeds (source
 * KC_FROM_BYPASS, reason "no kernels"; counted as the bypass its caller is told), a get builds the loaded graph from the
 * description's own launch program, encoded and decoded as an entry's would be (the same strict
 * reader), and keeps it in the loaded table under its key like any other (a later get of it is a
 * memory hit, counted as one).
 */
static void kernelless_info(kc_cache *c, const kc_key *key, kc_graph_info *info, const char *target) {
    kc_cache_count(c, key, KC_STAT_BYPASSES, 1); /* one outcome per lookup: the one the caller is told */
    info->source = KC_FROM_BYPASS;
    snprintf(info->variant, sizeof info->variant, "%s", target);
    snprintf(info->miss_reason, sizeof info->miss_reason, "no kernels: nothing to compile or store");
}

static int graph_compile(kc_cache *c, const kc_graph_desc *d, const char *target, kc_graph_info *info_out) {
    kc_graph_info local;
    kc_graph_info *info = info_out ? info_out : &local;
    memset(info, 0, sizeof *info);
    if (!c || !d || !target) return kc_err(KC_EINVAL, "kc_graph_compile: NULL argument");
    kc_target t;
    int rc = kc_target_parse(target, &t);
    if (rc) return rc;
    uint64_t t0, t_first = 0;
    kc_key key;
    kc_key_builder *kb;
    int vouched;
again:
    if ((rc = lookup_begin(c, d, target, info, &key, &kb, &t0, &vouched))) return rc;
    relookup_time(info, &t0, &t_first);
    if (d->nkernels == 0) { /* [Note: kernel-less graphs] */
        kc_key_builder_free(kb);
        if ((rc = kc_device_check_desc(d, target))) return rc;
        kernelless_info(c, &key, info, target);
        info->total_us = us_since(t0);
        return KC_OK;
    }
    uint64_t t1 = kc_mono_ns();
    kc_entry *e = NULL;
    int cacheable = first_uncacheable(d) == NULL;
    char why[160] = "";
    int lrc = cacheable ? local_graph(c, &key, target, 0, &e, why, sizeof why) : KC_MISS;
    if (lrc == KC_MISS && (rc = confirm_vouched(c, d, &key, &vouched)) != 0) lrc = rc;
    if (lrc == 1) { /* the key moved */
        kc_key_builder_free(kb);
        memset(info, 0, sizeof *info);
        goto again;
    }
    int rrc = lrc == KC_MISS && cacheable ? remote_graph(c, &key, &target, 1, NULL, &e, why, sizeof why) : KC_MISS;
    if (rrc != KC_OK && rrc != KC_MISS) { /* strict: a remote entry refused */
        lrc = rrc;
        snprintf(info->miss_reason, sizeof info->miss_reason, "%s", why);
    }
    if (lrc != KC_OK && lrc != KC_MISS) { /* strict: an anomaly is the lookup's error; the walk's */
        kc_key_builder_free(kb);
        return lrc;
    }
    if (lrc == KC_OK) { /* one read each, images checked, not kept */
        info->lookup_us = us_since(t1);
        info->source = KC_FROM_DISK;
        snprintf(info->variant, sizeof info->variant, "%s", target);
        kc_cache_count(c, &key, KC_STAT_HITS, 1);
        kc_graph_hit_saved_(c, &key, info, kc_graph_entry_wall_us_(e));
        if (!vouched) kc_graph_direct_from_entry_(c, d, target, e);
        kc_entry_free(e);
    } else if (rrc == KC_OK) {
        info->lookup_us = us_since(t1);
        info->source = KC_FROM_REMOTE;
        snprintf(info->variant, sizeof info->variant, "%s", target);
        kc_cache_count(c, &key, KC_STAT_REMOTE_HITS, 1);
        kc_graph_hit_saved_(c, &key, info, kc_graph_entry_wall_us_(e));
        kc_graph_direct_from_entry_(c, d, target, e); /* confirmed above: walked */
        kc_entry_free(e);
    } else {
        if (cacheable) {
            if (why[0]) snprintf(info->miss_reason, sizeof info->miss_reason, "%s", why);
            else snprintf(info->miss_reason, sizeof info->miss_reason, "no entry for %s", target);
        }
        info->lookup_us = us_since(t1);
        rc = cacheable ? single_flight(c, d, &key, kb, target, 1, info, NULL)
                       : compile_and_store(c, d, &key, kb, target, 1, info, NULL);
        if (cacheable) kc_graph_count_after_miss_(c, &key, info, rc);
    }
    info->total_us = us_since(t0);
    kc_key_builder_free(kb);
    return rc ? rc : strict_remote(c);
}

/*
 * Load a stored entry.  An image this driver refuses (KC_EREFUSED: too new a toolkit, an
 * invalid image, no kernel image for the device) or an entry whose launch programs do not fit
 * its kernels (KC_ECORRUPT) is a counted miss: KC_MISS, with the reason in info.  Anything
 * else (no memory, a broken context) is the caller's error.
 */
static int try_load(kc_cache *c, const kc_graph_desc *d, const kc_key *key, const kc_entry *e, int device,
                    const char *variant, const char *where, kc_graph_info *info, kc_graph **g) {
    uint64_t t2 = kc_mono_ns();
    int rc = kc_graph_load(e, key, device, g);
    info->load_us = us_since(t2);
    if (rc != KC_EREFUSED && rc != KC_ECORRUPT) return rc;
    kc_cache_count(c, key, KC_STAT_LOAD_REFUSED, 1);
    snprintf(info->miss_reason, sizeof info->miss_reason, "%s%s not usable: %.180s", where, variant,
             kc_error_last()->message);
    if (rc == KC_ECORRUPT && kc_cache_strict_(c)) /* its launch programs do not fit its kernels: a corrupt entry */
        return kc_err_prefix(rc, "strict (KCACHE_STRICT): %sentry for %s refused", where, variant);
    kc_log(KC_LOG_LOAD, "%s: %s%s not usable: %s", d->name, where, variant, kc_error_last()->message);
    return KC_MISS;
}

static int graph_get(kc_cache *c, const kc_graph_desc *d, int device, kc_graph **out, kc_graph_info *info_out) {
    if (out) *out = NULL; /* on every failure too */
    kc_graph_info local;
    kc_graph_info *info = info_out ? info_out : &local;
    memset(info, 0, sizeof *info);
    if (!c || !d || !out) return kc_err(KC_EINVAL, "kc_graph_get: NULL argument");
    *out = NULL;
    int major, minor, rc = kc_cuda_capability(device, &major, &minor);
    if (rc) return rc;
    uint64_t t0, t_first = 0;
    kc_key key;
    kc_key_builder *kb;
    int vouched;
    char cand[KC_TARGET_CANDIDATES_MAX][16], target[16];
    kc_variant_for_device(major, minor, target); /* the variant a direct manifest may vouch for */
again:
    if ((rc = lookup_begin(c, d, target, info, &key, &kb, &t0, &vouched))) return rc;
    relookup_time(info, &t0, &t_first);
    uint64_t t1 = kc_mono_ns();
    *out = kc_loaded_find(&key, device);
    if (*out) {
        info->source = KC_FROM_MEMORY;
        snprintf(info->variant, sizeof info->variant, "%s", (*out)->variant);
        kc_cache_count(c, &key, KC_STAT_MEMORY_HITS, 1); /* no time saved: [Note: time saved] */
        info->lookup_us = us_since(t1);
        info->total_us = us_since(t0);
        kc_key_builder_free(kb);
        return KC_OK;
    }
    kc_graph *g = NULL;
    if (d->nkernels == 0) { /* [Note: kernel-less graphs]: built here, kept in the loaded table */
        kc_key_builder_free(kb);
        if ((rc = kc_graph_load_kernelless(d, &key, target, device, &g))) return kc_err_prefix(rc, "graph '%s'", d->name);
        kernelless_info(c, &key, info, target);
        *out = kc_loaded_publish(g, 1);
        info->total_us = us_since(t0);
        return KC_OK;
    }
    size_t nc = first_uncacheable(d) ? 0 : kc_target_candidates(major, minor, cand, KC_TARGET_CANDIDATES_MAX);
    int own_unusable = 0; /* the device's own variant was stored but could not be used */
    char why[160] = "";
    for (size_t i = 0; i < nc && !g; i++) {
        kc_entry *e;
        if ((rc = local_graph(c, &key, cand[i], 1, &e, why, sizeof why)) != KC_OK) { /* absent, corrupt, an image missing */
            if (rc != KC_MISS) break;
            rc = KC_OK;
            continue;
        }
        /* Found, of another variant than the one whose manifest vouched (sm_90a before sm_90 on a
         * 9.0 device, sm_80 on an 8.6): the walk first. */
        if (strcmp(cand[i], target) != 0 && (rc = confirm_vouched(c, d, &key, &vouched)) != 0) {
            kc_entry_free(e);
            break;
        }
        info->lookup_us = us_since(t1);
        rc = try_load(c, d, &key, e, device, cand[i], "", info, &g);
        if (rc == KC_OK && !vouched) kc_graph_direct_from_entry_(c, d, cand[i], e);
        kc_entry_free(e);
        if (rc == KC_MISS) {
            own_unusable |= strcmp(cand[i], target) == 0;
            rc = KC_OK;
            continue;
        }
        if (rc) break;
        info->source = KC_FROM_DISK;
        snprintf(info->variant, sizeof info->variant, "%s", cand[i]);
        kc_cache_count(c, &key, KC_STAT_HITS, 1);
        kc_graph_hit_saved_(c, &key, info, g->compile_us);
    }
    if (!g && !rc) rc = confirm_vouched(c, d, &key, &vouched); /* before the remote, or the miss */
    if (rc == 1) { /* the key moved */
        kc_key_builder_free(kb);
        memset(info, 0, sizeof *info);
        goto again;
    }
    if (!g && !rc && nc) { /* the remote tier: the first present candidate, in one round trip */
        const char *cp[KC_TARGET_CANDIDATES_MAX];
        for (size_t i = 0; i < nc; i++) cp[i] = cand[i];
        size_t w;
        kc_entry *e;
        int rrc = remote_graph(c, &key, cp, nc, &w, &e, why, sizeof why);
        if (rrc != KC_OK && rrc != KC_MISS) { /* strict: a remote entry refused */
            rc = rrc;
            snprintf(info->miss_reason, sizeof info->miss_reason, "%s", why);
        }
        if (rrc == KC_OK) {
            info->lookup_us = us_since(t1);
            rc = try_load(c, d, &key, e, device, cand[w], "remote ", info, &g);
            if (rc == KC_OK) kc_graph_direct_from_entry_(c, d, cand[w], e); /* confirmed above: walked */
            kc_entry_free(e);
            if (rc == KC_MISS) {
                own_unusable |= strcmp(cand[w], target) == 0;
                rc = KC_OK;
            } else if (!rc) {
                info->source = KC_FROM_REMOTE;
                snprintf(info->variant, sizeof info->variant, "%s", cand[w]);
                kc_cache_count(c, &key, KC_STAT_REMOTE_HITS, 1);
                kc_graph_hit_saved_(c, &key, info, g->compile_us);
            }
        }
    }
    if (!g && !rc) {
        /* One outcome per lookup: whatever was found and not usable (refused, an image missing)
         * counted its own detail (load_refused, images_missing); the lookup is a miss. */
        if (!info->miss_reason[0])
            snprintf(info->miss_reason, sizeof info->miss_reason, "%s",
                     !nc ? "not cacheable" : why[0] ? why : "no usable variant stored");
        info->lookup_us = us_since(t1);
        kc_entry *e = NULL;
        /* A stored image of this very variant that the driver refused is not taken again as
         * "stored meanwhile": this lookup compiles it afresh and stores it over the old one. */
        rc = nc ? single_flight(c, d, &key, kb, target, !own_unusable, info, &e)
                : compile_and_store(c, d, &key, kb, target, 1, info, &e);
        if (!rc) {
            uint64_t t2 = kc_mono_ns();
            rc = kc_graph_load(e, &key, device, &g);
            info->load_us = us_since(t2);
            if (rc) rc = kc_err_prefix(rc, "graph '%s': the %s image compiled for device %d (%d.%d) could not be loaded",
                                       d->name, target, device, major, minor);
        }
        kc_entry_free(e);
        if (nc) kc_graph_count_after_miss_(c, &key, info, rc);
    }
    kc_key_builder_free(kb);
    if (!rc && (rc = strict_remote(c)) != KC_OK) kc_graph_release(g), g = NULL; /* not published yet: freed */
    if (rc) return rc;
    *out = kc_loaded_publish(g, info->source != KC_FROM_BYPASS);
    info->total_us = us_since(t0);
    return KC_OK;
}

/* kc_graph_compile and kc_graph_get once the caller's info is checked (graph/info.c): `info_out` is kcache's
 * own, of this version.  A failure's status is the one its record holds ([Note: cleanup keeps the error]). */
int kc_graph_compile_(kc_cache *c, const kc_graph_desc *d, const char *target, kc_graph_info *info_out) {
    return kc_err_returning(graph_compile(c, d, target, info_out), "kc_graph_compile");
}

int kc_graph_get_(kc_cache *c, const kc_graph_desc *d, int device, kc_graph **out, kc_graph_info *info_out) {
    return kc_err_returning(graph_get(c, d, device, out, info_out), "kc_graph_get");
}

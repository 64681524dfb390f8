/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph_key.c — the key of a graph description.
 *
 * The one idea: a description is reduced to canonical bytes — kernels with their sources and
 * headers, the launch programs of both passes, the wrappers, runtime metadata, the inputs'
 * metadata (symbolic sizes by their stable ids), saved-tensor hooks — and that, with the
 * normalised options, the toolchain, the backend and the declared global state, is the key.
 * The GPU architecture is not in the key: it picks the variant ([Note: variant selection]).
 * Finer digests (per kernel source and options, per pass program) are noted for explain.
 *
 * A description remembers its last key ([Note: key memo]), so a repeated lookup hashes nothing.
 *
 * Callers: lookup.c and explain.c, and kc_graph_key's public callers.  Changing any byte
 * hashed here changes every key: the golden key test (tests/key) must then change with
 * KC_ENTRY_FORMAT_VERSION.  Must not: read files or load the compiler (a hit needs neither).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../cache/internal.h"
#include "../cache/record.h"
#include "../common/internal.h"
#include "../compile/toolkit.h"
#include "graph_internal.h"
#include "program.h"

/* The toolkit headers' digest when a kernel asks for them ("" when none does). */
int kc_graph_toolkit_id_(kc_cache *c, const kc_graph_desc *d, char out[33]) {
    out[0] = '\0';
    int any = kc_spec_direct_lazy_(d) ? d->direct->toolkit : 0;
    for (size_t i = 0; !kc_spec_direct_lazy_(d) && i < d->nkernels; i++)
        any |= (d->kernels[i].flags & KC_KERNEL_TOOLKIT_HEADERS) != 0;
    if (!any || kc_toolkit_digest_known(out)) return KC_OK; /* walked in this process: no name to format */
    char who[300];
    snprintf(who, sizeof who, "graph '%.200s'", d->name);
    return kc_toolkit_id_for_(c, who, out);
}

int kc_toolkit_id_for_(kc_cache *c, const char *who, char out[33]) {
    out[0] = '\0';
    if (kc_toolkit_digest_known(out))
        return KC_OK; /* walked in this process: kc_toolkit_digest's answer, no folder asked */
    char memo[4096];
    int have_memo = c && kc_cache_toolkit_dir_(c, false, memo, sizeof memo) == KC_OK;
    int write_memo = have_memo && kc_cache_toolkit_dir_(c, true, memo, sizeof memo) == KC_OK; /* not read-only */
    int rc = kc_toolkit_digest(have_memo ? memo : NULL, write_memo, out);
    if (rc != KC_ENONVRTC) return rc ? kc_err_prefix(rc, "%s asks for the toolkit's headers", who) : KC_OK;
    /* No toolkit here (a GPU host with the driver only): the digest pinned, or the one the
     * cache recorded when it stored such entries (kc_cache_toolkit_note_) — never a guess. */
    char why[300];
    snprintf(why, sizeof why, "%s", kc_error_last()->message);
    const char *pin = kc_cache_settings_(c)->toolkit_headers;
    if (pin && *pin) {
        if (strlen(pin) != 32 || strspn(pin, "0123456789abcdef") != 32)
            return kc_err(KC_EINVAL,
                          "KCACHE_TOOLKIT_HEADERS='%.64s' is not a toolkit headers identity (32 lowercase hex, "
                          "as `kcache toolchain` prints it)",
                          pin);
        memcpy(out, pin, 33);
        return KC_OK;
    }
    kc_record r;
    size_t found = 0;
    if (c && kc_record_load_(c, &r) == KC_OK) {
        size_t pl = strlen(KC_TOOLKIT_RECORD_PREFIX);
        for (size_t i = 0; i < r.n; i++)
            if (strncmp(r.name[i], KC_TOOLKIT_RECORD_PREFIX, pl) == 0 && strlen(r.name[i]) == pl + 32 &&
                strspn(r.name[i] + pl, "0123456789abcdef") == 32 && found++ == 0)
                memcpy(out, r.name[i] + pl, 33);
        kc_record_free_(&r);
    }
    if (found == 1) return KC_OK;
    out[0] = '\0';
    return kc_err(KC_ENONVRTC,
                  "%s asks for the toolkit's headers, and %s; %s: set KCACHE_CUDA_INCLUDE, or pin "
                  "KCACHE_TOOLKIT_HEADERS to the identity `kcache toolchain` prints where the entries were made",
                  who, why, found ? "the cache recorded several toolkits" : "the cache recorded none");
}

int kc_graph_key(const kc_graph_desc *d, kc_key *out, kc_key_builder **kb_out) {
    return kc_graph_key_in(NULL, d, out, kb_out);
}

/*
 * [Note: key memo] A key is a function of three things: the description, the toolchain identity
 * the cache chose (kc_cache_toolchain) and the toolkit headers' digest (kc_graph_toolkit_id_,
 * per cache folder and environment).  The last two are cheap to ask (each is memoised where it
 * is made), the first costs the hashing of every source and program byte.  So the description
 * keeps its last key with the two identities it was computed under: a caller that needs only the
 * key (no builder) gets it when both identities are the same as then, and computes it otherwise
 * — another cache, a pinned toolchain, another toolkit never see a stale key, because they are
 * compared, not assumed.  Every builder that changes the description drops the memo first
 * (kc_graph_desc_changed_, desc.c), and a key computed while a change happened (its generation
 * moved) is not kept.  The memo lives under a mutex: lookups of one description run on many
 * threads.  A caller that wants the builder (its digests go into an entry written on a miss;
 * explain lists them) always computes, and refreshes the memo.
 */
static int memo_get(const kc_graph_desc *d, const char *tc, const char *tk, kc_key *out, uint64_t *gen) {
    kc_key_memo *m = &((kc_graph_desc *)d)->key_memo; /* the memo is not the description's meaning */
    pthread_mutex_lock(&m->mu);
    int hit = m->valid && strcmp(m->toolchain, tc) == 0 && strcmp(m->toolkit, tk) == 0;
    if (hit) *out = m->key;
    *gen = m->gen;
    pthread_mutex_unlock(&m->mu);
    return hit;
}

static void memo_put(const kc_graph_desc *d, const char *tc, const char *tk, const kc_key *key, uint64_t gen,
                     const char *vouched_variant) {
    kc_key_memo *m = &((kc_graph_desc *)d)->key_memo;
    if (strlen(tc) >= sizeof m->toolchain || strlen(tk) >= sizeof m->toolkit) return;
    pthread_mutex_lock(&m->mu);
    if (m->gen == gen) { /* no change since the key's computation began */
        m->key = *key;
        strcpy(m->toolchain, tc);
        strcpy(m->toolkit, tk);
        m->valid = 1;
        snprintf(m->vouched, sizeof m->vouched, "%s", vouched_variant ? vouched_variant : "");
    }
    pthread_mutex_unlock(&m->mu);
}

/* The memo's key when its toolkit digest was vouched for by the direct manifest of `variant` under toolchain `tc`. */
static int memo_get_vouched(const kc_graph_desc *d, const char *tc, const char *variant, kc_key *out, uint64_t *gen) {
    kc_key_memo *m = &((kc_graph_desc *)d)->key_memo;
    pthread_mutex_lock(&m->mu);
    int hit = m->valid && m->vouched[0] && strcmp(m->vouched, variant) == 0 && strcmp(m->toolchain, tc) == 0;
    if (hit) *out = m->key;
    *gen = m->gen;
    pthread_mutex_unlock(&m->mu);
    return hit;
}

static int key_compute(const kc_graph_desc *d, const char *toolchain, const char *toolkit, kc_key *out,
                       kc_key_builder **kb_out);

int kc_graph_key_in(kc_cache *c, const kc_graph_desc *d, kc_key *out, kc_key_builder **kb_out) {
    if (!d || !out) return kc_err(KC_EINVAL, "kc_graph_key: NULL argument");
    if (kb_out) *kb_out = NULL;
    int rrc = kc_spec_direct_ready_(d); /* the key from the files read ([Note: spec direct mode]) */
    if (rrc) return rrc;
    /* The toolchain by its identity, never by loading it: a hit needs no compiler
     * (cache/toolchain_choice.c; a miss checks it may compile, lookup.c). */
    kc_toolchain_choice tc;
    int rc = kc_cache_toolchain(c, &tc);
    if (rc) return rc;
    char toolkit[33];
    if ((rc = kc_graph_toolkit_id_(c, d, toolkit))) return rc;
    uint64_t gen;
    if (memo_get(d, tc.id, toolkit, out, &gen) && !kb_out) return KC_OK;
    kc_key key;
    if ((rc = key_compute(d, tc.id, toolkit, &key, kb_out))) return rc;
    memo_put(d, tc.id, toolkit, &key, gen, NULL);
    *out = key;
    return KC_OK;
}

static int asks_toolkit(const kc_graph_desc *d) {
    if (kc_spec_direct_lazy_(d)) return d->direct->toolkit;
    for (size_t i = 0; i < d->nkernels; i++)
        if (d->kernels[i].flags & KC_KERNEL_TOOLKIT_HEADERS) return 1;
    return 0;
}

/* The name of a graph's direct manifest for one variant: its key without the toolkit's digest,
 * under toolchain `tc`, and the variant — the files a compile reads depend on the target
 * (__CUDA_ARCH__ selects headers), so each variant vouches only for itself. */
#define DIRECT_NAME_MAX (KC_KEY_HEX_LEN + 8 + 1 + KC_VARIANT_MAX + 1)
static int direct_name(const kc_graph_desc *d, const char *tc, const char *variant, char name[DIRECT_NAME_MAX]) {
    int rc = kc_variant_check(variant);
    if (rc) return rc;
    kc_key k0;
    if (kc_spec_direct_lazy_(d) && strcmp(tc, d->direct->toolchain) == 0) k0 = d->direct->key0; /* the memo's */
    else if ((rc = kc_spec_direct_ready_(d)) || (rc = key_compute(d, tc, "", &k0, NULL))) return rc;
    memcpy(name, "direct-", 7);
    kc_key_to_hex(&k0, name + 7);
    snprintf(name + 7 + KC_KEY_HEX_LEN, DIRECT_NAME_MAX - 7 - KC_KEY_HEX_LEN, ".%s", variant);
    return KC_OK;
}

static int lookup_key(kc_cache *c, const kc_graph_desc *d, const char *variant, kc_key *out, int *vouched) {
    *vouched = 0;
    /* Where the toolkit's headers are absent (a driver-only host: the digest pinned or recorded)
     * there is nothing to walk, and the key's memo serves. */
    if (!c || !d || !out || !variant || !asks_toolkit(d) || kc_toolkit_digest_known(NULL) || !kc_toolkit_present())
        return kc_graph_key_in(c, d, out, NULL);
    kc_toolchain_choice tc;
    int rc = kc_cache_toolchain(c, &tc);
    if (rc) return rc;
    uint64_t gen;
    if (memo_get_vouched(d, tc.id, variant, out, &gen)) { /* a repeated lookup: no file system call */
        *vouched = 1;
        return KC_OK;
    }
    char memo[4096], name[DIRECT_NAME_MAX], tk[33];
    if (kc_cache_toolkit_dir_(c, false, memo, sizeof memo) != KC_OK) { /* a read-only cache reads them too */
        kc_error_clear();
        return kc_graph_key_in(c, d, out, NULL);
    }
    if (direct_name(d, tc.id, variant, name) != KC_OK || !kc_toolkit_direct(memo, name, tk)) {
        kc_error_clear();
        return kc_graph_key_in(c, d, out, NULL); /* the walk, as without a manifest */
    }
    kc_key key;
    if ((rc = key_compute(d, tc.id, tk, &key, NULL))) return rc;
    memo_put(d, tc.id, tk, &key, gen, variant);
    *out = key;
    *vouched = KC_VOUCHED_TOOLKIT;
    return KC_OK;
}

/* The key of a description vouched for and not read ([Note: spec direct mode] in spec_direct.c): the
 * memo's, when the toolchain and the toolkit digest (computed as for any lookup: the toolkit's direct
 * manifest named by the memo's key without the digest, else the walk) are the memo's.  KC_OK (the key
 * in *out), KC_MISS (the description must be read), or an error. */
static int vouched_key(kc_cache *c, const kc_graph_desc *d, const char *variant, kc_key *out, int *vouched) {
    const kc_spec_direct *sd = d->direct;
    kc_toolchain_choice tc;
    int rc = kc_cache_toolchain(c, &tc);
    if (rc) return rc;
    if (strcmp(tc.id, sd->toolchain) != 0) return KC_MISS;
    /* The memo's generation before the description is found still vouched for: a first read of its
     * files in between (another thread) changes it, and the key below is then not put in the memo. */
    kc_key_memo *m = &((kc_graph_desc *)d)->key_memo;
    pthread_mutex_lock(&m->mu);
    uint64_t gen = m->gen, g2;
    pthread_mutex_unlock(&m->mu);
    if (!kc_spec_direct_vouches_(d)) return KC_MISS;
    kc_key mk;
    /* A repeated lookup: the manifest vouched in this process, as below — unless a walk since knows
     * the digest (it may be another: below, the walked digest is compared), as lookup_key asks. */
    if (sd->toolkit && !kc_toolkit_digest_known(NULL) && kc_toolkit_present() &&
        memo_get_vouched(d, tc.id, variant, &mk, &g2) && g2 == gen && memcmp(&mk, &sd->key, sizeof mk) == 0) {
        *vouched |= KC_VOUCHED_TOOLKIT;
        *out = sd->key;
        return KC_OK;
    }
    char tk[33] = "", memo[4096], name[DIRECT_NAME_MAX];
    if (sd->toolkit && !kc_toolkit_digest_known(NULL) && kc_toolkit_present() &&
        kc_cache_toolkit_dir_(c, false, memo, sizeof memo) == KC_OK && direct_name(d, tc.id, variant, name) == KC_OK) {
        if (kc_toolkit_direct(memo, name, tk)) *vouched |= KC_VOUCHED_TOOLKIT;
        else tk[0] = '\0';
    }
    kc_error_clear();
    if (sd->toolkit && !tk[0] && (rc = kc_graph_toolkit_id_(c, d, tk))) return rc;
    if (strcmp(tk, sd->digest) != 0) return KC_MISS;
    *out = sd->key;
    if (*vouched & KC_VOUCHED_TOOLKIT) memo_put(d, tc.id, tk, out, gen, variant); /* the key of (tc, tk) */
    return KC_OK;
}

/* The memo of a description read whole from its spec, once its key is known (spec_direct.c). */
static void record_spec(kc_cache *c, const kc_graph_desc *d, const kc_key *key) {
    if (!d->direct || !d->direct->recordable || __atomic_load_n(&d->direct->recorded, __ATOMIC_ACQUIRE)) return;
    char tc[KC_TOOLCHAIN_ID_MAX], tk[33];
    kc_key_memo *m = &((kc_graph_desc *)d)->key_memo;
    pthread_mutex_lock(&m->mu);
    int known = m->valid && memcmp(&m->key, key, sizeof *key) == 0;
    if (known) memcpy(tc, m->toolchain, sizeof tc), memcpy(tk, m->toolkit, sizeof tk);
    pthread_mutex_unlock(&m->mu);
    kc_key k0 = *key;
    if (!known || kc_graph_uncacheable_(d) || (tk[0] && key_compute(d, tc, "", &k0, NULL) != KC_OK)) {
        kc_error_clear();
        return;
    }
    kc_spec_direct_record_(c, d, tc, tk, key, &k0);
}

int kc_graph_key_lookup_(kc_cache *c, const kc_graph_desc *d, const char *variant, kc_key *out, int *vouched) {
    *vouched = 0;
    if (c && d && out && variant && kc_spec_direct_vouches_(d)) { /* never after a failed read */
        int rc = vouched_key(c, d, variant, out, vouched);
        if (rc == KC_OK) *vouched |= KC_VOUCHED_SPEC; /* confirmed (the files read) before anything but a local hit */
        if (rc != KC_MISS) return rc;
        *vouched = 0;
        kc_log(KC_LOG_GRAPH, "%s: the spec's memo is of another toolchain or toolkit: reading it", d->name);
    }
    int rc = kc_spec_direct_ready_(d);
    if (rc) return rc;
    rc = lookup_key(c, d, variant, out, vouched);
    if (rc == KC_OK && c && d && d->direct) record_spec(c, d, out);
    return rc;
}

/* The watch's begin and end, and what an entry teaches, never fail and never touch the thread's error
 * record: the end runs after a failed compile, whose status and NVRTC log must reach the caller
 * ([Note: cleanup keeps the error] in common/internal.h). */
void kc_graph_watch_begin_(kc_cache *c, const kc_graph_desc *d, kc_toolkit_watch **w) {
    char memo[4096];
    *w = NULL;
    kc_err_saved keep;
    kc_err_save(&keep);
    /* No watch for a read-only cache: it would record a manifest it may not write. */
    if (c && d && asks_toolkit(d) && kc_cache_toolkit_dir_(c, true, memo, sizeof memo) == KC_OK)
        kc_toolkit_watch_begin(w);
    kc_err_restore(&keep);
}

void kc_graph_watch_end_(kc_cache *c, const kc_graph_desc *d, const char *toolchain, const char *variant,
                         kc_toolkit_watch *w, int record, char **reads) {
    *reads = NULL;
    if (!w) return;
    kc_err_saved keep;
    kc_err_save(&keep);
    char memo[4096], name[DIRECT_NAME_MAX];
    int ok = record && kc_cache_toolkit_dir_(c, true, memo, sizeof memo) == KC_OK &&
             direct_name(d, toolchain, variant, name) == KC_OK;
    kc_toolkit_watch_end(w, ok ? memo : NULL, ok ? name : NULL, ok, reads);
    kc_err_restore(&keep);
}

void kc_graph_direct_from_entry_(kc_cache *c, const kc_graph_desc *d, const char *variant, const kc_entry *e) {
    char walked[33];
    if (!c || !d || !e || !variant || !asks_toolkit(d) || !kc_toolkit_digest_known(walked))
        return; /* vouched: nothing to learn */
    kc_key_memo *m = &((kc_graph_desc *)d)->key_memo;
    pthread_mutex_lock(&m->mu); /* once per description and process */
    int first = m->direct_gen != m->gen + 1;
    m->direct_gen = m->gen + 1;
    pthread_mutex_unlock(&m->mu);
    if (!first) return;
    kc_err_saved keep;
    kc_err_save(&keep);
    kc_toolchain_choice tc;
    char memo[4096], name[DIRECT_NAME_MAX], tk[33], *reads = kc_malloc(KC_ORIGIN_VALUE_MAX + 1);
    if (reads && kc_entry_origin(e, "toolkit_reads", reads, KC_ORIGIN_VALUE_MAX + 1) == KC_OK &&
        kc_cache_toolkit_dir_(c, true, memo, sizeof memo) == KC_OK && kc_cache_toolchain(c, &tc) == KC_OK &&
        direct_name(d, tc.id, variant, name) == KC_OK &&
        !(kc_toolkit_direct(memo, name, tk) && strcmp(tk, walked) == 0)) /* one that vouches already stays */
        kc_toolkit_direct_from_reads(memo, name, reads);
    kc_err_restore(&keep);
    free(reads);
}

/* Kernel i's part of the key: its name, file, source, headers, flags, normalized options, include digest (and,
 * with `notes`, the finer digests explain reads: which header, source or options of which kernel changed). */
static int key_kernel(kc_key_builder *kb, size_t i, const gkernel *g, int notes) {
    int rc = KC_OK;
    kc_key_add_string(kb, KC_COMP_GRAPH, "kernel.name", g->name);
    kc_key_add_string(kb, KC_COMP_GRAPH, "kernel.file", g->file ? g->file : "");
    kc_key_add_string(kb, KC_COMP_GRAPH, "kernel.source", g->source);
    char *norm, label[64];
    for (size_t h = 0; h < g->nheaders && !rc; h++) {
        kc_key_add_string(kb, KC_COMP_GRAPH, "header.name", g->headers[h].name);
        kc_key_add_string(kb, KC_COMP_GRAPH, "header.source", g->headers[h].source);
        /* Finer digest, for explain: which header of which kernel changed. */
        if (!notes) continue;
        snprintf(label, sizeof label, "kernels[%zu].headers[%.36s]", i, g->headers[h].name);
        rc = kc_key_note(kb, label, g->headers[h].source, strlen(g->headers[h].source));
    }
    if (rc) return rc;
    if (g->flags) kc_key_add_u64(kb, KC_COMP_OPTIONS, "kernel.flags", g->flags); /* absent: keys as before */
    kc_kernel_src k = kc_graph_kernel_src(g);
    if ((rc = kc_options_normalize(&k, &norm))) return rc;
    kc_key_add_string(kb, KC_COMP_OPTIONS, g->name, norm);
    if (notes) { /* Finer digests, for explain: this kernel's source (with its headers) and options. */
        kc_buf src = {0};
        kc_buf_put_str(&src, g->source);
        for (size_t h = 0; h < g->nheaders; h++)
            kc_buf_put_str(&src, g->headers[h].name), kc_buf_put_str(&src, g->headers[h].source);
        snprintf(label, sizeof label, "kernels[%zu].source", i);
        if (!src.failed) rc = kc_key_note(kb, label, src.data, src.len);
        else rc = kc_err(KC_ENOMEM, "graph key: out of memory");
        kc_buf_free(&src);
        snprintf(label, sizeof label, "kernels[%zu].options", i);
        if (!rc) rc = kc_key_note(kb, label, norm, strlen(norm));
    }
    free(norm);
    if (g->include_digest) kc_key_add_string(kb, KC_COMP_OPTIONS, "include_digest", g->include_digest);
    return rc;
}

/* The launch programs of both passes (with a note each) and the wrappers' bytes: the key's "program". */
static int key_program(kc_key_builder *kb, const kc_graph_desc *d) {
    int rc = KC_OK;
    kc_buf prog = {0};
    kc_program_encode(d, KC_PASS_FORWARD, &prog);
    size_t fwd_len = prog.len;
    kc_program_encode(d, KC_PASS_BACKWARD, &prog);
    if (!prog.failed) rc = kc_key_note(kb, "program.forward", prog.data, fwd_len);
    if (!rc && !prog.failed) rc = kc_key_note(kb, "program.backward", prog.data + fwd_len, prog.len - fwd_len);
    kc_wrappers_encode_items(d, &prog); /* the wrappers' bytes without their count */
    if (prog.failed && !rc) rc = kc_err(KC_ENOMEM, "graph key: out of memory");
    if (!rc) rc = kc_key_add_bytes(kb, KC_COMP_GRAPH, "program", prog.data, prog.len);
    kc_buf_free(&prog);
    return rc;
}

/* Inputs: symbolic sizes by the stable id of their symbol's name. */
static int key_inputs(kc_key_builder *kb, const kc_graph_desc *d) {
    int rc = KC_OK;
    for (size_t i = 0; i < d->ntensors && !rc; i++) {
        const gtensor *t = &d->tensors[i];
        if (t->role != KC_ROLE_INPUT) continue;
        kc_tensor_meta m;
        memset(&m, 0, sizeof m);
        m.dtype = t->dtype;
        m.device = KC_DEVICE_CUDA;
        m.rank = t->rank;
        m.requires_grad = t->requires_grad;
        for (int r = 0; r < t->rank; r++) {
            if (kc_graph_is_uint(t->sizes[r])) m.sizes[r].value = (int64_t)strtoll(t->sizes[r], NULL, 10);
            else m.sizes[r].sym = t->sizes[r];
            if (kc_graph_is_uint(t->strides[r])) m.strides[r].value = (int64_t)strtoll(t->strides[r], NULL, 10);
            else m.strides[r].sym = t->strides[r];
        }
        rc = kc_key_add_tensor(kb, &m);
    }
    return rc;
}

/* The key itself: every byte of the description that can change the machine code or the launch. */
static int key_compute(const kc_graph_desc *d, const char *toolchain, const char *toolkit, kc_key *out,
                       kc_key_builder **kb_out) {
    int rc;
    kc_key_builder *kb;
    if ((rc = kc_key_builder_new(&kb))) return rc;
    const int notes = kb_out != NULL; /* the finer digests, for an entry's META and explain */
    if (!notes) kc_key_builder_lean_(kb);
    kc_key_add_u64(kb, KC_COMP_FORMAT, "entry_format", KC_ENTRY_FORMAT_VERSION);
    /* How a graph entry's kernels were bound to their lowered names: 2, only as a compile recorded them
     * ([Note: recorded names] in unitstore.c).  Entries of earlier builds may hold a lowering completed
     * from a stored unit's image, so they live under other keys and are never read. */
    kc_key_add_u64(kb, KC_COMP_FORMAT, "kernel_binding", KC_GRAPH_BINDING_VERSION);
    for (size_t i = 0; i < d->nkernels && !rc; i++) rc = key_kernel(kb, i, &d->kernels[i], notes);
    if (!rc && toolkit[0]) { /* the toolkit's headers, as the kernels that ask for them see them */
        rc = kc_key_add_string(kb, KC_COMP_TOOLCHAIN, "toolkit_headers", toolkit);
        if (!rc) rc = kc_key_note(kb, "toolkit_headers", toolkit, 32);
    }
    if (!rc) rc = key_program(kb, d);
    if (!rc) rc = kc_key_add_bytes(kb, KC_COMP_GRAPH, "runtime_meta", d->runtime_meta, d->runtime_meta_len);
    if (!rc) rc = key_inputs(kb, d);
    for (size_t i = 0; i + 1 < d->nhooks && !rc; i += 2) {
        rc = kc_key_add_string(kb, KC_COMP_HOOKS, "hook.name", d->hooks[i]);
        if (!rc) rc = kc_key_add_string(kb, KC_COMP_HOOKS, "hook.hash", d->hooks[i + 1]);
    }
    if (!rc) rc = kc_key_add_string(kb, KC_COMP_TOOLCHAIN, "nvrtc", toolchain);
    if (!rc) rc = kc_key_add_string(kb, KC_COMP_BACKEND, "backend", d->backend);
    if (!rc) rc = kc_key_add_u64(kb, KC_COMP_GLOBALS, "globals", d->globals);
    if (!rc) rc = kc_key_finish(kb, out);
    if (rc || !kb_out) kc_key_builder_free(kb);
    else *kb_out = kb;
    return rc;
}

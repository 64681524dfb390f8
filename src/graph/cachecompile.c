/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cachecompile.c — kc_cache_compile (kcache/program.h): one kernel source with its name
 * expressions, for one target, through the cache.
 *
 * The one idea: a single-source compile is a graph's compile unit asked for alone.  The kernel
 * is given once per name expression (kc_units_group makes them one unit), so its key is
 * kc_unit_key_'s, its record "<unit key>.unit" and its image are unitstore.c's, and it is found
 * or compiled by kc_units_obtain_ (single-flight per unit, must-hit refusal, strict refusals):
 * there is no second cache path, and a graph on the same source, options and names for the same
 * target shares the record.  Above that, the handle's memo (progmemo.c) answers a warm repeat.
 * Each call counts exactly one lookup outcome, the one it returns, with its time — or none when
 * its arguments were refused before any lookup.
 *
 * Callers: applications, the CLI (`kcache compile`), the Python package.  Must not: store what
 * is not cacheable, compile under must-hit, or count an outcome other than the one it returns.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../cache/internal.h"
#include "../cache/record.h"
#include "../common/api.h"
#include "../compile/options.h"
#include "../compile/params.h"
#include "../compile/targets.h"
#include "graph_internal.h"

/* One call's state: the inputs as units take them, and what came back. */
typedef struct ccall {
    kc_cache *c;
    kc_kernel_src *ks; /* one per name expression: the unit's kernels */
    const char *const *names;
    size_t n;
    kc_target target;
    kc_units u;
    kc_unit_set set;
    kc_toolchain_choice tc;
    char headers[33], meta[256], label[300], hex[KC_KEY_HEX_LEN + 1];
    kc_key key;
    int cacheable, memo; /* memo: the handle's memo asked and filled (not in a disabled cache) */
    const char *why;     /* why not cacheable */
} ccall;

/* Every argument, before anything is looked up (no outcome is counted for a refused call). */
static int check_args(kc_cache *c, const kc_kernel_src *k, const char *const *names, size_t nnames, const char *target,
                      kc_program **out) {
    if (!c || !k || !names || !target || !out)
        return kc_err(KC_EINVAL, "kc_cache_compile: NULL argument (%s)",
                      !c        ? "c"
                      : !k      ? "k"
                      : !names  ? "names"
                      : !target ? "target"
                                : "out");
    int rc = kc_api_version("kc_cache_compile", "kc_kernel_src", "KC_KERNEL_SRC_INIT", k->version,
                            KC_KERNEL_SRC_VERSION);
    if (rc) return rc;
    if (!k->source) return kc_err(KC_EINVAL, "kc_cache_compile: the kernel's source is NULL");
    if ((rc = kc_kernel_src_arrays_ok_("kc_cache_compile", k))) return rc;
    if (nnames == 0 || nnames > KC_PROGRAM_NAMES_MAX)
        return kc_err(KC_EINVAL, "kc_cache_compile: %zu name expressions; give 1 to %d", nnames, KC_PROGRAM_NAMES_MAX);
    for (size_t i = 0; i < nnames; i++) {
        if (!names[i] || !*names[i])
            return kc_err(KC_EINVAL, "kc_cache_compile: name expression %zu is %s; give the kernel's name", i,
                          names[i] ? "empty" : "NULL");
        if (strlen(names[i]) > 4096)
            return kc_err(KC_EINVAL, "kc_cache_compile: name expression %zu is %zu bytes long (at most 4096)", i,
                          strlen(names[i]));
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return kc_err(KC_EINVAL, "kc_cache_compile: name expression '%.200s' is given twice (%zu and %zu)",
                              names[i], j, i);
    }
    return KC_OK;
}

/* Whether the source is cacheable (every name's kernel scanned); a bypass in a strict cache refused.
 * Asked only when the memo did not answer: the memo holds only what was found cacheable under
 * exactly these inputs (the scan reads nothing the key does not hold). */
static int scan_cacheable(ccall *x) {
    x->cacheable = 1;
    for (size_t i = 0; i < x->n; i++)
        if (x->cacheable && !kc_kernel_cacheable(&x->ks[i], &x->why)) x->cacheable = 0;
    if (!x->cacheable && kc_cache_strict_(x->c))
        return kc_err(KC_EINVAL, "%s: not cacheable (%s), and the cache is strict (KCACHE_STRICT)", x->label, x->why);
    return KC_OK;
}

/* The unit, its toolchain and its key. */
static int prepare(ccall *x, const kc_kernel_src *k, const char *target) {
    int rc = kc_target_parse(target, &x->target); /* the public boundary: parsed here, once */
    if (rc) return rc;
    snprintf(x->label, sizeof x->label, "kc_cache_compile of '%.200s'", k->file ? k->file : "<source>");
    for (size_t i = 0; i < x->n; i++)
        x->ks[i] = *k, x->ks[i].version = KC_KERNEL_SRC_VERSION, x->ks[i].name = x->names[i];
    kc_units_group(x->ks, x->n, &x->u);
    if (x->u.n != 1) return kc_err(KC_EINVAL, "%s: its names do not make one compile unit", x->label);
    rc = kc_cache_toolchain(x->c, &x->tc); /* pinned, local, or recorded: a host without NVRTC keys too */
    x->headers[0] = '\0';
    if (!rc && (k->flags & KC_KERNEL_TOOLKIT_HEADERS)) rc = kc_toolkit_id_for_(x->c, x->label, x->headers);
    if (rc) return rc;
    kc_unit_set_init_(&x->set, x->ks, x->n, &x->u, &x->target, x->tc.id, x->headers);
    rc = kc_unit_key_(&x->set, 0, &x->key, NULL);
    if (!rc) kc_key_to_hex(&x->key, x->hex);
    return rc;
}

/* Asked by the unit machinery only when the unit is to be compiled (nothing stored): this host's
 * NVRTC must be the key's toolchain and know the target; the records it stores carry its meta. */
static int may_compile(void *arg) {
    ccall *x = arg;
    int rc = kc_cache_toolchain_can_compile_(&x->tc);
    if (!rc) rc = kc_target_compilable_(&x->target);
    if (!rc) rc = kc_unit_toolchain_meta_(x->headers, x->meta);
    return rc;
}

/* The program of a unit found or compiled: each name's parameter table read from the image. */
static int make_program(const ccall *x, const kc_compiled *r, int outcome, int compiled, kc_program **out) {
    static const char *const cls[] = {"any", "int", "float", "bytes"};
    kc_params tab[KC_PROGRAM_NAMES_MAX];
    kc_param_info *info[KC_PROGRAM_NAMES_MAX];
    size_t np[KC_PROGRAM_NAMES_MAX], done = 0;
    int rc = KC_OK;
    for (; done < x->n && !rc; done++) {
        memset(&tab[done], 0, sizeof tab[done]), info[done] = NULL, np[done] = 0;
        /* a __device__ variable's name ("&N::v"): a symbol, no parameter table (kcache/program.h) */
        int kernel = kc_params_is_kernel(r->image, r->len, x->target.ptx, r->lowered_names[done]);
        rc = kernel < 0 ? kernel
             : kernel   ? kc_params_read(r->image, r->len, x->target.ptx, r->lowered_names[done], &tab[done])
                        : KC_OK;
        if (!rc && tab[done].n && !(info[done] = kc_calloc(tab[done].n, sizeof *info[done])))
            rc = kc_err(KC_ENOMEM, "out of memory");
        for (size_t j = 0; !rc && j < tab[done].n; j++) {
            const kc_param *p = &tab[done].v[j];
            info[done][j] = (kc_param_info){p->offset, p->size, p->align, cls[p->cls < 4 ? p->cls : 0]};
        }
        if (!rc) np[done] = tab[done].n;
        else rc = kc_err_prefix(rc, "%s: the parameters of '%.200s'", x->label, x->names[done]);
    }
    char tname[16];
    kc_target_name(&x->target, tname);
    kc_program_parts parts = {r->image,
                              r->len,
                              x->target.ptx,
                              tname,
                              x->n,
                              x->names,
                              (const char *const *)r->lowered_names,
                              (const kc_param_info *const *)info,
                              np,
                              x->hex,
                              outcome,
                              compiled && r->log ? r->log : "",
                              compiled ? r->seconds : 0};
    if (!rc && !(*out = kc_program_make_(&parts))) rc = kc_err(KC_ENOMEM, "out of memory");
    for (size_t i = 0; i < done; i++) kc_params_free(&tab[i]), free(info[i]);
    return rc;
}

/* Found or compiled by the unit machinery; the one outcome counted. */
static int obtain(ccall *x, uint64_t t0, kc_program **out) {
    kc_compiled *res[1] = {NULL};
    kc_image_ref refs[1];
    kc_unit_results r;
    memset(&r, 0, sizeof r);
    r.res = res, r.refs = refs, r.may_compile = may_compile, r.may_compile_arg = x;
    int rc = kc_units_obtain_(x->c, &x->set, x->cacheable, 1, x->label, x->meta, &r);
    int outcome = !x->cacheable ? KC_LOOKUP_BYPASS
                  : r.ncompiled ? KC_LOOKUP_COMPILE
                  : r.nremote   ? KC_LOOKUP_REMOTE
                                : KC_LOOKUP_DISK;
    if (!rc && r.store_rc && x->cacheable) kc_log(KC_LOG_GRAPH, "%s: compiled, not stored: %s", x->label, r.store_msg);
    if (!rc && r.ncompiled && !r.store_rc && x->cacheable) { /* for hosts without NVRTC (`kcache toolchain`) */
        kc_cache_toolchain_note_(x->c, x->meta);
        kc_cache_toolkit_note_(x->c, x->meta);
    }
    if (!rc) rc = make_program(x, res[0], outcome, r.ncompiled > 0, out);
    kc_compiled_free(res[0]);
    if (rc == KC_ECOMPILE) kc_cache_count(x->c, &x->key, KC_STAT_COMPILE_ERRORS, 1);
    if (rc == KC_ENOTCACHED) {
        kc_cache_count(x->c, &x->key, KC_STAT_COMPILES_REFUSED, 1);
        rc = kc_err_prefix(rc, "%s (key %s, target %s)", x->label, x->hex, x->set.variant);
    }
    /* A failed call is a miss (as a failed graph build is), a failed bypass no outcome. */
    if (!rc || x->cacheable) kc_cache_count_lookup_(x->c, &x->key, rc ? KC_LOOKUP_COMPILE : outcome, t0);
    if (!rc && x->cacheable && r.store_rc == KC_OK && x->memo) kc_progmemo_put_(x->c, *out);
    return rc;
}

int kc_cache_compile(kc_cache *c, const kc_kernel_src *k, const char *const *names, size_t nnames, const char *target,
                     kc_program **out) {
    uint64_t t0 = kc_mono_ns();
    if (out) *out = NULL;
    int rc = check_args(c, k, names, nnames, target, out);
    if (rc) return rc;
    ccall *x = kc_malloc(sizeof *x);
    kc_kernel_src *ks = kc_malloc(nnames * sizeof *ks);
    if (!x || !ks) {
        free(x), free(ks);
        return kc_err(KC_ENOMEM, "kc_cache_compile: out of memory");
    }
    memset(x, 0, sizeof *x);
    x->c = c, x->ks = ks, x->names = names, x->n = nnames;
    rc = prepare(x, k, target);
    x->memo = kc_cache_mode(c) != KC_CACHE_DISABLED; /* every get misses there: the memo's too */
    if (!rc && x->memo && (*out = kc_progmemo_get_(c, x->hex, names, nnames)) != NULL)
        kc_cache_count_lookup_(c, &x->key, KC_LOOKUP_MEMORY, t0);
    else if (!rc && (rc = scan_cacheable(x)) == KC_OK) rc = obtain(x, t0, out);
    free(ks);
    free(x);
    return rc;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * device.c — device facts in launch expressions, the table of known devices, and large
 * dynamic shared memory.
 *
 * Device facts are reserved names every launch expression and the sizes of outputs, saved
 * tensors and scratch buffers may use (except an input's sizes and strides, which are the
 * caller's contract):
 *   device_sm_count              streaming multiprocessors
 *   device_max_threads_per_sm    resident threads per SM
 *   device_max_threads_per_block threads per block
 *   device_smem_per_block        shared memory per block without opting in (48 KiB)
 *   device_smem_optin            the most shared memory per block a kernel may opt in to
 *   device_smem_per_sm           shared memory per SM
 *   device_warp_size             threads per warp
 * The one idea: the expressions that use them are in the key, their values are not — they are
 * read from the device (cuDeviceGetAttribute) once per loaded graph, so one entry serves every
 * GPU of its variant, each with its own grid.  On a host without a GPU (kc_graph_compile,
 * prewarm) the same expressions are evaluated over a table of known devices: a launch that
 * cannot work on ANY known device that loads the target is a compile error; one that fails on
 * some devices only is refused on those at launch, with a clear error, never sent to the driver.
 *
 * Large dynamic shared memory: a function may use 48 KiB of dynamic shared memory (less its
 * static shared memory) until CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is raised.
 * kc_device_smem_ready raises it to what a launch asks, once per function and size, under a
 * lock (several threads may launch one loaded graph), and refuses what is beyond the device's
 * opt-in limit less the static shared memory.  The fast path (asked ≤ current) is one atomic
 * load.  It runs before every launch with dynamic shared memory, inside a cuda_graph capture too.
 * What is known of the setting is kept once per function handle, not per kernel (two kernels
 * naming one function share the handle and its one record), and the setting is only ever
 * raised: a kernel asking less than another raised it to never lowers it under the other's feet.
 *
 * Callers: expr.c (the names), program.c (decoding), loaded.c (binding at load), run.c (before
 * each launch), lookup.c (the check before a compile).  Must not: launch anything.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "../cuda/internal.h"
#include "argkind.h"
#include "graph_internal.h"
#include "kcache/target.h"
#include "program.h"

enum { F_SMS, F_THREADS_SM, F_THREADS_BLOCK, F_SMEM_BLOCK, F_SMEM_OPTIN, F_SMEM_SM, F_WARP };

static const char *const fact_names[KC_DEVICE_NFACTS] = {
    "device_sm_count",       "device_max_threads_per_sm", "device_max_threads_per_block",
    "device_smem_per_block", "device_smem_optin",         "device_smem_per_sm",
    "device_warp_size",
};

int kc_device_fact(const char *name, size_t len) {
    if (!name || len < 7 || strncmp(name, "device_", 7) != 0) return -1; /* the common case: one compare */
    for (int i = 0; i < KC_DEVICE_NFACTS; i++)
        if (strlen(fact_names[i]) == len && strncmp(fact_names[i], name, len) == 0) return i;
    return -1;
}

const char *kc_device_fact_name(int i) { return i >= 0 && i < KC_DEVICE_NFACTS ? fact_names[i] : NULL; }

int kc_device_facts_read(int device, int64_t *out) {
    kc_cuda_limits l;
    int rc = kc_cuda_device_limits(device, &l);
    if (rc) return kc_err_prefix(rc, "device %d's facts", device);
    out[F_SMS] = l.sm_count;
    out[F_THREADS_SM] = l.max_threads_per_sm;
    out[F_THREADS_BLOCK] = l.max_threads_per_block;
    out[F_SMEM_BLOCK] = l.smem_per_block;
    out[F_SMEM_OPTIN] = l.smem_optin;
    out[F_SMEM_SM] = l.smem_per_sm;
    out[F_WARP] = l.warp_size;
    return KC_OK;
}

/* ---- the known devices (CUDA C Programming Guide, "Technical Specifications per Compute
 * Capability", and the parts' data sheets): what a host without a GPU checks launches against.
 * Several parts of one architecture differ in SM count only. ---- */

typedef struct known {
    const char *name;
    int major, minor;
    int sms, threads_sm, optin, smem_sm;
} known;

#define KIB *1024
static const known KNOWN[] = {
    {"V100", 7, 0, 80, 2048, 96 KIB, 96 KIB},
    {"Jetson AGX Xavier", 7, 2, 8, 2048, 96 KIB, 96 KIB},
    {"T4", 7, 5, 40, 1024, 64 KIB, 64 KIB},
    {"A100", 8, 0, 108, 2048, 163 KIB, 164 KIB},
    {"A30", 8, 0, 56, 2048, 163 KIB, 164 KIB},
    {"A10", 8, 6, 72, 1536, 99 KIB, 100 KIB},
    {"RTX 3090", 8, 6, 82, 1536, 99 KIB, 100 KIB},
    {"Jetson AGX Orin", 8, 7, 16, 1536, 163 KIB, 164 KIB},
    {"L4", 8, 9, 58, 1536, 99 KIB, 100 KIB},
    {"L40S", 8, 9, 142, 1536, 99 KIB, 100 KIB},
    {"H100 PCIe", 9, 0, 114, 2048, 227 KIB, 228 KIB},
    {"H100 SXM", 9, 0, 132, 2048, 227 KIB, 228 KIB},
    {"B200", 10, 0, 148, 2048, 227 KIB, 228 KIB},
    {"B300", 10, 3, 148, 2048, 227 KIB, 228 KIB},
    {"Jetson Thor", 11, 0, 20, 1536, 227 KIB, 228 KIB},
    {"RTX 5090", 12, 0, 170, 1536, 99 KIB, 100 KIB},
    {"GB10", 12, 1, 48, 1536, 99 KIB, 100 KIB},
};
#undef KIB

static void known_facts(const known *k, int64_t *f) {
    f[F_SMS] = k->sms;
    f[F_THREADS_SM] = k->threads_sm;
    f[F_THREADS_BLOCK] = 1024;
    f[F_SMEM_BLOCK] = 48 * 1024;
    f[F_SMEM_OPTIN] = k->optin;
    f[F_SMEM_SM] = k->smem_sm;
    f[F_WARP] = 32;
}

/* Whether a device of the known table loads `target` (canonical name) ([Note: variant selection]). */
static int loads(const known *k, const char *target) {
    char cand[KC_TARGET_CANDIDATES_MAX][16];
    size_t n = kc_target_candidates(k->major, k->minor, cand, KC_TARGET_CANDIDATES_MAX);
    for (size_t i = 0; i < n; i++)
        if (strcmp(cand[i], target) == 0) return 1;
    return 0;
}

/* Evaluate `e` over the device facts `f` alone.  0: it uses a size symbol (not checkable here,
 * *why untouched); 1: evaluated into *v; -1: it fails on this device (*why says how). */
static int eval_on(const char *e, const int64_t *f, int64_t *v, char *why, size_t cap) {
    if (kc_expr_check(e, NULL, 0)) return 0; /* a size symbol: known only at the call */
    if (kc_expr_eval_dev(e, NULL, NULL, 0, f, v) == KC_OK) return 1;
    snprintf(why, cap, "%s", kc_error_last()->message);
    return -1;
}

/* One step on one device: 0 when it can work there, else -1 with *why. */
static int step_on(const gstep *s, const int64_t *f, char *why, size_t cap) {
    static const int64_t gmax[3] = {2147483647, 65535, 65535}, bmax[3] = {1024, 1024, 64};
    static const char *const axis = "xyz";
    int64_t v, threads = 1;
    int all_block = 1, r;
    for (int j = 0; j < 3; j++) {
        if ((r = eval_on(s->grid[j], f, &v, why, cap)) < 0) return -1;
        if (r && (v < 0 || v > gmax[j])) {
            snprintf(why, cap, "grid.%c '%.60s' = %lld is outside 0..%lld", axis[j], s->grid[j], (long long)v,
                     (long long)gmax[j]);
            return -1;
        }
        if ((r = eval_on(s->block[j], f, &v, why, cap)) < 0) return -1;
        if (r && (v < 1 || v > bmax[j])) {
            snprintf(why, cap, "block.%c '%.60s' = %lld is outside 1..%lld", axis[j], s->block[j], (long long)v,
                     (long long)bmax[j]);
            return -1;
        }
        if (r && v > 0 && threads <= 1024) threads *= v;
        all_block &= r == 1;
    }
    if (all_block && threads > f[F_THREADS_BLOCK]) {
        snprintf(why, cap, "%lld threads per block, the most is %lld", (long long)threads,
                 (long long)f[F_THREADS_BLOCK]);
        return -1;
    }
    if ((r = eval_on(s->shared, f, &v, why, cap)) < 0) return -1;
    if (r && (v < 0 || v > f[F_SMEM_OPTIN])) {
        snprintf(why, cap, "shared memory '%.60s' = %lld bytes is over the opt-in limit of %lld", s->shared,
                 (long long)v, (long long)f[F_SMEM_OPTIN]);
        return -1;
    }
    for (size_t a = 0; a < s->nargs; a++) {
        const char *x = s->args[a];
        const kc_argkind *k = kc_argkind_of(x); /* an expression's value: e32:, e64: (args.c's table) */
        if (!k || k->body != KC_AB_EXPR) continue;
        int e32 = k->size == 4;
        if ((r = eval_on(x + strlen(k->spelling), f, &v, why, cap)) < 0) return -1;
        if (r && e32 && (v < INT32_MIN || v > INT32_MAX)) {
            snprintf(why, cap, "argument %zu '%.60s' = %lld does not fit 32 bits", a, x, (long long)v);
            return -1;
        }
    }
    return 0;
}

/* One output's or saved tensor's sizes on one device: 0 when each is fine there, else -1 with *why. */
static int tensor_on(const gtensor *t, const int64_t *f, char *why, size_t cap) {
    for (int r = 0; r < t->rank; r++) {
        int64_t v;
        int k = eval_on(t->sizes[r], f, &v, why, cap);
        if (k < 0) return -1;
        if (k && v < 0) {
            snprintf(why, cap, "size %d '%.60s' = %lld is negative", r, t->sizes[r], (long long)v);
            return -1;
        }
    }
    return 0;
}

/* One scratch buffer on one device: 0 when its size is fine there, else -1 with *why. */
static int scratch_on(const gscratch *s, const int64_t *f, char *why, size_t cap) {
    int64_t v;
    int r = eval_on(s->bytes, f, &v, why, cap);
    if (r < 0) return -1;
    if (r && v < 0) {
        snprintf(why, cap, "scratch size '%.60s' = %lld is negative", s->bytes, (long long)v);
        return -1;
    }
    return 0;
}

int kc_device_check_desc(const kc_graph_desc *d, const kc_target *target) {
    char canon[16];
    if (!d || !target) return KC_OK;
    int rrc = kc_spec_direct_ready_(d);
    if (rrc) return rrc;
    kc_target_name(target, canon); /* parsed once, at the lookup's boundary */
    const known *dev[KC_ARRAY_LEN(KNOWN)];
    size_t nd = 0;
    for (size_t k = 0; k < KC_ARRAY_LEN(KNOWN); k++)
        if (loads(&KNOWN[k], canon)) dev[nd++] = &KNOWN[k];
    if (!nd) return KC_OK;
    int64_t f[KC_ARRAY_LEN(KNOWN)][KC_DEVICE_NFACTS];
    for (size_t k = 0; k < nd; k++) known_facts(dev[k], f[k]);
    size_t idx[2] = {0, 0}, sidx[2] = {0, 0}; /* each pass's own numbering of its steps and scratch buffers */
    char why[256], first[256];
    for (size_t i = 0; i < d->nscratch; i++) {
        const gscratch *s = &d->scratch[i];
        size_t k, pi = s->pass == KC_PASS_BACKWARD;
        for (k = 0; k < nd; k++)
            if (scratch_on(s, f[k], why, sizeof why) == 0) break;
            else if (k == 0) memcpy(first, why, sizeof first);
        if (k == nd)
            return kc_err(KC_ECOMPILE,
                          "graph '%s', %s scratch %zu: %s on every known device that loads %s (%zu, e.g. %s)", d->name,
                          pi ? "backward" : "forward", sidx[pi], first, canon, nd, dev[0]->name);
        sidx[pi]++;
    }
    size_t tidx[2] = {0, 0}; /* outputs', saved tensors' own numbering */
    for (size_t i = 0; i < d->ntensors; i++) {
        const gtensor *t = &d->tensors[i];
        if (t->role != KC_ROLE_OUTPUT && t->role != KC_ROLE_SAVED) continue;
        size_t k, si = t->role == KC_ROLE_SAVED;
        for (k = 0; k < nd; k++)
            if (tensor_on(t, f[k], why, sizeof why) == 0) break;
            else if (k == 0) memcpy(first, why, sizeof first);
        if (k == nd)
            return kc_err(KC_ECOMPILE, "graph '%s', %s %zu: %s on every known device that loads %s (%zu, e.g. %s)",
                          d->name, si ? "saved tensor" : "output", tidx[si], first, canon, nd, dev[0]->name);
        tidx[si]++;
    }
    for (size_t i = 0; i < d->nsteps; i++) {
        const gstep *s = &d->steps[i];
        size_t k, pi = s->pass == KC_PASS_BACKWARD;
        for (k = 0; k < nd; k++)
            if (step_on(s, f[k], why, sizeof why) == 0) break;
            else if (k == 0) memcpy(first, why, sizeof first);
        if (k == nd)
            return kc_err(KC_ECOMPILE,
                          "graph '%s', %s step %zu (kernel '%s'): %s on every known device that loads %s "
                          "(%zu, e.g. %s)",
                          d->name, pi ? "backward" : "forward", idx[pi], d->kernels[s->kernel].name, first, canon, nd,
                          dev[0]->name);
        idx[pi]++;
    }
    return KC_OK;
}

/* ---- large dynamic shared memory ---- */

static pthread_mutex_t smem_mu = PTHREAD_MUTEX_INITIALIZER;

int kc_device_smem_ready(kc_graph *g, const kc_lprog *p, size_t step, unsigned shared) {
    if (!shared) return KC_OK;
    int k = p->steps[step].kernel;
    kc_kfn *kf = &g->kfn[g->kfn[k].fn]; /* the function's record, shared by the kernels naming it */
    if ((int64_t)shared <= (int64_t)__atomic_load_n(&kf->max_dyn, __ATOMIC_ACQUIRE)) return KC_OK;
    const char *pass = p->pass == KC_PASS_BACKWARD ? "backward" : "forward";
    int rc = KC_OK;
    pthread_mutex_lock(&smem_mu);
    if (kf->max_dyn < 0) { /* first need: what the function says of itself */
        int st = 0, dyn = 0;
        rc = kc_cuda_func_smem(g->fns[k], &st, &dyn);
        if (!rc) {
            kf->static_smem = st;
            __atomic_store_n(&kf->max_dyn, dyn, __ATOMIC_RELEASE);
        }
    }
    int64_t limit = g->dev[F_SMEM_OPTIN] - kf->static_smem;
    if (!rc && (int64_t)shared > kf->max_dyn) {
        if ((int64_t)shared > limit)
            rc = kc_err(KC_EINVAL,
                        "%s step %zu (kernel '%s'): %u bytes of dynamic shared memory asked, the most on device "
                        "%d is %lld (opt-in %lld - static %d)",
                        pass, step, g->kfn[k].name, shared, g->device, (long long)limit,
                        (long long)g->dev[F_SMEM_OPTIN], kf->static_smem);
        else if (!(rc = kc_cuda_func_set_max_dynamic_smem(g->fns[k], (int)shared)))
            __atomic_store_n(&kf->max_dyn, (int)shared, __ATOMIC_RELEASE);
        else rc = kc_err_prefix(rc, "%s step %zu (kernel '%s')", pass, step, g->kfn[k].name);
    }
    pthread_mutex_unlock(&smem_mu);
    return rc;
}

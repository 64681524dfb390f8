/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check_run.c — the runner of the CPU references (check.h): a case's inputs made and uploaded, the
 * loaded graph's forward and backward run on the device, fetched and compared with the reference
 * (check.c) within each output's tolerance, and everything released.
 *
 * The one idea: the runner does the device work the same way for every graph; what differs between
 * graphs is data in check.c's table.  Callers: `kcache demo` and the gpu tests, through kcc_check.
 * Must not: touch a device outside kcc_check's call, or judge a case by anything but its reference.
 */
#include "check_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float frand(unsigned *s) { return (float)((rand_r(s) % 20001) - 10000) / 10000.0f; }

static size_t numel(const kc_tensor *t) {
    size_t n = 1;
    for (int r = 0; r < t->rank; r++) n *= (size_t)t->sizes[r];
    return n;
}

/* max |got − want| against max |want|; 1 when within rtol. */
static int compare(const char *what, const float *got, const float *want, size_t n, double rtol, char *msg, size_t cap,
                   double *worst) {
    double maxerr = 0, scale = 1e-6;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]);
        if (!(e <= maxerr)) maxerr = isnan(e) ? INFINITY : e;
    }
    double rel = maxerr / scale;
    if (rel > *worst) *worst = rel;
    if (rel <= rtol) return 1;
    snprintf(msg, cap, "%s: max error %.3g against scale %.3g (tolerance %.0e)", what, maxerr, scale, rtol);
    return 0;
}

/* bf16 <-> float: round to nearest even (no NaN in these inputs), and the exact widening. */
static uint16_t bf16_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float float_of_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* A device tensor read back to the host as floats (f32 as it is, bf16 widened exactly). */
static int fetch(const kc_tensor *t, float **out) {
    size_t n = numel(t);
    *out = calloc(n + 1, sizeof(float));
    if (!*out) return KC_ENOMEM;
    int rc = kc_cuda_synchronize();
    if (rc || t->dtype != KC_DTYPE_BF16) return rc ? rc : kc_cuda_copy_to_host(*out, t->data, n * sizeof(float));
    uint16_t *b = malloc(n * 2 + 2);
    if (!b) return KC_ENOMEM;
    rc = kc_cuda_copy_to_host(b, t->data, n * 2);
    for (size_t e = 0; !rc && e < n; e++) (*out)[e] = float_of_bf16(b[e]);
    free(b);
    return rc;
}

/* A device copy of n host floats, as f32 or (rounded) bf16. */
static int upload(void **dev, const float *h, size_t n, kc_dtype dtype) {
    if (dtype != KC_DTYPE_BF16) {
        int rc = kc_cuda_malloc(dev, n * 4, NULL);
        return rc ? rc : kc_cuda_copy_to_device(*dev, h, n * 4);
    }
    uint16_t *b = malloc(n * 2 + 2);
    if (!b) return KC_ENOMEM;
    for (size_t e = 0; e < n; e++) b[e] = bf16_of(h[e]);
    int rc = kc_cuda_malloc(dev, n * 2, NULL);
    if (!rc) rc = kc_cuda_copy_to_device(*dev, b, n * 2);
    free(b);
    return rc;
}

/* One check's state: the case, the host and device buffers on both sides, and the outcome so far. */
typedef struct crun {
    const rcase *k;
    kc_graph *g;
    const char *graph_name;
    char *msg;
    size_t cap;
    unsigned seed;
    rio io;
    kc_tensor in[MAXIN], out, gout, gin[MAXIN];
    int32_t *lab;
    float *got_y, *got_gx[MAXIN], *got_in[MAXIN], *gy;
    kc_saved *sv;
    int ok, backward_ran;
    double worst;
    char what[96];
} crun;

/* The inputs: host values from the case's ranges (seeded), uploaded; rc. */
static int make_inputs(crun *r) {
    const rcase *k = r->k;
    int rc = 0;
    for (size_t i = 0; i < k->nin && !rc; i++) {
        const tdesc *t = &k->in[i];
        kc_tensor *d = &r->in[i];
        d->dtype = t->labels ? KC_DTYPE_I32 : t->dtype ? t->dtype : KC_DTYPE_F32;
        d->rank = t->rank;
        for (int q = t->rank - 1, st = 1; q >= 0; st *= (int)t->sizes[q], q--)
            d->sizes[q] = t->sizes[q], d->strides[q] = st;
        size_t n = numel(d);
        void *h = calloc(n + 1, 4);
        if (!h) {
            rc = KC_ENOMEM;
            break;
        }
        for (size_t e = 0; e < n; e++) {
            if (t->labels) ((int32_t *)h)[e] = (int32_t)(rand_r(&r->seed) % t->labels);
            else ((float *)h)[e] = t->offset + t->scale * frand(&r->seed);
            if (t->dtype == KC_DTYPE_BF16) ((float *)h)[e] = float_of_bf16(bf16_of(((float *)h)[e]));
        }
        if (t->labels) r->lab = h, r->io.lab = r->lab;
        else r->io.in[i] = h;
        rc = upload(&d->data, h, n, t->labels ? KC_DTYPE_I32 : d->dtype);
    }
    return rc;
}

/* The forward on the device, its output fetched, and the reference's buffers (gy, y, the gradients,
 * an accumulating gradient's starting values on both sides); rc. */
static int run_forward(crun *r) {
    const rcase *k = r->k;
    rio *io = &r->io;
    kc_rng_state rng = {r->seed, 0};
    snprintf(r->what, sizeof r->what, "forward");
    int rc = kc_graph_forward_args(r->g, r->in, k->nin, &r->out, 1, k->forward_only ? NULL : &r->sv, NULL, NULL,
                                   k->rng ? &rng : NULL, k->nargs ? k->args : NULL, k->nargs);
    if (!rc) rc = fetch(&r->out, &r->got_y);
    if (rc) return rc;
    io->ny = numel(&r->out);
    r->gy = calloc(io->ny + 1, sizeof(float));
    io->y = calloc(io->ny + 1, sizeof(float));
    for (size_t i = 0; r->gy && i < io->ny; i++) r->gy[i] = frand(&r->seed);
    for (size_t i = 0; r->gy && r->out.dtype == KC_DTYPE_BF16 && i < io->ny; i++)
        r->gy[i] = float_of_bf16(bf16_of(r->gy[i]));
    for (size_t i = 0; i < k->nin; i++)
        if (io->in[i] && !k->forward_only && !(k->nograd >> i & 1) &&
            !(io->gx[i] = calloc(numel(&r->in[i]) + 1, sizeof(float))))
            rc = KC_ENOMEM;
    /* An accumulating gradient starts at the caller's values, on both sides. */
    for (size_t i = 0; i < k->nin && !rc; i++)
        if (k->accumulate >> i & 1) {
            size_t n = numel(&r->in[i]);
            for (size_t e = 0; e < n; e++) io->gx[i][e] = frand(&r->seed);
            r->gin[i] = r->in[i];
            r->gin[i].data = NULL;
            rc = upload(&r->gin[i].data, io->gx[i], n, KC_DTYPE_F32);
        }
    if (!r->gy || !io->y) rc = KC_ENOMEM;
    io->gy = r->gy;
    io->got_y = r->got_y;
    return rc;
}

/* The reference run, and the forward's output and in-place inputs compared with it; rc. */
static int check_forward(crun *r, int rc) {
    const rcase *k = r->k;
    /* The in-place inputs as the forward left them, read before the reference updates its copy. */
    for (size_t i = 0; i < k->nin && !rc; i++)
        if (k->inplace >> i & 1) rc = fetch(&r->in[i], &r->got_in[i]);
    if (!rc) {
        const char *why = k->ref(&r->io);
        if (why) snprintf(r->msg, r->cap, "%s: %s", r->graph_name, why), r->ok = 0;
    }
    /* bf16 outputs carry 8 significant bits (a rounding is up to 2^-9 of the value): looser bounds. */
    double ftol = r->out.dtype == KC_DTYPE_BF16 ? 1e-2 : 2e-3;
    if (!rc && r->ok) r->ok = compare("forward", r->got_y, r->io.y, r->io.ny, ftol, r->msg, r->cap, &r->worst);
    for (size_t i = 0; i < k->nin && !rc && r->ok; i++)
        if (r->got_in[i]) {
            char name[40];
            snprintf(name, sizeof name, "input %zu updated in place", i);
            r->ok = compare(name, r->got_in[i], r->io.in[i], numel(&r->in[i]), 2e-3, r->msg, r->cap, &r->worst);
        }
    return rc;
}

/* The backward on the device, and each input's gradient compared with the reference's; rc. */
static int run_backward(crun *r) {
    const rcase *k = r->k;
    double btol = r->out.dtype == KC_DTYPE_BF16 ? 2e-2 : 5e-3;
    r->gout = r->out;
    r->gout.data = NULL;
    int rc = upload(&r->gout.data, r->gy, r->io.ny, r->out.dtype);
    snprintf(r->what, sizeof r->what, "backward");
    if (!rc) rc = kc_graph_backward(r->g, r->sv, &r->gout, 1, r->gin, k->nin, NULL);
    if (!rc) r->backward_ran = 1;
    for (size_t i = 0; i < k->nin && !rc && r->ok; i++) {
        if (!r->io.gx[i]) continue; /* labels, and inputs without requires_grad, have no gradient */
        char name[48];
        snprintf(name, sizeof name, "grad of input %zu%s", i, k->accumulate >> i & 1 ? " (accumulated)" : "");
        rc = fetch(&r->gin[i], &r->got_gx[i]);
        if (!rc) r->ok = compare(name, r->got_gx[i], r->io.gx[i], numel(&r->in[i]), btol, r->msg, r->cap, &r->worst);
    }
    return rc;
}

/* Every device and host buffer of the run, released (what the caller owns is left). */
static void release(crun *r) {
    const rcase *k = r->k;
    kc_saved_free(r->sv, NULL);
    int aliased = 0; /* an output that is an input (kc_graph_output_alias) is the caller's: never released */
    for (size_t i = 0; i < k->nin; i++) aliased |= r->out.data && r->out.data == r->in[i].data;
    if (!aliased) kc_tensor_release(&r->out, NULL, NULL);
    for (size_t i = 0; i < k->nin; i++) {
        if (k->accumulate >> i & 1) kc_cuda_free(r->gin[i].data, NULL); /* the caller's buffer */
        else if (r->backward_ran) kc_tensor_release(&r->gin[i], NULL, NULL);
        kc_cuda_free(r->in[i].data, NULL);
        free(r->io.in[i]);
        free(r->io.gx[i]);
        free(r->got_gx[i]);
        free(r->got_in[i]);
    }
    kc_cuda_free(r->gout.data, NULL);
    kc_cuda_synchronize();
    kc_cuda_pop();
    free(r->lab);
    free(r->got_y);
    free(r->gy);
    free(r->io.y);
}

int kcc_check(kc_graph *g, int device, const char *graph_name, char *msg, size_t cap) {
    const rcase *k = kcc_find_case_(graph_name);
    snprintf(msg, cap, "no CPU reference for '%s'", graph_name ? graph_name : "?");
    if (!k) return KC_MISS;
    int rc = kc_cuda_push(device);
    if (rc) {
        snprintf(msg, cap, "%s", kc_error_last()->message);
        return rc;
    }
    crun *r = calloc(1, sizeof *r);
    if (!r) {
        kc_cuda_pop();
        snprintf(msg, cap, "setup of %s failed: out of memory", graph_name);
        return KC_ENOMEM;
    }
    r->k = k, r->g = g, r->graph_name = graph_name, r->msg = msg, r->cap = cap, r->seed = 12345, r->ok = 1;
    rc = make_inputs(r);
    if (!rc) rc = run_forward(r);
    rc = check_forward(r, rc);
    if (!rc && r->ok && !k->forward_only) rc = run_backward(r);
    if (rc)
        snprintf(msg, cap, "%s of %s failed: %s", r->what[0] ? r->what : "setup", graph_name, kc_error_last()->message);
    else if (r->ok)
        snprintf(msg, cap, "forward%s match the CPU reference (worst relative error %.1e)",
                 k->forward_only ? "" : " and backward", r->worst);
    int ok = r->ok;
    release(r);
    free(r);
    return rc ? rc : ok ? KC_OK : KC_ECORRUPT;
}

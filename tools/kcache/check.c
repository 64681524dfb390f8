/* SPDX-License-Identifier: Apache-2.0 */
/*
 * check.c — CPU references for the graphs in kernels/ and the table of cases (see check.h); the
 * runner that compares a loaded graph's forward and backward with them is check_run.c.
 *
 * The one idea: a case is data (input shapes, dtypes and value ranges, the runtime arguments'
 * values, which inputs the graph updates in place, which gradients accumulate into the
 * caller's buffers) plus one reference function; the runner does the device work the same way
 * for every graph.  A reference is plain loops in double or float, written to be obviously
 * right rather than fast: it reads io->in, writes io->y, and ADDS into io->gx (which starts at
 * zero, or at the caller's values for an accumulating gradient); an in-place update writes
 * io->in itself, and the runner compares those inputs after the forward.  It runs only where
 * there is a GPU (`kcache demo`, the gpu tests); nothing here may touch a device but the runner.
 */
#include "check_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float gelu(float x) { return 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }
static float gelu_grad(float x) {
    float u = 0.7978845608f * (x + 0.044715f * x * x * x), t = tanhf(u);
    return 0.5f * (1 + t) + 0.5f * x * (1 - t * t) * 0.7978845608f * (1 + 3 * 0.044715f * x * x);
}

enum { SM_R = 37, SM_C = 1000 };
static const char *ref_softmax(rio *io) {
    const float *x = io->in[0], *gy = io->gy;
    float *y = io->y, *gx = io->gx[0];
    for (int r = 0; r < SM_R; r++) {
        float m = -INFINITY, sum = 0, dot = 0;
        for (int j = 0; j < SM_C; j++) m = fmaxf(m, x[r * SM_C + j]);
        for (int j = 0; j < SM_C; j++) sum += expf(x[r * SM_C + j] - m);
        for (int j = 0; j < SM_C; j++) y[r * SM_C + j] = expf(x[r * SM_C + j] - m) / sum;
        for (int j = 0; j < SM_C; j++) dot += gy[r * SM_C + j] * y[r * SM_C + j];
        for (int j = 0; j < SM_C; j++) gx[r * SM_C + j] = y[r * SM_C + j] * (gy[r * SM_C + j] - dot);
    }
    return NULL;
}

enum { LN_R = 19, LN_D = 333 };
static const char *ref_layer_norm(rio *io) {
    const float *x = io->in[0], *gm = io->in[1], *bt = io->in[2], *gy = io->gy;
    float *y = io->y, *gx = io->gx[0], *ggm = io->gx[1], *gbt = io->gx[2];
    for (int r = 0; r < LN_R; r++) {
        double mu = 0, var = 0;
        for (int j = 0; j < LN_D; j++) mu += x[r * LN_D + j];
        mu /= LN_D;
        for (int j = 0; j < LN_D; j++) var += (x[r * LN_D + j] - mu) * (x[r * LN_D + j] - mu);
        float rs = 1.f / sqrtf((float)(var / LN_D) + 1e-5f);
        double a = 0, b = 0;
        for (int j = 0; j < LN_D; j++) {
            float xh = (float)(x[r * LN_D + j] - mu) * rs;
            y[r * LN_D + j] = xh * gm[j] + bt[j];
            a += gy[r * LN_D + j] * gm[j];
            b += gy[r * LN_D + j] * gm[j] * xh;
            ggm[j] += gy[r * LN_D + j] * xh;
            gbt[j] += gy[r * LN_D + j];
        }
        a /= LN_D;
        b /= LN_D;
        for (int j = 0; j < LN_D; j++) {
            float xh = (float)(x[r * LN_D + j] - mu) * rs;
            gx[r * LN_D + j] = rs * (float)(gy[r * LN_D + j] * gm[j] - a - xh * b);
        }
    }
    return NULL;
}

enum { AMG_N = 5000 };
static const char *ref_add_mul_gelu(rio *io) {
    const float *a = io->in[0], *b = io->in[1], *c = io->in[2];
    for (int i = 0; i < AMG_N; i++) {
        float t = a[i] + b[i], u = t * c[i];
        io->y[i] = gelu(u);
        float gu = io->gy[i] * gelu_grad(u);
        io->gx[2][i] = gu * t;
        io->gx[0][i] = io->gx[1][i] = gu * c[i];
    }
    return NULL;
}

enum { MLP_M = 33, MLP_K = 256, MLP_H = 1024, MLP_N = 256 };
static const char *ref_mlp_block(rio *io) {
    enum { M = MLP_M, K = MLP_K, H = MLP_H, N = MLP_N };
    const float *x = io->in[0], *w1 = io->in[1], *b1 = io->in[2], *w2 = io->in[3], *b2 = io->in[4], *gy = io->gy;
    float *dx = io->gx[0], *dw1 = io->gx[1], *db1 = io->gx[2], *dw2 = io->gx[3], *db2 = io->gx[4];
    float *hp = malloc(sizeof(float) * M * H), *ha = malloc(sizeof(float) * M * H),
          *dhp = malloc(sizeof(float) * M * H);
    if (!hp || !ha || !dhp) {
        free(hp), free(ha), free(dhp);
        return "out of memory";
    }
    for (int m = 0; m < M; m++)
        for (int h = 0; h < H; h++) {
            double acc = b1[h];
            for (int k = 0; k < K; k++) acc += x[m * K + k] * w1[k * H + h];
            hp[m * H + h] = (float)acc;
            ha[m * H + h] = gelu((float)acc);
        }
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double acc = b2[n];
            for (int h = 0; h < H; h++) acc += ha[m * H + h] * w2[h * N + n];
            io->y[m * N + n] = (float)acc;
        }
    for (int m = 0; m < M; m++)
        for (int h = 0; h < H; h++) {
            double acc = 0;
            for (int n = 0; n < N; n++) acc += gy[m * N + n] * w2[h * N + n];
            dhp[m * H + h] = (float)acc * gelu_grad(hp[m * H + h]);
        }
    for (int h = 0; h < H; h++)
        for (int n = 0; n < N; n++)
            for (int m = 0; m < M; m++) dw2[h * N + n] += ha[m * H + h] * gy[m * N + n];
    for (int n = 0; n < N; n++)
        for (int m = 0; m < M; m++) db2[n] += gy[m * N + n];
    for (int m = 0; m < M; m++)
        for (int k = 0; k < K; k++) {
            double acc = 0;
            for (int h = 0; h < H; h++) acc += dhp[m * H + h] * w1[k * H + h];
            dx[m * K + k] = (float)acc;
        }
    for (int k = 0; k < K; k++)
        for (int h = 0; h < H; h++)
            for (int m = 0; m < M; m++) dw1[k * H + h] += x[m * K + k] * dhp[m * H + h];
    for (int h = 0; h < H; h++)
        for (int m = 0; m < M; m++) db1[h] += dhp[m * H + h];
    free(hp), free(ha), free(dhp);
    return NULL;
}

enum { XE_N = 64, XE_C = 500 };
static const char *ref_softmax_xent(rio *io) {
    const float *x = io->in[0];
    float loss = 0, gl = io->gy[0];
    for (int r = 0; r < XE_N; r++) {
        int lab = io->lab[r];
        float m = -INFINITY, sum = 0;
        for (int j = 0; j < XE_C; j++) m = fmaxf(m, x[r * XE_C + j]);
        for (int j = 0; j < XE_C; j++) sum += expf(x[r * XE_C + j] - m);
        loss += -(x[r * XE_C + lab] - m - logf(sum)) / XE_N;
        for (int j = 0; j < XE_C; j++)
            io->gx[0][r * XE_C + j] = (expf(x[r * XE_C + j] - m) / sum - (float)(j == lab)) * gl / XE_N;
    }
    io->y[0] = loss;
    return NULL;
}

/* dropout: the mask is read off the device's output, so the inputs lie in [1, 3]: a kept 0 would read as dropped. */
enum { DO_N = 100000 };
static const char *ref_dropout(rio *io) {
    size_t kept = 0;
    for (int i = 0; i < DO_N; i++) {
        int keep = io->got_y[i] != 0;
        kept += keep;
        io->y[i] = keep ? 2 * io->in[0][i] : 0.f; /* kept elements are scaled by 1/(1-p) */
        io->gx[0][i] = keep ? 2 * io->gy[i] : 0.f;
    }
    if (kept < DO_N * 0.48 || kept > DO_N * 0.52) return "dropout kept a fraction far from 1/2";
    return NULL;
}

/* attn_softmax: y = softmax(scale * x) per row; gx = scale * y * (gy - sum(gy * y)).  C = 16384: a 64 KiB row. */
enum { AS_R = 24, AS_C = 16384 };
#define AS_SCALE 0.125f
static const char *ref_attn_softmax(rio *io) {
    const float *x = io->in[0], *gy = io->gy;
    for (int r = 0; r < AS_R; r++) {
        const float *xr = x + (size_t)r * AS_C, *gr = gy + (size_t)r * AS_C;
        float *yr = io->y + (size_t)r * AS_C, *gx = io->gx[0] + (size_t)r * AS_C;
        double m = -INFINITY, sum = 0, dot = 0;
        for (int j = 0; j < AS_C; j++) m = fmax(m, AS_SCALE * xr[j]);
        for (int j = 0; j < AS_C; j++) sum += exp(AS_SCALE * xr[j] - m);
        for (int j = 0; j < AS_C; j++) yr[j] = (float)(exp(AS_SCALE * xr[j] - m) / sum);
        for (int j = 0; j < AS_C; j++) dot += (double)gr[j] * yr[j];
        for (int j = 0; j < AS_C; j++) gx[j] += AS_SCALE * yr[j] * (float)(gr[j] - dot);
    }
    return NULL;
}

/* global_norm: y[0] = sum of g^2 (g in bf16).  No backward. */
enum { GN_N = 1000003 };
static const char *ref_global_norm(rio *io) {
    double s = 0;
    for (int i = 0; i < GN_N; i++) s += (double)io->in[0][i] * io->in[0][i];
    io->y[0] = (float)s;
    return NULL;
}

/* adamw: params, m and v updated in place (inputs 0, 2, 3; grads in bf16: input 1); the output is params. */
enum { AW_N = 100003 };
#define AW_LR 0.05f
#define AW_BETA1 0.9f
#define AW_BETA2 0.95f
#define AW_EPS 1e-8f
#define AW_WD 0.1f
#define AW_STEP 7u
static const char *ref_adamw(rio *io) {
    float *p = io->in[0], *m = io->in[2], *v = io->in[3];
    const float *g = io->in[1];
    double bc1 = 1 - pow(AW_BETA1, AW_STEP), bc2 = 1 - pow(AW_BETA2, AW_STEP);
    for (int i = 0; i < AW_N; i++) {
        m[i] = AW_BETA1 * m[i] + (1 - AW_BETA1) * g[i];
        v[i] = AW_BETA2 * v[i] + (1 - AW_BETA2) * g[i] * g[i];
        double mhat = m[i] / bc1, vhat = v[i] / bc2;
        p[i] = (float)(p[i] - AW_LR * (mhat / (sqrt(vhat) + AW_EPS) + AW_WD * p[i]));
        io->y[i] = p[i];
    }
    return NULL;
}

/* linear: y = x W^T + b; dx = dy W (fresh); dW += dy^T x and db += column sums of dy (accumulating). */
enum { LI_M = 37, LI_K = 70, LI_N = 50 };
static const char *ref_linear(rio *io) {
    const float *x = io->in[0], *w = io->in[1], *b = io->in[2], *gy = io->gy;
    float *dx = io->gx[0], *dw = io->gx[1], *db = io->gx[2];
    for (int m = 0; m < LI_M; m++)
        for (int n = 0; n < LI_N; n++) {
            double acc = b[n];
            for (int k = 0; k < LI_K; k++) acc += (double)x[m * LI_K + k] * w[n * LI_K + k];
            io->y[m * LI_N + n] = (float)acc;
        }
    for (int m = 0; m < LI_M; m++)
        for (int k = 0; k < LI_K; k++) {
            double acc = 0;
            for (int n = 0; n < LI_N; n++) acc += (double)gy[m * LI_N + n] * w[n * LI_K + k];
            dx[m * LI_K + k] += (float)acc;
        }
    for (int n = 0; n < LI_N; n++)
        for (int k = 0; k < LI_K; k++) {
            double acc = 0;
            for (int m = 0; m < LI_M; m++) acc += (double)gy[m * LI_N + n] * x[m * LI_K + k];
            dw[n * LI_K + k] += (float)acc;
        }
    for (int n = 0; n < LI_N; n++) {
        double acc = 0;
        for (int m = 0; m < LI_M; m++) acc += gy[m * LI_N + n];
        db[n] += (float)acc;
    }
    return NULL;
}

/* rmsnorm_bf16: y = x * r * w, r = 1/sqrt(mean(x^2) + eps); gx = r*w*gy - x*r^3*mean(x*w*gy); w has no
 * gradient.  Inputs and gy are bf16 values (the reference sees them rounded); the outputs are rounded to
 * bf16 by the device, hence the bf16 tolerances.  C = 3000: rows that do not fill the last sweep. */
enum { RN_R = 48, RN_C = 3000 };
static const char *ref_rmsnorm_bf16(rio *io) {
    const float *x = io->in[0], *w = io->in[1];
    for (int r = 0; r < RN_R; r++) {
        const float *xr = x + (size_t)r * RN_C, *gy = io->gy + (size_t)r * RN_C;
        double ss = 0, dot = 0;
        for (int j = 0; j < RN_C; j++) ss += (double)xr[j] * xr[j], dot += (double)xr[j] * w[j] * gy[j];
        double rs = 1 / sqrt(ss / RN_C + 1e-5), k = rs * rs * rs * dot / RN_C;
        for (int j = 0; j < RN_C; j++) {
            io->y[(size_t)r * RN_C + j] = (float)(xr[j] * rs * w[j]);
            io->gx[0][(size_t)r * RN_C + j] += (float)(rs * w[j] * gy[j] - xr[j] * k);
        }
    }
    return NULL;
}

/* Input values: offset + scale × uniform(−1, 1); labels: in [0, labels). */
#define F32(rank, s0, s1, offset, scale) \
    { rank, {s0, s1}, offset, scale, 0, 0 }
#define BF16(rank, s0, s1, offset, scale) \
    { rank, {s0, s1}, offset, scale, 0, KC_DTYPE_BF16 }
#define LABELS(n, classes) \
    { 1, {n, 0}, 0, 0, classes, 0 }

static const rcase cases[] = {
    {.name = "softmax", .nin = 1, .in = {F32(2, SM_R, SM_C, 0, 3)}, .ref = ref_softmax},
    {.name = "layer_norm",
     .nin = 3,
     .in = {F32(2, LN_R, LN_D, 0, 2), F32(1, LN_D, 0, 1, 0.5f), F32(1, LN_D, 0, 0, 1)},
     .ref = ref_layer_norm},
    {.name = "add_mul_gelu",
     .nin = 3,
     .in = {F32(1, AMG_N, 0, 0, 1), F32(1, AMG_N, 0, 0, 1), F32(1, AMG_N, 0, 0, 2)},
     .ref = ref_add_mul_gelu},
    {.name = "mlp_block",
     .nin = 5,
     .in = {F32(2, MLP_M, MLP_K, 0, 1), F32(2, MLP_K, MLP_H, 0, 1.f / 16), F32(1, MLP_H, 0, 0, 0.25f),
            F32(2, MLP_H, MLP_N, 0, 1.f / 32), F32(1, MLP_N, 0, 0, 0.25f)},
     .ref = ref_mlp_block},
    {.name = "softmax_xent", .nin = 2, .in = {F32(2, XE_N, XE_C, 0, 3), LABELS(XE_N, XE_C)}, .ref = ref_softmax_xent},
    {.name = "dropout", .nin = 1, .in = {F32(1, DO_N, 0, 2, 1)}, .rng = 1, .ref = ref_dropout},
    {.name = "attn_softmax",
     .nin = 1,
     .in = {F32(2, AS_R, AS_C, 0, 8)},
     .ref = ref_attn_softmax,
     .nargs = 1,
     .args = {{KC_ARG_F32, {.f32 = AS_SCALE}}}},
    {.name = "rmsnorm_bf16",
     .nin = 2,
     .in = {BF16(2, RN_R, RN_C, 0, 2), BF16(1, RN_C, 0, 1, 0.5f)},
     .ref = ref_rmsnorm_bf16,
     .nograd = 1u << 1},
    {.name = "global_norm", .nin = 1, .in = {BF16(1, GN_N, 0, 0, 1)}, .ref = ref_global_norm, .forward_only = 1},
    {.name = "adamw",
     .nin = 4,
     .in = {F32(1, AW_N, 0, 0, 1), BF16(1, AW_N, 0, 0, 0.1f), F32(1, AW_N, 0, 0, 0.01f), F32(1, AW_N, 0, 5e-4f, 4e-4f)},
     .ref = ref_adamw,
     .nargs = 6,
     .args = {{KC_ARG_F32, {.f32 = AW_LR}},
              {KC_ARG_F32, {.f32 = AW_BETA1}},
              {KC_ARG_F32, {.f32 = AW_BETA2}},
              {KC_ARG_F32, {.f32 = AW_EPS}},
              {KC_ARG_F32, {.f32 = AW_WD}},
              {KC_ARG_U32, {.u32 = AW_STEP}}},
     .inplace = 1u << 0 | 1u << 2 | 1u << 3,
     .forward_only = 1},
    {.name = "linear",
     .nin = 3,
     .in = {F32(2, LI_M, LI_K, 0, 1), F32(2, LI_N, LI_K, 0, 0.25f), F32(1, LI_N, 0, 0, 0.5f)},
     .ref = ref_linear,
     .accumulate = 1u << 1 | 1u << 2},
};

const rcase *kcc_find_case_(const char *name) {
    for (size_t i = 0; name && i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(cases[i].name, name) == 0) return &cases[i];
    return NULL;
}

int kcc_has_reference(const char *graph_name) { return kcc_find_case_(graph_name) != NULL; }

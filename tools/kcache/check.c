/*
 * check.c — CPU references for the graphs in kernels/, and the runner that compares a
 * loaded graph's forward and backward with them (see check.h).
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
#include "check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXIN 5
#define MAXARGS 8

typedef struct tdesc {
    int rank;
    int64_t sizes[2];
    float offset, scale; /* values: offset + scale × uniform(−1, 1) */
    int labels;          /* > 0: int32 labels in [0, labels) */
    kc_dtype dtype;      /* 0: f32; KC_DTYPE_BF16: the values rounded to bf16 (the reference sees them rounded) */
} tdesc;

typedef struct rio {
    float *in[MAXIN];
    const int32_t *lab;
    const float *got_y; /* the device's forward output (dropout derives its mask from it) */
    const float *gy;
    float *y;
    float *gx[MAXIN];
    size_t ny;
} rio;

typedef struct rcase {
    const char *name;
    size_t nin;
    tdesc in[MAXIN];
    int rng;
    const char *(*ref)(rio *io);
    size_t nargs;
    kc_value args[MAXARGS]; /* the runtime arguments' values, in declaration order */
    unsigned inplace;       /* bit i: the forward updates input i where it is (compared after it) */
    unsigned accumulate;    /* bit i: input i's gradient adds into the caller's buffer (filled first) */
    int forward_only;       /* no backward pass */
    unsigned nograd;        /* bit i: input i has no gradient (its "requires_grad" is false) */
} rcase;

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
    float *hp = malloc(sizeof(float) * M * H), *ha = malloc(sizeof(float) * M * H), *dhp = malloc(sizeof(float) * M * H);
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
#define F32(rank, s0, s1, offset, scale) {rank, {s0, s1}, offset, scale, 0, 0}
#define BF16(rank, s0, s1, offset, scale) {rank, {s0, s1}, offset, scale, 0, KC_DTYPE_BF16}
#define LABELS(n, classes) {1, {n, 0}, 0, 0, classes, 0}

static const rcase cases[] = {
    {.name = "softmax", .nin = 1, .in = {F32(2, SM_R, SM_C, 0, 3)}, .ref = ref_softmax},
    {.name = "layer_norm", .nin = 3, .in = {F32(2, LN_R, LN_D, 0, 2), F32(1, LN_D, 0, 1, 0.5f), F32(1, LN_D, 0, 0, 1)},
     .ref = ref_layer_norm},
    {.name = "add_mul_gelu", .nin = 3, .in = {F32(1, AMG_N, 0, 0, 1), F32(1, AMG_N, 0, 0, 1), F32(1, AMG_N, 0, 0, 2)},
     .ref = ref_add_mul_gelu},
    {.name = "mlp_block", .nin = 5,
     .in = {F32(2, MLP_M, MLP_K, 0, 1), F32(2, MLP_K, MLP_H, 0, 1.f / 16), F32(1, MLP_H, 0, 0, 0.25f),
            F32(2, MLP_H, MLP_N, 0, 1.f / 32), F32(1, MLP_N, 0, 0, 0.25f)},
     .ref = ref_mlp_block},
    {.name = "softmax_xent", .nin = 2, .in = {F32(2, XE_N, XE_C, 0, 3), LABELS(XE_N, XE_C)}, .ref = ref_softmax_xent},
    {.name = "dropout", .nin = 1, .in = {F32(1, DO_N, 0, 2, 1)}, .rng = 1, .ref = ref_dropout},
    {.name = "attn_softmax", .nin = 1, .in = {F32(2, AS_R, AS_C, 0, 8)}, .ref = ref_attn_softmax, .nargs = 1,
     .args = {{KC_ARG_F32, {.f32 = AS_SCALE}}}},
    {.name = "rmsnorm_bf16", .nin = 2, .in = {BF16(2, RN_R, RN_C, 0, 2), BF16(1, RN_C, 0, 1, 0.5f)},
     .ref = ref_rmsnorm_bf16, .nograd = 1u << 1},
    {.name = "global_norm", .nin = 1, .in = {BF16(1, GN_N, 0, 0, 1)}, .ref = ref_global_norm, .forward_only = 1},
    {.name = "adamw", .nin = 4,
     .in = {F32(1, AW_N, 0, 0, 1), BF16(1, AW_N, 0, 0, 0.1f), F32(1, AW_N, 0, 0, 0.01f), F32(1, AW_N, 0, 5e-4f, 4e-4f)},
     .ref = ref_adamw, .nargs = 6,
     .args = {{KC_ARG_F32, {.f32 = AW_LR}}, {KC_ARG_F32, {.f32 = AW_BETA1}}, {KC_ARG_F32, {.f32 = AW_BETA2}},
              {KC_ARG_F32, {.f32 = AW_EPS}}, {KC_ARG_F32, {.f32 = AW_WD}}, {KC_ARG_U32, {.u32 = AW_STEP}}},
     .inplace = 1u << 0 | 1u << 2 | 1u << 3, .forward_only = 1},
    {.name = "linear", .nin = 3,
     .in = {F32(2, LI_M, LI_K, 0, 1), F32(2, LI_N, LI_K, 0, 0.25f), F32(1, LI_N, 0, 0, 0.5f)},
     .ref = ref_linear, .accumulate = 1u << 1 | 1u << 2},
};

static const rcase *find_case(const char *name) {
    for (size_t i = 0; name && i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(cases[i].name, name) == 0) return &cases[i];
    return NULL;
}

int kcc_has_reference(const char *graph_name) { return find_case(graph_name) != NULL; }

static float frand(unsigned *s) { return (float)((rand_r(s) % 20001) - 10000) / 10000.0f; }

static size_t numel(const kc_tensor *t) {
    size_t n = 1;
    for (int r = 0; r < t->rank; r++) n *= (size_t)t->sizes[r];
    return n;
}

/* max |got − want| against max |want|; 1 when within rtol. */
static int compare(const char *what, const float *got, const float *want, size_t n, double rtol, char *msg,
                   size_t cap, double *worst) {
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
        for (int q = t->rank - 1, st = 1; q >= 0; st *= (int)t->sizes[q], q--) d->sizes[q] = t->sizes[q], d->strides[q] = st;
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
    for (size_t i = 0; r->gy && r->out.dtype == KC_DTYPE_BF16 && i < io->ny; i++) r->gy[i] = float_of_bf16(bf16_of(r->gy[i]));
    for (size_t i = 0; i < k->nin; i++)
        if (io->in[i] && !k->forward_only && !(k->nograd >> i & 1) && !(io->gx[i] = calloc(numel(&r->in[i]) + 1, sizeof(float))))
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
    const rcase *k = find_case(graph_name);
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
    if (rc) snprintf(msg, cap, "%s of %s failed: %s", r->what[0] ? r->what : "setup", graph_name, kc_error_last()->message);
    else if (r->ok)
        snprintf(msg, cap, "forward%s match the CPU reference (worst relative error %.1e)",
                 k->forward_only ? "" : " and backward", r->worst);
    int ok = r->ok;
    release(r);
    free(r);
    return rc ? rc : ok ? KC_OK : KC_ECORRUPT;
}

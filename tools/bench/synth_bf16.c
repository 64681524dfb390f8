/* SPDX-License-Identifier: Apache-2.0 */
/*
 * synth_bf16.c — a generated manifest of N graphs whose kernels look like llm.c's bf16/fp16
 * kernels (kcache-bench's cold prewarm with and without precompiled headers, pch.c): written on
 * the fly, never committed.
 *
 * The one idea: every kernel file opens with the same four toolkit includes — cuda_bf16.h,
 * cuda_fp16.h, cooperative_groups.h, cooperative_groups/reduce.h — and the same options, so the
 * whole manifest shares one header set (what a precompiled header is made of), while every graph
 * is its own key and its own compile: graph i is one of sixteen operations (GELU forward and
 * backward, residual, SwiGLU, SiLU, fused residual + layernorm forward, layernorm backward,
 * softmax, RMSNorm, AdamW, the token + position encoder, sum of squares, absmax and logsumexp
 * row reductions with cg::reduce or warp shuffles, a bias gradient's column sums, causal
 * attention scores) over bf16 (even i / 16) or fp16, with its own constant and entry name.
 * Callers: bench.c (--write-bf16), pch.c.
 *
 * Must not: depend on anything but the spec format (docs/guide.md "Graph specs (JSON)"); every
 * step's arguments match its kernel's parameters (kcache checks them against what NVRTC compiled).
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* The shared header set: identical in every file, first thing after the opening comment. */
static const char *const includes = "#include <cuda_bf16.h>\n"
                                    "#include <cuda_fp16.h>\n"
                                    "#include <cooperative_groups.h>\n"
                                    "#include <cooperative_groups/reduce.h>\n";

static const char *const prelude_bf16 = "typedef __nv_bfloat16 T;\n"
                                        "__device__ __forceinline__ float ld(T v) { return __bfloat162float(v); }\n"
                                        "__device__ __forceinline__ T st(float f) { return __float2bfloat16(f); }\n";

static const char *const prelude_f16 = "typedef __half T;\n"
                                       "__device__ __forceinline__ float ld(T v) { return __half2float(v); }\n"
                                       "__device__ __forceinline__ T st(float f) { return __float2half(f); }\n";

/* Block-wide sum and max over whole warps (cg::reduce in each warp, then the warps' partials). */
static const char *const block_ops =
    "namespace cg = cooperative_groups;\n"
    "template <typename Op> __device__ float block_reduce(float v, float *sm, float id, Op op) {\n"
    "  cg::thread_block_tile<32> w = cg::tiled_partition<32>(cg::this_thread_block());\n"
    "  v = cg::reduce(w, v, op);\n"
    "  if (w.thread_rank() == 0) sm[threadIdx.x / 32] = v;\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x < 32) {\n"
    "    float t = threadIdx.x < blockDim.x / 32 ? sm[threadIdx.x] : id;\n"
    "    t = cg::reduce(w, t, op);\n"
    "    if (threadIdx.x == 0) sm[0] = t;\n"
    "  }\n"
    "  __syncthreads();\n"
    "  float r = sm[0];\n"
    "  __syncthreads();\n"
    "  return r;\n"
    "}\n"
    "__device__ float block_sum(float v, float *sm) { return block_reduce(v, sm, 0.f, cg::plus<float>()); }\n"
    "__device__ float block_max(float v, float *sm) { return block_reduce(v, sm, -3.0e38f, cg::greater<float>()); "
    "}\n";

/* The launch shapes: each a kernel signature and the spec's inputs, outputs and step. */
enum { SIG_UN, SIG_BIN, SIG_ROW, SIG_RED, SIG_COL, SIG_ADAM, SIG_ENC, SIG_ATT };

static const char *const sig_params[] = {
    [SIG_UN] = "const T *x, T *y, long long n",
    [SIG_BIN] = "const T *a, const T *b, T *y, long long n",
    [SIG_ROW] = "const T *x, const T *r, const T *w, T *y, float *stat, int C",
    [SIG_RED] = "const T *x, float *y, int C",
    [SIG_COL] = "const T *x, float *y, int R, int C",
    [SIG_ADAM] = "const T *p, const T *g, float *m, float *v, T *po, long long n, float lr, float wd",
    [SIG_ENC] = "const int *tok, const T *wte, const T *wpe, T *out, int TT, int C, long long n",
    [SIG_ATT] = "const T *q, const T *k, float *att, int TT, int HS, float scale",
};

#define IDX "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n  if (i >= n) return;\n"
#define ROWOFF "  __shared__ float sm[32];\n  const long long o = (long long)blockIdx.x * C;\n"
#define FOR "  for (int j = threadIdx.x; j < C; j += blockDim.x)"

/* The sixteen operations: a name, a launch shape, the kernel's body (C0: the graph's constant). */
static const struct op {
    const char *name;
    int sig;
    const char *body;
} ops[] = {
    {"gelu_fwd", SIG_UN,
     IDX "  float v = ld(x[i]);\n"
         "  float c = 0.7978845608f * (v + 0.044715f * v * v * v);\n"
         "  y[i] = st(0.5f * v * (1.f + tanhf(c)) * C0);\n"},
    {"gelu_bwd", SIG_BIN,
     IDX "  float v = ld(a[i]), d = ld(b[i]);\n"
         "  float c = 0.7978845608f * (v + 0.044715f * v * v * v), t = tanhf(c);\n"
         "  float s = 1.f - t * t, dc = 0.7978845608f * (1.f + 3.f * 0.044715f * v * v);\n"
         "  y[i] = st((0.5f * (1.f + t) + 0.5f * v * s * dc) * d * C0);\n"},
    {"residual_fwd", SIG_BIN, IDX "  y[i] = st((ld(a[i]) + ld(b[i])) * C0);\n"},
    {"swiglu_fwd", SIG_BIN, IDX "  float g = ld(a[i]);\n  y[i] = st(g / (1.f + __expf(-g)) * ld(b[i]) * C0);\n"},
    {"silu_fwd", SIG_UN, IDX "  float v = ld(x[i]);\n  y[i] = st(v / (1.f + __expf(-v * C0)));\n"},
    {"layernorm_fwd", SIG_ROW,
     ROWOFF "  float s = 0.f;\n" FOR " s += ld(x[o + j]) + ld(r[o + j]);\n"
            "  const float mean = block_sum(s, sm) / C;\n  float q = 0.f;\n" FOR
            " { float d = ld(x[o + j]) + ld(r[o + j]) - mean; q += d * d; }\n"
            "  const float rstd = rsqrtf(block_sum(q, sm) / C + 1e-5f * C0);\n"
            "  if (threadIdx.x == 0) stat[blockIdx.x] = rstd;\n" FOR
            " y[o + j] = st((ld(x[o + j]) + ld(r[o + j]) - mean) * rstd * ld(w[j]));\n"},
    {"layernorm_bwd", SIG_ROW,
     ROWOFF
     "  float s = 0.f, q = 0.f;\n" FOR " { float v = ld(r[o + j]); s += v; q += v * v; }\n"
     "  const float mean = block_sum(s, sm) / C;\n"
     "  const float rstd = rsqrtf(block_sum(q, sm) / C - mean * mean + 1e-5f * C0);\n"
     "  float dn = 0.f, dnn = 0.f;\n" FOR
     " { float g = ld(w[j]) * ld(x[o + j]); dn += g; dnn += g * (ld(r[o + j]) - mean) * rstd; }\n"
     "  dn = block_sum(dn, sm) / C;\n  dnn = block_sum(dnn, sm) / C;\n"
     "  if (threadIdx.x == 0) stat[blockIdx.x] = rstd;\n" FOR
     " { float xh = (ld(r[o + j]) - mean) * rstd; y[o + j] = st((ld(w[j]) * ld(x[o + j]) - dn - xh * dnn) * rstd); "
     "}\n"},
    {"softmax_fwd", SIG_ROW,
     ROWOFF "  float m = -3.0e38f;\n" FOR " m = fmaxf(m, (ld(x[o + j]) + ld(r[o + j])) * C0);\n"
            "  m = block_max(m, sm);\n  float s = 0.f;\n" FOR " s += __expf((ld(x[o + j]) + ld(r[o + j])) * C0 - m);\n"
            "  s = block_sum(s, sm);\n  if (threadIdx.x == 0) stat[blockIdx.x] = m + __logf(s);\n" FOR
            " y[o + j] = st(__expf((ld(x[o + j]) + ld(r[o + j])) * C0 - m) / s * ld(w[j]));\n"},
    {"rmsnorm_fwd", SIG_ROW,
     ROWOFF "  float q = 0.f;\n" FOR " { float h = ld(x[o + j]) + ld(r[o + j]); q += h * h; }\n"
            "  const float rstd = rsqrtf(block_sum(q, sm) / C + 1e-6f * C0);\n"
            "  if (threadIdx.x == 0) stat[blockIdx.x] = rstd;\n" FOR
            " y[o + j] = st((ld(x[o + j]) + ld(r[o + j])) * rstd * ld(w[j]));\n"},
    {"adamw", SIG_ADAM,
     IDX "  float gr = ld(g[i]), pv = ld(p[i]);\n"
         "  float mi = 0.9f * m[i] + 0.1f * gr, vi = 0.999f * v[i] + 0.001f * gr * gr;\n"
         "  m[i] = mi; v[i] = vi;\n"
         "  po[i] = st(pv - lr * (mi / (sqrtf(vi) + 1e-8f * C0) + wd * pv));\n"},
    {"encoder_fwd", SIG_ENC,
     IDX "  int c = (int)(i % C), t = (int)((i / C) % TT);\n"
         "  long long b = i / ((long long)C * TT);\n"
         "  int id = tok[b * TT + t];\n"
         "  __nv_bfloat162 two = __floats2bfloat162_rn(ld(wte[(long long)id * C + c]), ld(wpe[(long long)t * C + "
         "c]));\n"
         "  out[i] = st((__low2float(two) + __high2float(two)) * C0);\n"},
    {"sumsq_rows", SIG_RED,
     ROWOFF "  float q = 0.f;\n" FOR " { float v = ld(x[o + j]); q += v * v; }\n"
            "  q = block_sum(q, sm);\n  if (threadIdx.x == 0) y[blockIdx.x] = q * C0;\n"},
    {"absmax_rows", SIG_RED,
     ROWOFF "  float a = 0.f;\n" FOR " a = fmaxf(a, fabsf(ld(x[o + j])));\n"
            "  for (int off = 16; off > 0; off >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, off));\n"
            "  if (threadIdx.x % 32 == 0) sm[threadIdx.x / 32] = a;\n  __syncthreads();\n"
            "  if (threadIdx.x == 0) { float t = 0.f; for (int k = 0; k < (int)blockDim.x / 32; k++) t = fmaxf(t, "
            "sm[k]); y[blockIdx.x] = t * C0; }\n"},
    {"logsumexp_rows", SIG_RED,
     ROWOFF "  float m = -3.0e38f;\n" FOR " m = fmaxf(m, ld(x[o + j]));\n"
            "  m = block_max(m, sm);\n  float s = 0.f;\n" FOR " s += __expf(ld(x[o + j]) - m);\n"
            "  s = block_sum(s, sm);\n  if (threadIdx.x == 0) y[blockIdx.x] = (m + __logf(s)) * C0;\n"},
    {"bias_bwd", SIG_COL,
     "  int lane = threadIdx.x % 32, c = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;\n"
     "  if (c >= C) return;\n  float s = 0.f;\n"
     "  for (int i = lane; i < R; i += 32) s += ld(x[(long long)i * C + c]);\n"
     "  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);\n"
     "  if (lane == 0) y[c] = s * C0;\n"},
    {"attn_scores", SIG_ATT,
     "  const int t = blockIdx.x;\n  const long long bh = blockIdx.y;\n"
     "  const T *qr = q + (bh * TT + t) * HS;\n"
     "  cg::thread_block_tile<32> w = cg::tiled_partition<32>(cg::this_thread_block());\n"
     "  for (int t2 = threadIdx.x / 32; t2 < TT; t2 += blockDim.x / 32) {\n"
     "    const T *kr = k + (bh * TT + t2) * HS;\n    float d = 0.f;\n"
     "    for (int h = w.thread_rank(); h < HS; h += 32) d += ld(qr[h]) * ld(kr[h]);\n"
     "    d = cg::reduce(w, d, cg::plus<float>());\n"
     "    if (w.thread_rank() == 0) att[(bh * TT + t) * TT + t2] = t2 <= t ? d * scale * C0 : -3.0e38f;\n"
     "  }\n"},
};

#define NOPS (int)(sizeof ops / sizeof ops[0])

/* The spec's inputs, outputs and forward step of launch shape `sig` (dt: the graph's dtype). */
static void write_shape(FILE *f, int sig, const char *dt) {
    const char *fw = "  \"forward\": [{\"kernel\": \"k\", ";
    switch (sig) {
    case SIG_UN:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}],\n"
                "%s\"grid\": [\"ceildiv(N, 256)\", 1, 1], \"block\": [256, 1, 1], "
                "\"args\": [\"input:0\", \"output:0\", \"e64:N\"]}]\n",
                dt, dt, fw);
        break;
    case SIG_BIN:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}, {\"dtype\": \"%s\", \"sizes\": [\"N\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}],\n"
                "%s\"grid\": [\"ceildiv(N, 256)\", 1, 1], \"block\": [256, 1, 1], "
                "\"args\": [\"input:0\", \"input:1\", \"output:0\", \"e64:N\"]}]\n",
                dt, dt, dt, fw);
        break;
    case SIG_ROW:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"R\", \"C\"]}, {\"dtype\": \"%s\", \"sizes\": [\"R\", "
                "\"C\"]}, {\"dtype\": \"%s\", \"sizes\": [\"C\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"%s\", \"sizes\": [\"R\", \"C\"]}, {\"dtype\": \"f32\", \"sizes\": "
                "[\"R\"]}],\n"
                "%s\"grid\": [\"R\", 1, 1], \"block\": [256, 1, 1], "
                "\"args\": [\"input:0\", \"input:1\", \"input:2\", \"output:0\", \"output:1\", \"e32:C\"]}]\n",
                dt, dt, dt, dt, fw);
        break;
    case SIG_RED:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"R\", \"C\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"R\"]}],\n"
                "%s\"grid\": [\"R\", 1, 1], \"block\": [256, 1, 1], \"args\": [\"input:0\", \"output:0\", "
                "\"e32:C\"]}]\n",
                dt, fw);
        break;
    case SIG_COL:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"R\", \"C\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"C\"]}],\n"
                "%s\"grid\": [\"ceildiv(C, 8)\", 1, 1], \"block\": [256, 1, 1], "
                "\"args\": [\"input:0\", \"output:0\", \"e32:R\", \"e32:C\"]}]\n",
                dt, fw);
        break;
    case SIG_ADAM:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}, {\"dtype\": \"%s\", \"sizes\": [\"N\"]}, "
                "{\"dtype\": \"f32\", \"sizes\": [\"N\"]}, {\"dtype\": \"f32\", \"sizes\": [\"N\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}],\n"
                "%s\"grid\": [\"ceildiv(N, 256)\", 1, 1], \"block\": [256, 1, 1], \"args\": [\"input:0\", "
                "\"input:1\", \"input:2\", \"input:3\", \"output:0\", \"e64:N\", \"f32:0.0003\", \"f32:0.1\"]}]\n",
                dt, dt, dt, fw);
        break;
    case SIG_ENC:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"i32\", \"sizes\": [\"B\", \"TT\"]}, {\"dtype\": \"%s\", \"sizes\": "
                "[\"V\", \"C\"]}, {\"dtype\": \"%s\", \"sizes\": [\"TT\", \"C\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"%s\", \"sizes\": [\"B\", \"TT\", \"C\"]}],\n"
                "%s\"grid\": [\"ceildiv(B * TT * C, 256)\", 1, 1], \"block\": [256, 1, 1], \"args\": [\"input:0\", "
                "\"input:1\", \"input:2\", \"output:0\", \"e32:TT\", \"e32:C\", \"e64:B * TT * C\"]}]\n",
                dt, dt, dt, fw);
        break;
    default:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"BH\", \"TT\", \"HS\"]}, {\"dtype\": \"%s\", "
                "\"sizes\": [\"BH\", \"TT\", \"HS\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"BH\", \"TT\", \"TT\"]}],\n"
                "%s\"grid\": [\"TT\", \"BH\", 1], \"block\": [256, 1, 1], "
                "\"args\": [\"input:0\", \"input:1\", \"output:0\", \"e32:TT\", \"e32:HS\", \"f32:0.125\"]}]\n",
                dt, dt, fw);
        break;
    }
}

/* Graph i: its kernel file b<i>.cu and its spec b<i>.json. */
static int write_graph(const char *dir, int i) {
    const struct op *op = &ops[i % NOPS];
    int half = (i / NOPS) % 2;
    const char *dt = half ? "f16" : "bf16";
    char entry[96], path[4200];
    snprintf(entry, sizeof entry, "%s_%s_%d", op->name, dt, i);
    snprintf(path, sizeof path, "%s/b%03d.cu", dir, i);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "// b%03d.cu: %s in %s (generated by kcache-bench)\n%s%s#define C0 %.6ff\n%s", i, op->name, dt, includes,
            half ? prelude_f16 : prelude_bf16, 1.0 + 0.001 * i, block_ops);
    fprintf(f, "extern \"C\" __global__ void %s(%s) {\n%s}\n", entry, sig_params[op->sig], op->body);
    if (fclose(f)) return -1;
    snprintf(path, sizeof path, "%s/b%03d.json", dir, i);
    f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f,
            "{\n  \"name\": \"bf16_%03d_%s\",\n  \"toolkit_headers\": true,\n"
            "  \"kernels\": [{\"id\": \"k\", \"file\": \"b%03d.cu\", \"entry\": \"%s\", \"options\": "
            "[\"-std=c++17\"]}],\n",
            i, op->name, i, entry);
    write_shape(f, op->sig, dt);
    fprintf(f, "}\n");
    return fclose(f) ? -1 : 0;
}

int synth_bf16_manifest(const char *dir, int n, const char *targets, char *manifest, size_t cap) {
    for (int i = 0; i < n; i++)
        if (write_graph(dir, i)) return -1;
    return synth_write_manifest(dir, "b", n, targets, manifest, cap);
}

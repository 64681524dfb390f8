/* SPDX-License-Identifier: Apache-2.0 */
/*
 * synth.c — a synthetic manifest of N graphs that look like a runtime's (kcache-bench's warm
 * start of a whole model, procs.c): written on the fly, never committed.
 *
 * Graph i is one kernel in its own file g<i>.cu and spec g<i>.json, of one of four kinds —
 * a binary elementwise op, a unary activation, a row reduction (a template on its block size,
 * named by a name expression), a row-wise scale and bias over [R, C] — over f32 or f16 (f16
 * converted with PTX cvt, as runtimes that generate NVRTC code do, so no toolkit header is
 * needed), with its own constants and, for some, -use_fast_math.  Every graph's source text
 * differs (its constants, its entry's name), so each is its own key and its own compile unit:
 * N graphs are N graph entries and N images.
 *
 * Must not: depend on anything but the spec format (README "Graph specs (JSON)").
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

static const char *const f32_prelude = "typedef float T;\n"
                                       "__device__ __forceinline__ float ld(float v) { return v; }\n"
                                       "__device__ __forceinline__ float st(float v) { return v; }\n";

static const char *const f16_prelude =
    "typedef unsigned short T; /* IEEE half, converted with PTX cvt */\n"
    "__device__ __forceinline__ float ld(unsigned short h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
    "__device__ __forceinline__ unsigned short st(float f) { unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n";

/* Binary ops on x, z (then * c0 + c1); unary activations of x (with c0, c1); reductions: init, map, combine. */
static const char *const binops[] = {
    "x + z", "x * z", "x - z", "fmaxf(x, z)", "fminf(x, z)", "x * z + x", "(x - z) * (x - z)", "x / (fabsf(z) + 1.0f)"};
static const char *const unops[] = {"fmaxf(x, 0.0f)",
                                    "0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)))",
                                    "x / (1.0f + __expf(-x))",
                                    "1.0f / (1.0f + __expf(-x))",
                                    "tanhf(x)",
                                    "__expf(x * c0)",
                                    "log1pf(__expf(x))",
                                    "x > 0.0f ? x : c1 * x",
                                    "fminf(fmaxf(x, -c0), c0)",
                                    "x * x * c0"};
static const struct {
    const char *name, *init, *map, *comb;
} reds[] = {{"sum", "0.0f", "v", "a + b"},          {"max", "-3.0e38f", "v", "fmaxf(a, b)"},
            {"sumsq", "0.0f", "v * v", "a + b"},    {"absmax", "0.0f", "fabsf(v)", "fmaxf(a, b)"},
            {"min", "3.0e38f", "v", "fminf(a, b)"}, {"logsumexp_part", "0.0f", "__expf(v - c0)", "a + b"}};
static const int blocks[] = {128, 256, 512};

#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

/* Graph i's kernel source, g<i>.cu: its kind's kernel with the graph's own constants; its entry's
 * name expression in `entry` and its block size in *block. */
static int write_source(const char *dir, int i, char *entry, size_t cap, int *block) {
    int kind = i % 4, half = (i / 4) % 2;
    double c0 = 0.5 + 0.0137 * i, c1 = 0.01 + 0.0003 * i;
    char path[4200];
    snprintf(path, sizeof path, "%s/g%03d.cu", dir, i);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "// g%03d.cu — synthetic graph %d of kcache-bench's warm start (kind %d, %s)\n%s", i, i, kind,
            half ? "f16" : "f32", half ? f16_prelude : f32_prelude);
    fprintf(f, "#define c0 %.6ff\n#define c1 %.6ff\n", c0, c1);
    *block = 256;
    switch (kind) {
    case 0:
        snprintf(entry, cap, "synth_bin_%d", i);
        fprintf(f,
                "extern \"C\" __global__ void %s(const T *a, const T *b, T *y, long long n) {\n"
                "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                "  if (i < n) { float x = ld(a[i]), z = ld(b[i]); y[i] = st((%s) * c0 + c1); }\n}\n",
                entry, binops[(i / 4) % COUNT(binops)]);
        break;
    case 1:
        snprintf(entry, cap, "synth_act_%d", i);
        fprintf(f,
                "extern \"C\" __global__ void %s(const T *a, T *y, long long n) {\n"
                "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
                "  if (i < n) { float x = ld(a[i]); y[i] = st(%s); }\n}\n",
                entry, unops[(i / 4) % COUNT(unops)]);
        break;
    case 2: {
        int r = (i / 4) % COUNT(reds);
        *block = blocks[(i / 8) % COUNT(blocks)];
        fprintf(f,
                "__device__ __forceinline__ float comb(float a, float b) { return %s; }\n"
                "template <int BLOCK> __global__ void synth_%s_%d(const T *x, float *y, int C) {\n"
                "  __shared__ float s[BLOCK];\n"
                "  const T *r = x + (long long)blockIdx.x * C;\n"
                "  float acc = %s;\n"
                "  for (int j = threadIdx.x; j < C; j += BLOCK) { float v = ld(r[j]); acc = comb(acc, %s); }\n"
                "  s[threadIdx.x] = acc;\n  __syncthreads();\n"
                "  for (int k = BLOCK / 2; k > 0; k >>= 1) {\n"
                "    if (threadIdx.x < k) s[threadIdx.x] = comb(s[threadIdx.x], s[threadIdx.x + k]);\n"
                "    __syncthreads();\n  }\n"
                "  if (threadIdx.x == 0) y[blockIdx.x] = s[0] * c0 + c1;\n}\n",
                reds[r].comb, reds[r].name, i, reds[r].init, reds[r].map);
        snprintf(entry, cap, "synth_%s_%d<%d>", reds[r].name, i, *block);
        break;
    }
    default:
        snprintf(entry, cap, "synth_affine_%d", i);
        fprintf(
            f,
            "extern \"C\" __global__ void %s(const T *x, const float *g, const float *b, T *y, int C, long long n) {\n"
            "  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
            "  if (i < n) { int j = (int)(i %% C); float x0 = ld(x[i]); y[i] = st(x0 * g[j] * c0 + b[j] + c1); }\n}\n",
            entry);
        break;
    }
    return fclose(f) ? -1 : 0;
}

/* Graph i's spec, g<i>.json: its kernel, inputs, outputs and launch. */
static int write_graph(const char *dir, int i) {
    int kind = i % 4, half = (i / 4) % 2, fast = i % 5 == 0, block;
    const char *dt = half ? "f16" : "f32";
    char entry[64], path[4200];
    if (write_source(dir, i, entry, sizeof entry, &block)) return -1;
    snprintf(path, sizeof path, "%s/g%03d.json", dir, i);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(
        f,
        "{\n  \"name\": \"synth_%03d\",\n  \"kernels\": [{\"id\": \"k\", \"file\": \"g%03d.cu\", \"entry\": \"%s\"%s}],\n",
        i, i, entry, fast ? ", \"options\": [\"-use_fast_math\"]" : "");
    switch (kind) {
    case 0:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}, {\"dtype\": \"%s\", \"sizes\": [\"N\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}],\n"
                "  \"forward\": [{\"kernel\": \"k\", \"grid\": [\"ceildiv(N, 256)\", 1, 1], \"block\": [256, 1, 1], "
                "\"args\": [\"input:0\", \"input:1\", \"output:0\", \"e64:N\"]}]\n",
                dt, dt, dt);
        break;
    case 1:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"%s\", \"sizes\": [\"N\"]}],\n"
                "  \"forward\": [{\"kernel\": \"k\", \"grid\": [\"ceildiv(N, 256)\", 1, 1], \"block\": [256, 1, 1], "
                "\"args\": [\"input:0\", \"output:0\", \"e64:N\"]}]\n",
                dt, dt);
        break;
    case 2:
        fprintf(f,
                "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"R\", \"C\"]}],\n"
                "  \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"R\"]}],\n"
                "  \"forward\": [{\"kernel\": \"k\", \"grid\": [\"R\", 1, 1], \"block\": [%d, 1, 1], "
                "\"args\": [\"input:0\", \"output:0\", \"e32:C\"]}]\n",
                dt, block);
        break;
    default:
        fprintf(
            f,
            "  \"inputs\": [{\"dtype\": \"%s\", \"sizes\": [\"R\", \"C\"]}, {\"dtype\": \"f32\", \"sizes\": [\"C\"]}, "
            "{\"dtype\": \"f32\", \"sizes\": [\"C\"]}],\n"
            "  \"outputs\": [{\"dtype\": \"%s\", \"sizes\": [\"R\", \"C\"]}],\n"
            "  \"forward\": [{\"kernel\": \"k\", \"grid\": [\"ceildiv(R * C, 256)\", 1, 1], \"block\": [256, 1, 1], "
            "\"args\": [\"input:0\", \"input:1\", \"input:2\", \"output:0\", \"e32:C\", \"e64:R * C\"]}]\n",
            dt, dt);
        break;
    }
    fprintf(f, "}\n");
    return fclose(f) ? -1 : 0;
}

int synth_write_manifest(const char *dir, const char *prefix, int n, const char *targets, char *manifest, size_t cap) {
    snprintf(manifest, cap, "%s/manifest.json", dir);
    FILE *f = fopen(manifest, "w");
    if (!f) return -1;
    fprintf(f, "{\n  \"graphs\": [");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s\"%s%03d.json\"", i ? (i % 8 ? ", " : ",\n             ") : "", prefix, i);
    fprintf(f, "],\n  \"archs\": [");
    const char *p = targets;
    for (int k = 0; *p; k++) {
        size_t l = strcspn(p, ",");
        fprintf(f, "%s\"%.*s\"", k ? ", " : "", (int)l, p);
        p += l + (p[l] == ',');
    }
    fprintf(f, "]\n}\n");
    return fclose(f) ? -1 : 0;
}

int synth_manifest(const char *dir, int n, const char *target, char *manifest, size_t cap) {
    for (int i = 0; i < n; i++)
        if (write_graph(dir, i)) return -1;
    return synth_write_manifest(dir, "g", n, target, manifest, cap);
}

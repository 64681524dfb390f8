/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_double.c — the CUDA driver double (tests/double/) on its own, through the real entry
 * points: the test links libkcache_cuda_double.so and calls cuModuleLoadData & co directly,
 * and, for the last tests, goes through kcache itself, whose dlopen (KCACHE_CUDA_DRIVER, set
 * by CTest) gets the same loaded object.  Label driver-double: nothing here runs a kernel;
 * it proves the double validates images, launches and memory as the driver would and records
 * what happened — the `gpu` tests are the only proof of numerics.
 *
 * Images are compiled by NVRTC through kcache's public API (kc_compile_names) for each target,
 * once per run.  The variant table is written out by hand (not computed by the rules under
 * test).
 */
#include <dlfcn.h>
#include <pthread.h>

#include "cuda_double.h"
#include "kcache.h"
#include "helpers.h" /* after kcache.h: its cache helpers need kcache.h's types */
#include "double/double_test.h"

/* One device per capability the table covers (kcache sees them too: set before it looks). */
#define DEVICES "7.0,7.5,8.0,8.6,8.9,9.0,10.0,10.3,12.0,12.1"
enum { D70, D75, D80, D86, D89, D90, D100, D103, D120, D121, NDEV };
static const int CAPS[NDEV][2] = {{7, 0}, {7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}, {10, 3}, {12, 0}, {12, 1}};

/* k: (float*, int, size_t, double, 12-byte struct) with 256 bytes of static shared memory;
 * lb: launch bounds 128; dyn: dynamic shared memory only. */
static const char SRC[] =
    "struct S { int a, b, c; };\n"
    "extern \"C\" __global__ void k(float *p, int n, size_t m, double d, S s) {\n"
    "  __shared__ float buf[64]; buf[threadIdx.x % 64] = p[0]; __syncthreads();\n"
    "  if (threadIdx.x < n) p[threadIdx.x] = buf[(threadIdx.x + 1) % 64] + m + d + s.a + s.b + s.c; }\n"
    "extern \"C\" __global__ void __launch_bounds__(128) lb(int *q) { q[threadIdx.x] = 1; }\n"
    "extern \"C\" __global__ void dyn(float *p) { extern __shared__ float sm[]; sm[threadIdx.x] = p[threadIdx.x];\n"
    "  __syncthreads(); p[threadIdx.x] = sm[blockDim.x - 1 - threadIdx.x]; }\n";

static struct {
    const char *target;
    kc_compiled *c;
} imgs[40];

/* The image of SRC for `target`, compiled on first use. */
static const kc_compiled *image(const char *target) {
    size_t i = 0;
    for (; i < 40 && imgs[i].target; i++)
        if (!strcmp(imgs[i].target, target)) return imgs[i].c;
    assert_true(i < 40);
    const char *names[] = {"k", "lb", "dyn"};
    kc_kernel_src k = {KC_KERNEL_SRC_VERSION, "double.cu", SRC, "k", NULL, 0, NULL, 0, NULL, 0};
    if (kc_compile_names(&k, names, 3, target, &imgs[i].c) != KC_OK)
        fail_msg("%s: %s", target, kc_error_last()->message);
    imgs[i].target = target;
    return imgs[i].c;
}

static void push(int dev) {
    CUcontext c;
    assert_int_equal(cuDevicePrimaryCtxRetain(&c, dev), CUDA_SUCCESS);
    assert_int_equal(cuCtxPushCurrent(c), CUDA_SUCCESS);
}

static void pop(int dev) {
    CUcontext c;
    assert_int_equal(cuCtxPopCurrent(&c), CUDA_SUCCESS);
    assert_int_equal(cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
}

/* The defects since the last kcd_reset must be exactly n (printed otherwise). */
static void defects_are(size_t n) {
    char buf[8192];
    size_t got = kcd_defects(buf, sizeof buf);
    if (got != n) fail_msg("%zu defect(s), expected %zu:\n%s", got, n, buf);
}

static void defect_says(const char *needle) {
    char buf[8192];
    kcd_defects(buf, sizeof buf);
    if (!strstr(buf, needle)) fail_msg("no defect mentions '%s':\n%s", needle, buf);
}

/* What a test leaves alive must be what was alive when it began (fresh). */
static size_t leaks_before;
static void no_leaks(void) {
    char buf[4096];
    size_t n = kcd_leaks(buf, sizeof buf);
    if (n != leaks_before) fail_msg("%zu leak(s), %zu before the test:\n%s", n, leaks_before, buf);
}

/* Each test starts with no context pushed on this thread and no records, whatever the one
 * before it left when it failed. */
static void fresh(void) {
    CUcontext c;
    while (cuCtxPopCurrent(&c) == CUDA_SUCCESS) {}
    kcd_reset();
    leaks_before = kcd_leaks(NULL, 0);
}

static CUmodule load_on(int dev, const char *target, CUresult want) {
    CUmodule m = NULL;
    push(dev);
    CUresult r = cuModuleLoadData(&m, image(target)->image);
    pop(dev);
    if (r != want) fail_msg("%s on %d.%d: %d, expected %d", target, CAPS[dev][0], CAPS[dev][1], (int)r, (int)want);
    return m;
}

/* Every device's primary context is held for the whole run, as a runtime would hold it: a
 * release that drops it to zero destroys what it owns (test_leaks_and_defects shows that). */
static int setup(void **state) {
    (void)state;
    if (kcd_set_devices(DEVICES) != 0 || cuInit(0) != CUDA_SUCCESS) return -1;
    for (int d = 0; d < NDEV; d++) {
        CUcontext c;
        if (cuDevicePrimaryCtxRetain(&c, d) != CUDA_SUCCESS) return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (int d = 0; d < NDEV; d++) cuDevicePrimaryCtxRelease(d);
    for (size_t i = 0; i < 40 && imgs[i].target; i++) kc_compiled_free(imgs[i].c);
    return 0;
}

/* ---- the tests ---- */

/* Every entry point src/cuda/driver.c asks for is exported, and kcache's dlopen of the
 * library is the object this test linked. */
static void test_exports_what_kcache_asks_for(void **state) {
    (void)state;
    const char *path = getenv("KCACHE_CUDA_DRIVER");
    assert_non_null(path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    void *sym = dlsym(h, "kcd_reset");
    void (*mine)(void) = kcd_reset;
    assert_memory_equal(&sym, (void *)&mine, sizeof sym);
    size_t len;
    char *src = (char *)kct_read(KC_DRIVER_C, &len);
    assert_non_null(src);
    src[len] = '\0';
    int n = 0;
    for (const char *p = src; (p = strchr(p, '(')); p++) { /* REQ(field, "name") and OPT(field, "name") */
        if (p - src < 3 || (strncmp(p - 3, "REQ", 3) && strncmp(p - 3, "OPT", 3))) continue;
        const char *q = strchr(p, '"'), *nl = strchr(p, '\n');
        if (!q || (nl && q > nl)) continue; /* the macros' own definitions */
        char name[64];
        size_t k = 0;
        for (q++; *q && *q != '"' && k < sizeof name - 1; q++) name[k++] = *q;
        name[k] = '\0';
        if (!dlsym(h, name)) fail_msg("the double does not export %s, which driver.c asks for", name);
        n++;
    }
    free(src);
    assert_true(n >= 30); /* the list was found */
    dlclose(h);
}

/* kcache opened the double, sees its devices, and sees what the control API changes. */
static void test_kcache_sees_the_double(void **state) {
    (void)state;
    fresh();
    assert_int_equal(kc_cuda_available(), KC_OK);
    assert_int_equal(kc_cuda_device_count(), NDEV);
    for (int d = 0; d < NDEV; d++) {
        int ma, mi;
        assert_int_equal(kc_cuda_capability(d, &ma, &mi), KC_OK);
        assert_int_equal(ma, CAPS[d][0]);
        assert_int_equal(mi, CAPS[d][1]);
    }
    assert_int_equal(kcd_set_attribute(D86, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 7), 0);
    int ma, mi;
    assert_int_equal(kc_cuda_capability(D86, &ma, &mi), KC_OK);
    assert_int_equal(mi, 7);
    assert_int_equal(kcd_set_attribute(D86, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 6), 0);
    int v;
    assert_int_equal(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, D90),
                     CUDA_SUCCESS);
    assert_int_equal(v, 227 * 1024);
    assert_int_equal(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, D80),
                     CUDA_SUCCESS);
    assert_int_equal(v, 163 * 1024);
    assert_int_equal(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, D90), CUDA_SUCCESS);
    assert_int_equal(v, 132);
    assert_int_equal(cuDeviceGetAttribute(&v, (CUdevice_attribute)100000, D90), CUDA_ERROR_INVALID_VALUE);
    CUdevice dev;
    assert_int_equal(cuDeviceGet(&dev, NDEV), CUDA_ERROR_INVALID_DEVICE);
    const char *name;
    assert_int_equal(cuGetErrorName(CUDA_ERROR_NO_BINARY_FOR_GPU, &name), CUDA_SUCCESS);
    assert_string_equal(name, "CUDA_ERROR_NO_BINARY_FOR_GPU");
}

/* Which image loads on which device: '+' loads, '-' is CUDA_ERROR_NO_BINARY_FOR_GPU.
 *                                    7.0 7.5 8.0 8.6 8.9 9.0 10.0 10.3 12.0 12.1 */
static const struct {
    const char *target, *runs;
} TABLE[] = {
    {"sm_75", "-+--------"},       {"sm_80", "--+++-----"},        {"sm_86", "---++-----"},
    {"sm_89", "----+-----"},       {"sm_90", "-----+----"},        {"sm_90a", "-----+----"},
    {"sm_100", "------++--"},      {"sm_100a", "------+---"},      {"sm_100f", "------++--"},
    {"sm_103", "-------+--"},      {"sm_103a", "-------+--"},      {"sm_103f", "-------+--"},
    {"sm_120", "--------++"},      {"sm_120a", "--------+-"},      {"sm_120f", "--------++"},
    {"compute_75", "-+++++++++"},  {"compute_80", "--++++++++"},   {"compute_90", "-----+++++"},
    {"compute_90a", "-----+----"}, {"compute_100", "------++++"},  {"compute_100f", "------++--"},
    {"compute_120", "--------++"}, {"compute_120a", "--------+-"},
};

static void test_variant_table(void **state) {
    (void)state;
    fresh();
    unsigned long loads = 0, refused = 0;
    for (size_t t = 0; t < sizeof TABLE / sizeof TABLE[0]; t++)
        for (int d = 0; d < NDEV; d++) {
            int ok = TABLE[t].runs[d] == '+';
            CUresult want = ok ? CUDA_SUCCESS : CUDA_ERROR_NO_BINARY_FOR_GPU;
            CUmodule m = load_on(d, TABLE[t].target, want);
            /* a library loaded in the device's context answers the same */
            CUlibrary l = NULL;
            push(d);
            CUresult r = cuLibraryLoadData(&l, image(TABLE[t].target)->image, NULL, NULL, 0, NULL, NULL, 0);
            if (r != want) fail_msg("library %s on %d.%d: %d", TABLE[t].target, CAPS[d][0], CAPS[d][1], (int)r);
            if (ok) {
                char line[96], *log = kcd_call_log();
                snprintf(line, sizeof line, "cuModuleLoadData %s %s ->", TABLE[t].target[0] == 's' ? "cubin" : "ptx",
                         TABLE[t].target);
                if (!strstr(log, line)) fail_msg("the log does not say '%s' (the target read from the image)", line);
                free(log);
                CUfunction f;
                assert_int_equal(cuModuleGetFunction(&f, m, "k"), CUDA_SUCCESS);
                assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
                assert_int_equal(cuLibraryUnload(l), CUDA_SUCCESS);
                loads += 2;
            } else {
                refused += 2;
            }
            pop(d);
        }
    kcd_load_stats s;
    kcd_loads(&s);
    assert_int_equal(s.module_loads + s.library_loads, loads);
    assert_int_equal(s.refused, refused);
    assert_int_equal(s.module_unloads + s.library_unloads, loads);
    defects_are(0); /* a refusal is not misuse */
    no_leaks();
    const char *lines[] = {"cuModuleLoadData -> CUDA_ERROR_NO_BINARY_FOR_GPU: sm_75 runs"};
    kcdt_log_in_order(lines, 1);
}

/* A cubin cut short is CUDA_ERROR_INVALID_IMAGE at every length, never a read past its end. */
static void test_truncated_and_malformed_cubin(void **state) {
    (void)state;
    fresh();
    const kc_compiled *c = image("sm_90");
    char why[256];
    assert_int_equal(kcd_image_check(c->image, c->len, D90, why, sizeof why), CUDA_SUCCESS);
    for (size_t n = 0; n < c->len; n++) { /* exact lengths: ASan sees any overread */
        CUresult r = kcd_image_check(c->image, n, D90, why, sizeof why);
        if (r != CUDA_ERROR_INVALID_IMAGE && r != CUDA_ERROR_INVALID_VALUE)
            fail_msg("cut at %zu of %zu: %d (%s)", n, c->len, (int)r, why);
    }
    /* Through the entry point: a file cut in half, the rest of its buffer zero. */
    unsigned char *half = calloc(1, c->len);
    memcpy(half, c->image, c->len / 2);
    CUmodule m;
    push(D90);
    assert_int_equal(cuModuleLoadData(&m, half), CUDA_ERROR_INVALID_IMAGE);
    /* Header fields a driver checks. */
    unsigned char *b = malloc(c->len);
    struct {
        size_t off;
        unsigned char v;
        const char *what;
    } mut[] = {
        {18, 62, "e_machine"},  {8, 9, "ABI version"},    {4, 1, "32-bit"},
        {16, 1, "relocatable"}, {62, 0xff, "e_shstrndx"}, {0x2f, 0x7f, "e_shoff"},
    };
    for (size_t i = 0; i < sizeof mut / sizeof mut[0]; i++) {
        memcpy(b, c->image, c->len);
        b[mut[i].off] = mut[i].v;
        if (kcd_image_check(b, c->len, D90, why, sizeof why) != CUDA_ERROR_INVALID_IMAGE)
            fail_msg("%s accepted", mut[i].what);
    }
    /* Every section with bytes pushed one byte past the end, one at a time. */
    uint64_t shoff;
    uint16_t shnum;
    memcpy(&shoff, c->image + 40, 8);
    memcpy(&shnum, c->image + 60, 2);
    for (uint16_t s = 1; s < shnum; s++) {
        memcpy(b, c->image, c->len);
        uint32_t type;
        uint64_t size;
        memcpy(&type, b + shoff + 64u * s + 4, 4);
        memcpy(&size, b + shoff + 64u * s + 32, 8);
        if (type == 8 || size == 0) continue; /* NOBITS has no bytes */
        uint64_t off = c->len - size + 1;
        memcpy(b + shoff + 64u * s + 24, &off, 8);
        if (kcd_image_check(b, c->len, D90, why, sizeof why) != CUDA_ERROR_INVALID_IMAGE)
            fail_msg("section %u beyond the end accepted", s);
    }
    free(b);
    free(half);
    pop(D90);
    defects_are(0);
    no_leaks();
}

static void test_ptx(void **state) {
    (void)state;
    fresh();
    const kc_compiled *c = image("compute_80");
    char *newer = malloc(c->len + 1);
    memcpy(newer, c->image, c->len + 1);
    char *v = strstr(newer, ".version ");
    assert_non_null(v);
    memcpy(v + 9, "9.9", 3);
    CUmodule m;
    push(D90);
    assert_int_equal(cuModuleLoadData(&m, newer), CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    assert_int_equal(kcd_set_ptx_isa_max("9.9"), 0);
    assert_int_equal(cuModuleLoadData(&m, newer), CUDA_SUCCESS);
    assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
    assert_int_equal(kcd_set_ptx_isa_max("9.0"), 0);
    assert_int_equal(cuModuleLoadData(&m, "this is not PTX"), CUDA_ERROR_INVALID_PTX);
    assert_int_equal(cuModuleLoadData(&m, ".version 9.0\n.address_size 64\n"), CUDA_ERROR_INVALID_PTX);
    assert_int_equal(cuModuleLoadData(&m, ".version 9.0\n.target sm_80\n.visible .entry e(.param .u64 p) { ret; "),
                     CUDA_ERROR_INVALID_PTX);
    /* A hand-written entry: alignment of a struct, a .ptr qualifier, launch bounds, a declaration. */
    static const char hand[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                               ".extern .entry decl(.param .u32 x);\n"
                               ".visible .entry e(.param .u8 a, .param .u64 .ptr .global .align 16 p,\n"
                               "  .param .align 16 .b8 s[20], .param .f32 f)\n.maxntid 64, 2, 1\n"
                               "{ .shared .align 8 .b8 sh[100]; .extern .shared .b8 dynsh[]; ret; }\n";
    assert_int_equal(cuModuleLoadData(&m, hand), CUDA_SUCCESS);
    CUfunction f;
    assert_int_equal(cuModuleGetFunction(&f, m, "decl"), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(cuModuleGetFunction(&f, m, "e"), CUDA_SUCCESS);
    size_t off[4] = {0}, size[4] = {0}, want_off[4] = {0, 8, 16, 36}, want_size[4] = {1, 8, 20, 4};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(cuFuncGetParamInfo(f, i, &off[i], &size[i]), CUDA_SUCCESS);
        assert_int_equal(off[i], want_off[i]);
        assert_int_equal(size[i], want_size[i]);
    }
    assert_int_equal(cuFuncGetParamInfo(f, 4, &off[0], NULL), CUDA_ERROR_INVALID_VALUE);
    int a;
    assert_int_equal(cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), CUDA_SUCCESS);
    assert_int_equal(a, 128);
    assert_int_equal(cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), CUDA_SUCCESS);
    assert_int_equal(a, 100);
    assert_int_equal(cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_PTX_VERSION, f), CUDA_SUCCESS);
    assert_int_equal(a, 80);
    assert_int_equal(cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f), CUDA_SUCCESS);
    assert_int_equal(a, 90);
    assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
    pop(D90);
    free(newer);
    kcd_load_stats s;
    kcd_loads(&s);
    assert_int_equal(s.refused, 4);
    assert_int_equal(s.module_loads, 2);
    defects_are(0); /* refusals, an absent kernel and a probe past the last parameter are answers, not misuse */
}

static void test_refusal_rules(void **state) {
    (void)state;
    fresh();
    CUmodule m;
    assert_int_equal(kcd_refuse("sm_90", CUDA_ERROR_INVALID_IMAGE), 0);
    load_on(D90, "sm_90", CUDA_ERROR_INVALID_IMAGE);
    m = load_on(D90, "sm_90a", CUDA_SUCCESS); /* another target: not refused */
    assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
    assert_int_equal(kcd_refuse("*", CUDA_ERROR_NO_BINARY_FOR_GPU), 0);
    load_on(D90, "compute_80", CUDA_ERROR_NO_BINARY_FOR_GPU);
    load_on(D90, "sm_90", CUDA_ERROR_INVALID_IMAGE); /* the exact rule wins over '*' */
    assert_int_equal(kcd_refuse("*", CUDA_SUCCESS), 0);
    assert_int_equal(kcd_refuse("sm_90", CUDA_SUCCESS), 0);
    m = load_on(D90, "sm_90", CUDA_SUCCESS);
    assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
    kcd_refuse_next(2, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    load_on(D90, "sm_90", CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    load_on(D80, "compute_80", CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    m = load_on(D90, "sm_90", CUDA_SUCCESS);
    assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
    kcd_load_stats s;
    kcd_loads(&s);
    assert_int_equal(s.refused, 5);
    assert_int_equal(s.module_loads, 3);
    assert_int_equal(s.module_unloads, 3);
    kcd_reset(); /* forgets the rules */
    m = load_on(D90, "sm_90", CUDA_SUCCESS);
    assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
    defects_are(0);
    no_leaks();
}

/* k's parameter table, from a cubin of each register convention and from PTX, and the bytes of a launch. */
static void test_params_and_argument_bytes(void **state) {
    (void)state;
    fresh();
    static const struct {
        int dev;
        const char *target;
    } imgs_[] = {{D80, "sm_80"}, {D90, "sm_90"}, {D90, "compute_90"}};
    for (size_t t = 0; t < 3; t++) {
        int dev = imgs_[t].dev;
        CUmodule m = load_on(dev, imgs_[t].target, CUDA_SUCCESS);
        push(dev);
        CUfunction f;
        assert_int_equal(cuModuleGetFunction(&f, m, "k"), CUDA_SUCCESS);
        CUfunction again;
        assert_int_equal(cuModuleGetFunction(&again, m, "k"), CUDA_SUCCESS);
        assert_ptr_equal(f, again);
        const size_t want_off[5] = {0, 8, 16, 24, 32}, want_size[5] = {8, 4, 8, 8, 12};
        for (size_t i = 0; i < 5; i++) {
            size_t o, s;
            assert_int_equal(cuFuncGetParamInfo(f, i, &o, &s), CUDA_SUCCESS);
            assert_int_equal(o, want_off[i]);
            assert_int_equal(s, want_size[i]);
        }
        size_t o;
        assert_int_equal(cuFuncGetParamInfo(f, 5, &o, NULL), CUDA_ERROR_INVALID_VALUE);
        int a;
        assert_int_equal(cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), CUDA_SUCCESS);
        assert_int_equal(a, 256); /* sm_90's section also holds the driver's reserved 1 KiB */
        assert_int_equal(cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f), CUDA_SUCCESS);
        assert_int_equal(a, 48 * 1024 - 256);
        assert_int_equal(cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_NUM_REGS, f), CUDA_SUCCESS);
        if (t < 2) assert_true(a > 4 && a <= 255); /* sh_info >> 24 on sm_80, EIATTR_REGCOUNT on sm_90 */
        assert_int_equal(cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_BINARY_VERSION, f), CUDA_SUCCESS);
        assert_int_equal(a, CAPS[dev][0] * 10 + CAPS[dev][1]);
        CUfunction lb;
        assert_int_equal(cuModuleGetFunction(&lb, m, "lb"), CUDA_SUCCESS);
        assert_int_equal(cuFuncGetAttribute(&a, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, lb), CUDA_SUCCESS);
        assert_int_equal(a, 128);

        CUdeviceptr p;
        assert_int_equal(cuMemAlloc(&p, 1024), CUDA_SUCCESS);
        struct {
            int a, b, c;
        } s = {1, -2, 3};
        int n = 7;
        size_t big = ((size_t)1 << 40) | 5;
        double d = 3.25;
        void *args[] = {&p, &n, &big, &d, &s};
        unsigned before = (unsigned)kcd_launch_count();
        assert_int_equal(cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
        kcd_launch l;
        assert_int_equal(kcd_launch_get(before, &l), 0);
        assert_string_equal(l.kernel, "k");
        assert_string_equal(l.target, imgs_[t].target);
        assert_int_equal(l.grid[0], 2);
        assert_int_equal(l.block[0], 64);
        assert_int_equal(l.device, dev);
        assert_int_equal(l.nparams, 5);
        assert_int_equal(l.args_len, 44);
        for (size_t i = 0; i < 5; i++) assert_int_equal(l.param_size[i], want_size[i]);
        assert_int_equal(kcd_launch_arg_u64(&l, 0), p);
        assert_int_equal(kcd_launch_arg_u64(&l, 1), 7);
        assert_int_equal(kcd_launch_arg_u64(&l, 2), big);
        double dd;
        assert_int_equal(kcd_launch_arg(&l, 3, &dd, sizeof dd), 8);
        assert_true(dd == 3.25);
        assert_memory_equal(l.args + 32, &s, 12);
        /* the same bytes through `extra` */
        unsigned char buf[44] = {0};
        memcpy(buf, l.args, 44);
        size_t bs = 44;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bs, CU_LAUNCH_PARAM_END};
        assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra), CUDA_SUCCESS);
        kcd_launch l2;
        assert_int_equal(kcd_launch_get(before + 1, &l2), 0);
        assert_memory_equal(l2.args, l.args, 44);
        assert_int_equal(cuMemFree(p), CUDA_SUCCESS);
        assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
        pop(dev);
    }
    defects_are(0);
    no_leaks();
}

/* Launches the driver refuses, each a defect; and what makes them pass. */
static void test_launch_checks(void **state) {
    (void)state;
    fresh();
    CUmodule m = load_on(D90, "sm_90", CUDA_SUCCESS);
    CUfunction k, lb, dyn;
    assert_int_equal(cuModuleGetFunction(&k, m, "k"), CUDA_SUCCESS);
    assert_int_equal(cuModuleGetFunction(&lb, m, "lb"), CUDA_SUCCESS);
    assert_int_equal(cuModuleGetFunction(&dyn, m, "dyn"), CUDA_SUCCESS);
    CUdeviceptr p;
    CUstream s;
    void *one[] = {&p};
    assert_int_equal(cuLaunchKernel(dyn, 1, 1, 1, 32, 1, 1, 0, NULL, one, NULL), CUDA_ERROR_INVALID_CONTEXT);
    push(D90);
    assert_int_equal(cuMemAlloc(&p, 4096), CUDA_SUCCESS);
    size_t defects = 1;
    struct {
        unsigned g[3], b[3], shared;
        CUfunction *f;
        CUresult want;
    } cases[] = {
        {{0, 1, 1}, {32, 1, 1}, 0, &dyn, CUDA_ERROR_INVALID_VALUE},
        {{1, 65536, 1}, {32, 1, 1}, 0, &dyn, CUDA_ERROR_INVALID_VALUE},
        {{1, 1, 1}, {1025, 1, 1}, 0, &dyn, CUDA_ERROR_INVALID_VALUE},
        {{1, 1, 1}, {1, 1, 65}, 0, &dyn, CUDA_ERROR_INVALID_VALUE},
        {{1, 1, 1}, {32, 32, 2}, 0, &dyn, CUDA_ERROR_INVALID_VALUE},
        {{1, 1, 1}, {129, 1, 1}, 0, &lb, CUDA_ERROR_INVALID_VALUE},
        {{1, 1, 1}, {128, 1, 1}, 0, &lb, CUDA_SUCCESS},
        {{1, 1, 1}, {32, 1, 1}, 48 * 1024 + 1, &dyn, CUDA_ERROR_INVALID_VALUE},
        {{1, 1, 1}, {32, 1, 1}, 48 * 1024, &dyn, CUDA_SUCCESS},
        {{2147483647u, 65535, 65535}, {1024, 1, 1}, 0, &dyn, CUDA_SUCCESS},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CUresult r = cuLaunchKernel(*cases[i].f, cases[i].g[0], cases[i].g[1], cases[i].g[2], cases[i].b[0],
                                    cases[i].b[1], cases[i].b[2], cases[i].shared, NULL, one, NULL);
        if (r != cases[i].want) fail_msg("case %zu: %d, expected %d", i, (int)r, (int)cases[i].want);
        defects += r != CUDA_SUCCESS;
    }
    defects_are(defects);
    /* more dynamic shared memory, once asked for, up to the device's opt-in less the static */
    assert_int_equal(cuFuncSetAttribute(dyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100 * 1024),
                     CUDA_SUCCESS);
    assert_int_equal(cuLaunchKernel(dyn, 1, 1, 1, 32, 1, 1, 100 * 1024, NULL, one, NULL), CUDA_SUCCESS);
    assert_int_equal(cuFuncSetAttribute(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 227 * 1024 - 255),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuFuncSetAttribute(k, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 227 * 1024 - 256),
                     CUDA_SUCCESS);
    defects_are(++defects);
    /* arguments */
    int n = 1;
    size_t big = 2;
    double d = 1;
    struct {
        int a, b, c;
    } st = {0, 0, 0};
    void *args[] = {&p, &n, NULL, &d, &st};
    assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
    args[2] = &big;
    size_t bs = 40;
    unsigned char buf[44] = {0};
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bs, CU_LAUNCH_PARAM_END};
    assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, NULL, args, extra), CUDA_ERROR_INVALID_VALUE);
    bs = 44;
    assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, extra), CUDA_SUCCESS);
    assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    defects += 4;
    defects_are(defects);
    defect_says("kernelParams[2] is NULL");
    /* streams: destroyed, or of nobody */
    assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
    assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
    assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, args, NULL), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, (CUstream)(uintptr_t)0x1234, args, NULL),
                     CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, CU_STREAM_PER_THREAD, args, NULL), CUDA_SUCCESS);
    defects += 2;
    defects_are(defects);
    defect_says("was destroyed");
    assert_int_equal(cuMemFree(p), CUDA_SUCCESS);
    assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
    pop(D90);
    no_leaks();
}

/* What is left alive is reported, and misuse is counted. */
static void test_leaks_and_defects(void **state) {
    (void)state;
    fresh();
    CUmodule m = load_on(D80, "sm_80", CUDA_SUCCESS);
    char buf[4096];
    push(D80);
    CUdeviceptr p, q;
    CUstream s;
    assert_int_equal(cuMemAlloc(&p, 100), CUDA_SUCCESS);
    assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    assert_int_equal(kcd_leaks(buf, sizeof buf), 3);
    assert_non_null(strstr(buf, "module"));
    assert_non_null(strstr(buf, "sm_80:"));
    assert_non_null(strstr(buf, " dyn"));
    assert_non_null(strstr(buf, "allocation"));
    assert_non_null(strstr(buf, "stream"));
    assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
    assert_int_equal(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
    defects_are(1);
    /* memory */
    assert_true(p % 256 == 0);
    unsigned char host[128] = {1};
    assert_int_equal(cuMemcpyHtoD(p, host, 100), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(p + 1, host, 100), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemcpyDtoH(host, p + 100, 1), CUDA_ERROR_INVALID_VALUE);
    defects_are(3);
    defect_says("runs past its allocation");
    assert_int_equal(cuMemAlloc(&q, 8), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(q + 4), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemFree(q), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(q), CUDA_ERROR_INVALID_VALUE);
    defects_are(5);
    defect_says("double free");
    /* a kernel argument that points at freed memory: the launch works, the defect is recorded */
    CUfunction f;
    assert_int_equal(cuModuleGetFunction(&f, m, "dyn"), CUDA_SUCCESS);
    void *args[] = {&q};
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    defects_are(6);
    defect_says("in no live allocation");
    /* the unloaded module's function */
    assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
    void *pargs[] = {&p};
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, pargs, NULL), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
    defects_are(8);
    defect_says("launch of 'dyn', whose module was unloaded");
    assert_int_equal(cuMemFree(p), CUDA_SUCCESS);
    pop(D80);
    /* an unbalanced pop */
    CUcontext c;
    assert_int_equal(cuCtxPopCurrent(&c), CUDA_ERROR_INVALID_CONTEXT);
    defects_are(9);
    assert_int_equal(kcd_leaks(buf, sizeof buf), 0);
    /* a release that drops the primary context takes what it owned with it */
    assert_int_equal(cuDevicePrimaryCtxRelease(D86), CUDA_SUCCESS); /* setup's hold */
    push(D86);
    assert_int_equal(cuMemAlloc(&p, 64), CUDA_SUCCESS);
    CUmodule m2;
    assert_int_equal(cuModuleLoadData(&m2, image("sm_86")->image), CUDA_SUCCESS);
    assert_int_equal(kcd_leaks(NULL, 0), 2);
    pop(D86);
    assert_int_equal(kcd_leaks(NULL, 0), 0);
    assert_int_equal(cuModuleUnload(m2), CUDA_ERROR_INVALID_HANDLE);
    defects_are(10);
    assert_int_equal(cuDevicePrimaryCtxRetain(&c, D86), CUDA_SUCCESS); /* held again */
}

/* Capture, instantiate, replay: the call sequence and the replayed launches. */
static void test_capture_and_replay(void **state) {
    (void)state;
    fresh();
    CUmodule m = load_on(D90, "sm_90", CUDA_SUCCESS);
    push(D90);
    CUfunction f;
    CUstream s;
    CUdeviceptr a, b, pool;
    CUgraph g;
    CUgraphExec x;
    assert_int_equal(cuModuleGetFunction(&f, m, "dyn"), CUDA_SUCCESS);
    assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&a, 256), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&b, 256), CUDA_SUCCESS);
    assert_int_equal(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    void *args[] = {&a};
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&pool, 64), CUDA_SUCCESS); /* allowed in relaxed mode */
    assert_int_equal(cuMemcpyDtoDAsync(b, a, 256, s), CUDA_SUCCESS);
    assert_int_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
    assert_int_equal(cuGraphInstantiateWithFlags(&x, g, 0), CUDA_SUCCESS);
    assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
    unsigned char in[256], out[256];
    for (int i = 0; i < 256; i++) in[i] = (unsigned char)i;
    assert_int_equal(cuMemcpyHtoD(a, in, 256), CUDA_SUCCESS);
    assert_int_equal(cuGraphLaunch(x, s), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(out, b, 256), CUDA_SUCCESS);
    assert_memory_equal(in, out, 256); /* the copy node ran at the replay, not at the capture */
    assert_int_equal(kcd_launch_count(), 2);
    kcd_launch l;
    assert_int_equal(kcd_launch_get(0, &l), 0);
    assert_true(l.captured && !l.replayed);
    assert_int_equal(kcd_launch_get(1, &l), 0);
    assert_true(!l.captured && l.replayed);
    assert_int_equal(kcd_launch_arg_u64(&l, 0), a);
    assert_ptr_equal(l.stream, s);
    const char *seq[] = {"cuStreamBeginCapture_v2 s",
                         "relaxed",
                         "cuLaunchKernel dyn grid=1,1,1 block=64,1,1",
                         "captured",
                         "cuMemAlloc_v2 64",
                         "cuMemcpyDtoDAsync_v2",
                         "(captured)",
                         "cuStreamEndCapture",
                         "(2 nodes)",
                         "cuGraphInstantiateWithFlags",
                         "cuGraphDestroy",
                         "cuGraphLaunch x",
                         ": 2 nodes"};
    kcdt_log_in_order(seq, sizeof seq / sizeof seq[0]);
    defects_are(1);
    /* a global-mode capture: cuMemAlloc is illegal and invalidates it */
    assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    CUdeviceptr no;
    assert_int_equal(cuMemAlloc(&no, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_null(g);
    /* synchronising the context during any capture is illegal */
    assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    defects_are(3);
    /* a node whose module went: the whole graph launch fails */
    assert_int_equal(cuModuleUnload(m), CUDA_SUCCESS);
    assert_int_equal(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_HANDLE);
    defect_says("node 0 launches 'dyn', whose module was unloaded");
    assert_int_equal(kcd_launch_count(), 2);
    assert_int_equal(cuGraphExecDestroy(x), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(pool), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(a), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(b), CUDA_SUCCESS);
    assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
    pop(D90);
    no_leaks();
}

/* cuMemsetD8Async / cuMemsetD32Async: bytes really set, bounds and alignment checked, logged, captured as a node
 * that sets nothing until the graph is launched. */
static void test_memset(void **state) {
    (void)state;
    fresh();
    push(D90);
    CUstream s;
    CUdeviceptr a;
    CUgraph g;
    CUgraphExec x;
    unsigned char in[256], out[256], want[256];
    for (int i = 0; i < 256; i++) in[i] = (unsigned char)(i | 1);
    assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&a, 256), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyHtoD(a, in, 256), CUDA_SUCCESS);
    /* D8: bytes 16..79 only */
    assert_int_equal(cuMemsetD8Async(a + 16, 0, 64, s), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(out, a, 256), CUDA_SUCCESS);
    memcpy(want, in, 256);
    memset(want + 16, 0, 64);
    assert_memory_equal(out, want, 256);
    /* D32: 8 words of a pattern at byte 128 */
    assert_int_equal(cuMemsetD32Async(a + 128, 0x11223344u, 8, s), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(out, a, 256), CUDA_SUCCESS);
    for (int i = 0; i < 8; i++) memcpy(want + 128 + 4 * i, "\x44\x33\x22\x11", 4);
    assert_memory_equal(out, want, 256);
    defects_are(0);
    /* past the allocation, a misaligned D32: refused, nothing written, defects */
    assert_int_equal(cuMemsetD8Async(a + 200, 0, 57, s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemsetD32Async(a + 2, 0, 1, s), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemcpyDtoH(out, a, 256), CUDA_SUCCESS);
    assert_memory_equal(out, want, 256);
    defects_are(2);
    defect_says("runs past its allocation");
    defect_says("not 4-byte aligned");
    /* captured: a node; the bytes change at the launch, not at the capture */
    assert_int_equal(cuMemcpyHtoD(a, in, 256), CUDA_SUCCESS);
    assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    assert_int_equal(cuMemsetD8Async(a, 0, 256, s), CUDA_SUCCESS);
    assert_int_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
    assert_int_equal(cuGraphInstantiateWithFlags(&x, g, 0), CUDA_SUCCESS);
    assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(out, a, 256), CUDA_SUCCESS);
    assert_memory_equal(out, in, 256);
    assert_int_equal(cuGraphLaunch(x, s), CUDA_SUCCESS);
    assert_int_equal(cuMemcpyDtoH(out, a, 256), CUDA_SUCCESS);
    memset(want, 0, 256);
    assert_memory_equal(out, want, 256);
    const char *seq[] = {"cuMemsetD8Async",         "= 0 x 64 (64 bytes) on s",
                         "cuMemsetD32Async",        "= 0x11223344 x 8 (32 bytes)",
                         "cuMemsetD8Async",         "-> CUDA_ERROR_INVALID_VALUE",
                         "cuStreamBeginCapture_v2", "cuMemsetD8Async",
                         "(256 bytes) on s",        "(captured)",
                         "cuStreamEndCapture",      "(1 nodes)",
                         "cuGraphLaunch x",         ": 1 nodes"};
    kcdt_log_in_order(seq, sizeof seq / sizeof seq[0]);
    /* a replay whose memset node's allocation went: the launch fails whole */
    assert_int_equal(cuMemFree(a), CUDA_SUCCESS);
    assert_int_equal(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_VALUE);
    defect_says("node 0 sets 256 bytes");
    assert_int_equal(cuGraphExecDestroy(x), CUDA_SUCCESS);
    assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
    pop(D90);
    no_leaks();
}

/* kcache's own load and launch path on the double: recorded as it happened. */
static void test_through_kcache(void **state) {
    (void)state;
    fresh();
    const kc_compiled *c = image("sm_90");
    kc_module *m;
    void *fn;
    assert_int_equal(kc_module_load(&m, D90, c->image, c->len), KC_OK);
    assert_int_equal(kc_module_function(m, "k", &fn), KC_OK);
    assert_int_equal(kc_cuda_push(D90), KC_OK);
    void *p;
    assert_int_equal(kc_cuda_malloc(&p, 4096, NULL), KC_OK);
    int n = 3;
    size_t sz = 4096;
    double d = 0.5;
    struct {
        int a, b, c;
    } s = {4, 5, 6};
    void *args[] = {&p, &n, &sz, &d, &s};
    unsigned grid[3] = {4, 1, 1}, block[3] = {256, 1, 1};
    assert_int_equal(kc_cuda_launch(fn, grid, block, 0, NULL, args), KC_OK);
    kcd_launch l;
    assert_int_equal(kcd_launch_count(), 1);
    assert_int_equal(kcd_launch_get(0, &l), 0);
    assert_string_equal(l.kernel, "k");
    assert_int_equal(l.grid[0], 4);
    assert_int_equal(l.block[0], 256);
    assert_int_equal(kcd_launch_arg_u64(&l, 0), (uint64_t)(uintptr_t)p);
    assert_int_equal(kcd_launch_arg_u64(&l, 2), 4096);
    unsigned huge[3] = {1024, 1, 1};
    assert_int_equal(kc_cuda_launch(fn, grid, huge, 64 * 1024, NULL, args), KC_EDRIVER);
    assert_non_null(strstr(kc_error_last()->message, "CUDA_ERROR_INVALID_VALUE"));
    kc_cuda_free(p, NULL);
    kc_cuda_pop();
    kc_module_free(m);
    /* an image the device cannot run: refused, named */
    assert_int_equal(kc_module_load(&m, D80, image("sm_90a")->image, image("sm_90a")->len), KC_EREFUSED);
    assert_non_null(strstr(kc_error_last()->message, "CUDA_ERROR_NO_BINARY_FOR_GPU"));
    const char *seq[] = {"cuLibraryLoadData cubin sm_90 ->",
                         "cuMemAllocAsync 4096",
                         "cuLaunchKernel k grid=4,1,1",
                         "cuLaunchKernel -> CUDA_ERROR_INVALID_VALUE",
                         "cuMemFreeAsync",
                         "cuLibraryUnload",
                         "cuLibraryLoadData -> CUDA_ERROR_NO_BINARY_FOR_GPU"};
    kcdt_log_in_order(seq, sizeof seq / sizeof seq[0]);
    defects_are(1); /* the launch with too much shared memory */
    no_leaks();
}

/* Many threads at once, each with its own context stack: nothing lost, nothing mixed up. */
#define THREADS 6
#define ROUNDS 40
static CUfunction shared_fn;
static void *worker(void *arg) {
    int dev = (int)(intptr_t)arg, bad = 0;
    CUcontext c;
    bad |= cuDevicePrimaryCtxRetain(&c, dev) != CUDA_SUCCESS || cuCtxPushCurrent(c) != CUDA_SUCCESS;
    for (int i = 0; i < ROUNDS && !bad; i++) {
        CUdeviceptr p = 0;
        CUstream s = NULL;
        if (cuMemAlloc(&p, 64 + (size_t)i) != CUDA_SUCCESS ||
            cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
            bad = 1;
            break;
        }
        void *args[] = {&p};
        bad |= cuLaunchKernel(shared_fn, 1, 1, 1, 32, 1, 1, 0, s, args, NULL) != CUDA_SUCCESS;
        bad |= cuStreamDestroy(s) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS;
    }
    bad |= cuCtxPopCurrent(&c) != CUDA_SUCCESS || cuDevicePrimaryCtxRelease(dev) != CUDA_SUCCESS;
    return (void *)(intptr_t)bad;
}

static void test_threads(void **state) {
    (void)state;
    fresh();
    CUlibrary l;
    CUkernel k;
    assert_int_equal(cuLibraryLoadData(&l, image("compute_80")->image, NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
    assert_int_equal(cuLibraryGetKernel(&k, l, "dyn"), CUDA_SUCCESS);
    push(D90);
    assert_int_equal(cuKernelGetFunction(&shared_fn, k), CUDA_SUCCESS);
    pthread_t t[THREADS];
    for (intptr_t i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)D90), 0);
    for (int i = 0; i < THREADS; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        assert_null(bad);
    }
    assert_int_equal(kcd_launch_count(), THREADS * ROUNDS);
    pop(D90);
    /* a function is its context's: on another device's context it is refused */
    push(D80);
    CUdeviceptr p = 0;
    void *args[] = {&p};
    assert_int_equal(cuLaunchKernel(shared_fn, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_CONTEXT);
    pop(D80);
    assert_int_equal(cuLibraryUnload(l), CUDA_SUCCESS);
    defects_are(1);
    no_leaks();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exports_what_kcache_asks_for),
        cmocka_unit_test(test_kcache_sees_the_double),
        cmocka_unit_test(test_variant_table),
        cmocka_unit_test(test_truncated_and_malformed_cubin),
        cmocka_unit_test(test_ptx),
        cmocka_unit_test(test_refusal_rules),
        cmocka_unit_test(test_params_and_argument_bytes),
        cmocka_unit_test(test_launch_checks),
        cmocka_unit_test(test_leaks_and_defects),
        cmocka_unit_test(test_capture_and_replay),
        cmocka_unit_test(test_memset),
        cmocka_unit_test(test_through_kcache),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

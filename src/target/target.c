/* SPDX-License-Identifier: Apache-2.0 */
/*
 * target.c — target names, the variant check, and the ordered candidates for a device:
 * the one implementation of [Note: variant selection] (include/kcache/target.h).
 *
 * The one idea: there is a single list.  kc_target_candidates writes, for a compute
 * capability, the variant names a device can run, most preferred first; the lookup opens
 * them in that order, and kc_variant_select is the same list applied to a set of names.
 * Two selections could disagree (a family cubin found by one and not the other); one
 * cannot.  The architectures that exist are named in the two tables below, so that no
 * candidate is a name no toolkit makes.
 *
 * Callers: nvrtc.c (parsing the compile target), entry.c and the store (variant names),
 * cache.c (checking a variant), graph/ (lookup.c's candidates and target, explain.c),
 * prewarm/manifest.c (a manifest's targets), the tools.
 * Must not: touch files, NVRTC or the driver — everything here is a pure function of its
 * arguments, safe from any thread.
 */
#include "kcache/target.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "../common/api.h"
#include "../common/internal.h"

/* ---- names ---- */

int kc_target_parse(const char *name, kc_target *out) {
    if (!name || !out) return kc_err(KC_EINVAL, "kc_target_parse: NULL argument");
    kc_target t = KC_TARGET_INIT;
    const char *p;
    if (strncmp(name, "sm_", 3) == 0) p = name + 3;
    else if (strncmp(name, "compute_", 8) == 0) p = name + 8, t.ptx = KC_TARGET_PTX;
    else return kc_err(KC_EARCH, "unknown target '%.40s' (want sm_XY, sm_XYa, sm_XYf or compute_XY)", name);
    int digits = 0, v = 0;
    while (p[digits] >= '0' && p[digits] <= '9' && digits < 4) v = v * 10 + (p[digits] - '0'), digits++;
    if (digits < 2 || digits > 3)
        return kc_err(KC_EARCH, "unknown target '%.40s' (its compute capability is 2 or 3 digits: sm_90, sm_100)",
                      name);
    if (p[0] == '0') /* "sm_080" would name sm_80 under another name: one name per target */
        return kc_err(KC_EARCH, "unknown target '%.40s' (a compute capability has no leading zero)", name);
    const char *rest = p + digits;
    if (*rest == 'a' || *rest == 'f') t.suffix = *rest++;
    if (*rest != '\0') return kc_err(KC_EARCH, "unknown target '%.40s' (the suffix is 'a', 'f' or none)", name);
    t.major = v / 10;
    t.minor = v % 10;
    if (t.major < 3) return kc_err(KC_EARCH, "target '%s' is too old", name);
    *out = t;
    return KC_OK;
}

void kc_target_name(const kc_target *t, char out[16]) {
    snprintf(out, 16, "%s_%d%d%s", t->ptx ? "compute" : "sm", t->major, t->minor,
             t->suffix == 'a'   ? "a"
             : t->suffix == 'f' ? "f"
                                : "");
}

int kc_variant_check(const char *v) {
    if (!v) return kc_err(KC_EINVAL, "variant is NULL");
    size_t n = strlen(v);
    if (n == 0 || n > KC_VARIANT_MAX)
        return kc_err(KC_EINVAL, "variant '%s' must be 1..%d characters", v, KC_VARIANT_MAX);
    for (size_t i = 0; i < n; i++)
        if (!kc_name_char((unsigned char)v[i]))
            return kc_err(KC_EINVAL, "variant '%s' has a character outside [a-z0-9_]", v);
    return KC_OK;
}

/* ---- [Note: variant selection] ---- */

/* Compute capabilities as 10 * major + minor. */
#define CC(major, minor) ((major)*10 + (minor))
/* The first major with arch-specific ('a') targets (Hopper, CUDA 12.0). */
#define KC_ARCH_SPECIFIC_MAJOR 9
/* The first major with family ('f') targets (Blackwell, CUDA 12.9). */
#define KC_FAMILY_MAJOR 10

/*
 * Every real architecture some CUDA toolkit has made cubins for (CUDA 10 to 13), newest
 * first: a lower minor of the device's major is a candidate only if it is here.  sm_101
 * is CUDA 12.8/12.9's name for what CUDA 13.0 calls sm_110; sm_88 is new in CUDA 13.0.
 */
static const int real_archs[] = {121, 120, 110, 103, 101, 100, 90, 89, 88, 87, 86, 80, 75,
                                 72,  70,  62,  61,  60,  53,  52, 50, 37, 35, 32, 30};

/*
 * The virtual architectures tried as PTX, newest first: CUDA 13.0's list (nvcc
 * --list-gpu-arch: 75 80 86 87 88 89 90 100 103 110 120 121) with CUDA 12's 50 to 72 and
 * 101, so that PTX a CUDA 12 toolchain prewarmed still serves (kc_variant_select took any
 * PTX at or below the device before the one list).  Each is a file open, on a miss only.
 */
static const int virtual_archs[] = {121, 120, 110, 103, 101, 100, 90, 89, 88, 87, 86,
                                    80,  75,  72,  70,  62,  61,  60, 53, 52, 50};

static int is_real_arch(int cc) {
    for (size_t i = 0; i < KC_ARRAY_LEN(real_archs); i++)
        if (real_archs[i] == cc) return 1;
    return 0;
}

/* Append "<prefix>_<cc><suffix>" when there is room. */
static void put(char out[][16], size_t cap, size_t *n, const char *prefix, int cc, const char *suffix) {
    if (*n < cap) snprintf(out[(*n)++], 16, "%s_%d%s", prefix, cc, suffix);
}

size_t kc_target_candidates(int major, int minor, char out[][16], size_t cap) {
    if (!out || major < 3 || major > 99 || minor < 0 || minor > 9) return 0;
    if (cap > KC_TARGET_CANDIDATES_MAX) cap = KC_TARGET_CANDIDATES_MAX;
    size_t n = 0;
    int dev = CC(major, minor);
    /* This device: arch-specific, family, plain. */
    if (major >= KC_ARCH_SPECIFIC_MAJOR) put(out, cap, &n, "sm", dev, "a");
    if (major >= KC_FAMILY_MAJOR) put(out, cap, &n, "sm", dev, "f");
    put(out, cap, &n, "sm", dev, "");
    /* Lower minors of the same major, highest first: binary compatible. */
    for (int y = minor - 1; y >= 0; y--) {
        if (!is_real_arch(CC(major, y))) continue;
        if (major >= KC_FAMILY_MAJOR) put(out, cap, &n, "sm", CC(major, y), "f");
        put(out, cap, &n, "sm", CC(major, y), "");
    }
    /* PTX for the highest virtual architecture <= X.Y first: the driver JIT-compiles it. */
    for (size_t i = 0; i < KC_ARRAY_LEN(virtual_archs); i++)
        if (virtual_archs[i] <= dev) put(out, cap, &n, "compute", virtual_archs[i], "");
    return n;
}

int kc_variant_select(const char *const *variants, size_t n, int major, int minor) {
    if (!variants) return KC_MISS;
    char cand[KC_TARGET_CANDIDATES_MAX][16];
    size_t nc = kc_target_candidates(major, minor, cand, KC_TARGET_CANDIDATES_MAX);
    for (size_t c = 0; c < nc; c++)
        for (size_t i = 0; i < n; i++)
            if (variants[i] && strcmp(variants[i], cand[c]) == 0) return (int)i;
    return KC_MISS;
}

void kc_target_for_device(int major, int minor, kc_target *out) {
    /* The plain cubin: 'a' and 'f' features are the caller's to ask for, not ours to assume. */
    kc_target t = {major, minor, KC_TARGET_CUBIN, '\0'};
    *out = t;
}

void kc_variant_for_device(int major, int minor, char out[16]) {
    kc_target t;
    kc_target_for_device(major, minor, &t);
    kc_target_name(&t, out);
}

/* ---- the targets a toolchain supports ([Note: target check]) ---- */

/* The first compute capability with family ('f') targets. */
#define KC_FAMILY_CC (KC_FAMILY_MAJOR * 10)
/* The first compute capability with arch-specific ('a') targets. */
#define KC_ARCH_SPECIFIC_CC (KC_ARCH_SPECIFIC_MAJOR * 10)

static int list_version(const char *fn, const kc_target_list *l) {
    if (!l) return kc_err(KC_EINVAL, "%s: NULL argument", fn);
    return kc_api_version(fn, "kc_target_list", "KC_TARGET_LIST_INIT", l->version, KC_TARGET_LIST_VERSION);
}

/* Insert cc into the ascending set l->cc unless present or full. */
static void list_add(kc_target_list *l, int cc) {
    size_t i = 0;
    while (i < l->n && l->cc[i] < cc) i++;
    if ((i < l->n && l->cc[i] == cc) || l->n >= KC_TARGET_LIST_MAX) return;
    memmove(&l->cc[i + 1], &l->cc[i], (l->n - i) * sizeof l->cc[0]);
    l->cc[i] = cc;
    l->n++;
}

/* The table is built once per process (a lookup asks for it on every call: kc_target_known_). */
static kc_target_list table_built;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_build(void) {
    kc_target_list *t = &table_built;
    t->version = KC_TARGET_LIST_VERSION;
    t->from = KC_TARGETS_TABLE;
    t->family = 1;
    for (size_t i = 0; i < KC_ARRAY_LEN(real_archs); i++) list_add(t, real_archs[i]);
    for (size_t i = 0; i < KC_ARRAY_LEN(virtual_archs); i++) list_add(t, virtual_archs[i]);
}

int kc_target_table(kc_target_list *out) {
    int rc = list_version("kc_target_table", out);
    if (rc) return rc;
    unsigned version = out->version;
    pthread_once(&table_once, table_build);
    *out = table_built;
    out->version = version;
    return KC_OK;
}

int kc_target_list_has(const kc_target_list *l, const kc_target *t) {
    if (!l || !t || l->version < 1) return 0;
    int cc = CC(t->major, t->minor);
    if (t->suffix == 'a' && cc < KC_ARCH_SPECIFIC_CC) return 0;
    if (t->suffix == 'f' && (cc < KC_FAMILY_CC || !l->family)) return 0;
    for (size_t i = 0; i < l->n && i < KC_TARGET_LIST_MAX; i++)
        if (l->cc[i] == cc) return 1;
    return 0;
}

/* Append to out as snprintf would, keeping *o the length wanted. */
KC_PRINTF(4, 5) static void put_text(char *out, size_t cap, size_t *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(*o < cap ? out + *o : NULL, *o < cap ? cap - *o : 0, fmt, ap);
    va_end(ap);
    if (w > 0) *o += (size_t)w;
}

size_t kc_target_list_text(const kc_target_list *l, char *out, size_t cap) {
    if (!out) cap = 0;
    if (cap) out[0] = '\0';
    if (!l || l->version < 1) return 0;
    size_t o = 0;
    if (l->from == KC_TARGETS_NVRTC) put_text(out, cap, &o, "NVRTC %d.%d compiles", l->nvrtc_major, l->nvrtc_minor);
    else put_text(out, cap, &o, "kcache's table (NVRTC not asked) knows");
    int a = 0, f = 0;
    for (size_t i = 0; i < l->n && i < KC_TARGET_LIST_MAX; i++) {
        put_text(out, cap, &o, " sm_%d", l->cc[i]);
        a |= l->cc[i] >= KC_ARCH_SPECIFIC_CC;
        f |= l->cc[i] >= KC_FAMILY_CC && l->family;
    }
    put_text(out, cap, &o, "%s", l->n ? " and compute_XY of each" : " no target");
    if (a) put_text(out, cap, &o, "; sm_XYa and compute_XYa from %d", KC_ARCH_SPECIFIC_CC);
    if (f) put_text(out, cap, &o, "; sm_XYf and compute_XYf from %d", KC_FAMILY_CC);
    return o;
}

size_t kc_target_list_names(const kc_target_list *l, char out[][16], size_t cap) {
    if (!l || l->version < 1) return 0;
    static const char *const forms[][2] = {{"sm", ""},      {"sm", "a"},      {"sm", "f"},
                                           {"compute", ""}, {"compute", "a"}, {"compute", "f"}};
    size_t n = 0;
    for (size_t k = 0; k < KC_ARRAY_LEN(forms); k++)
        for (size_t i = 0; i < l->n && i < KC_TARGET_LIST_MAX; i++) {
            kc_target t = {l->cc[i] / 10, l->cc[i] % 10, forms[k][0][0] == 'c' ? KC_TARGET_PTX : KC_TARGET_CUBIN,
                           forms[k][1][0]};
            if (!kc_target_list_has(l, &t)) continue;
            if (out && n < cap) kc_target_name(&t, out[n]);
            n++;
        }
    return n;
}

int kc_target_check(const kc_target_list *l, const char *name, const char *where, kc_target *out) {
    int rc = list_version("kc_target_check", l);
    if (rc) return rc;
    kc_target t;
    char why[160] = "", list[1024];
    if (!name) return kc_err(KC_EINVAL, "kc_target_check: name is NULL");
    if (kc_target_parse(name, &t) != KC_OK) {
        const char *m = kc_error_last()->message, *p = strchr(m, '(');
        snprintf(why, sizeof why, "%s", p ? p + 1 : m); /* the grammar's reason: "(want sm_XY, …)", "too old" */
        size_t wl = strlen(why);
        if (p && wl && why[wl - 1] == ')') why[wl - 1] = '\0';
    } else if (kc_target_list_has(l, &t)) {
        if (out) *out = t;
        return KC_OK;
    } else {
        snprintf(why, sizeof why, "not a target of this toolchain");
    }
    kc_target_list_text(l, list, sizeof list);
    char shown[48] = "";
    size_t j = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && j + 5 < sizeof shown; p++)
        j += (size_t)(*p < 0x20 || *p >= 0x7f ? snprintf(shown + j, sizeof shown - j, "\\x%02x", *p)
                                              : snprintf(shown + j, sizeof shown - j, "%c", *p));
    return kc_err(KC_EARCH, "unknown target '%s'%s%s%s: %s; %s; see 'kcache toolchain --targets'", shown,
                  where ? " (" : "", where ? where : "", where ? ")" : "", why, list);
}

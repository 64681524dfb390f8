/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unit_names_test.h — what test_unit_names.c and test_unit_names_remote.c share: the `#define foo
 * bar` source, graphs asking its names, the lowered name a stored graph entry gives a kernel, and a
 * unit record planted as the code before [Note: recorded names] (src/graph/unitstore.c) stored it.
 *
 * The one idea: fb.cu has kernels `foo` and `bar` and `#define foo bar` between them, so the name
 * expression `foo` lowers to bar's symbol (_Z3barPf) — though a kernel `foo` (_Z3fooPf) is in the
 * image too, and a lookup that guessed a plain name's kernel from the image's symbols served that.
 *
 * Who may include it: those two tests, after kcache.h and helpers.h.  Must not: assert what a test
 * proves (only that its own steps worked).
 */
#ifndef KCACHE_TESTS_UNIT_NAMES_TEST_H
#define KCACHE_TESTS_UNIT_NAMES_TEST_H

#include <sys/stat.h>

#include "graph/graph_internal.h" /* kc_unit_key_at_, kc_graph_kernel_src, kc_units_group */

static const char kcun_source[] = "__global__ void foo(float *x) { x[0] = 1.0f; }\n"
                                  "#define foo bar\n"
                                  "__global__ void bar(float *x) { x[0] = 2.0f; }\n";

/* The graph `name` asking fb.cu (written under dir/specs) for the names in `entries` (one kernel
 * each, ids k0, k1, …, each launched once on the output). */
static inline kc_graph_desc *kcun_graph(const char *dir, const char *name, const char *const *entries, size_t n) {
    char p[700], kern[1024] = "", steps[1024] = "", js[4096];
    snprintf(p, sizeof p, "%s/specs", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/specs/fb.cu", dir);
    assert_int_equal(kct_write(p, kcun_source, strlen(kcun_source)), 0);
    for (size_t i = 0; i < n; i++) {
        size_t kl = strlen(kern), sl = strlen(steps);
        snprintf(kern + kl, sizeof kern - kl, "%s{\"id\": \"k%zu\", \"file\": \"fb.cu\", \"entry\": \"%s\"}",
                 i ? ", " : "", i, entries[i]);
        snprintf(steps + sl, sizeof steps - sl,
                 "%s{\"kernel\": \"k%zu\", \"grid\": [1, 1, 1], \"block\": [1, 1, 1], \"args\": [\"output:0\"]}",
                 i ? ", " : "", i);
    }
    snprintf(
        js, sizeof js,
        "{\"name\": \"%s\", \"kernels\": [%s],"
        " \"inputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}], \"outputs\": [{\"dtype\": \"f32\", \"sizes\": [\"N\"]}],"
        " \"forward\": [%s]}",
        name, kern, steps);
    snprintf(p, sizeof p, "%s/specs/%s.json", dir, name);
    assert_int_equal(kct_write(p, js, strlen(js)), 0);
    kc_graph_desc *d;
    if (kc_graph_desc_load(&d, p) != KC_OK) fail_msg("%s", kc_error_last()->message);
    return d;
}

typedef struct kcun_lowered {
    const char *name;
    char got[256];
} kcun_lowered;
static inline void kcun_find(const char *name, const char *lowered, const char *target, int is_ptx, size_t bytes,
                             void *ctx) {
    (void)target, (void)is_ptx, (void)bytes;
    kcun_lowered *l = ctx;
    if (strcmp(name, l->name) == 0) snprintf(l->got, sizeof l->got, "%s", lowered);
}

/* The graph entry `info` names in `c` (local), for `variant`. */
static inline kc_entry *kcun_entry(kc_cache *c, const kc_graph_info *info, const char *variant) {
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, info->key), KC_OK);
    kc_entry *e;
    if (kc_cache_peek(c, &k, variant, &e) != KC_OK) fail_msg("no graph entry %s.%s", info->key, variant);
    return e;
}

/* Fail unless the stored graph entry of `info` gives name expression `name` the symbol `want`. */
static inline void kcun_expect_lowered(kc_cache *c, const kc_graph_info *info, const char *name, const char *want) {
    kc_entry *e = kcun_entry(c, info, "sm_90");
    kcun_lowered l = {name, ""};
    assert_int_equal(kc_entry_kernels(e, kcun_find, &l), KC_OK);
    kc_entry_free(e);
    if (strcmp(l.got, want) != 0) fail_msg("'%s' was given the kernel '%s', not '%s'", name, l.got, want);
}

/*
 * Plant in `c` the unit record of d's only unit for sm_90 as the code before [Note: recorded
 * names] keyed it (no "unit_record" component), naming the image of the stored graph entry `made`
 * (a graph of the same unit) and holding `expr` → `lowered`: what a lookup of the old rules would
 * have served.  kc_cache_put: local, and the remote when `c` has a writable one.
 */
static inline void kcun_plant_old_record(kc_cache *c, const kc_graph_desc *d, const kc_graph_info *made,
                                         const char *expr, const char *lowered) {
    kc_kernel_src ks[4];
    assert_true(d->nkernels <= 4);
    for (size_t i = 0; i < d->nkernels; i++) ks[i] = kc_graph_kernel_src(&d->kernels[i]);
    kc_units *u = malloc(sizeof *u);
    assert_non_null(u);
    kc_units_group(ks, d->nkernels, u);
    assert_int_equal(u->n, 1);
    kc_toolchain_choice tc;
    char toolkit[33];
    assert_int_equal(kc_cache_toolchain(c, &tc), KC_OK);
    assert_int_equal(kc_graph_toolkit_id_(c, d, toolkit), KC_OK);
    kc_key old, now;
    kc_target sm90;
    kc_unit_set us;
    assert_int_equal(kc_target_parse("sm_90", &sm90), KC_OK);
    kc_unit_set_init_(&us, ks, d->nkernels, u, &sm90, tc.id, toolkit);
    assert_int_equal(kc_unit_key_at_(&us, 0, 0, &old, NULL), KC_OK);
    assert_int_equal(kc_unit_key_(&us, 0, &now, NULL), KC_OK);
    assert_memory_not_equal(old.bytes, now.bytes, sizeof old.bytes); /* the records' version is in the key */
    free(u);
    kc_entry *g = kcun_entry(c, made, "sm_90");
    kc_image_ref *refs;
    size_t n;
    assert_int_equal(kc_entry_images(g, &refs, &n), KC_OK);
    assert_int_equal(n, 1);
    kc_entry *rec;
    const char *ex[1] = {expr}, *lo[1] = {lowered};
    assert_int_equal(kc_unit_entry_new(&rec, &old, &refs[0], ex, lo, 1), KC_OK);
    assert_int_equal(kc_entry_set_origin(rec, "compile_us", "1000"), KC_OK);
    assert_int_equal(kc_cache_put(c, rec), KC_OK);
    kc_entry_free(rec);
    free(refs);
    kc_entry_free(g);
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_input_links.c — issue 15 item 17: the inputs a user names are read through symbolic
 * links, as Bazel's runfiles tree lays them out (every file a link into the source tree): a
 * spec, the sources and headers it names beside it, and a prewarm manifest.  (Bundles and the
 * key file through links: test_bundle; links inside the cache refused: test_local, test_fs.)
 */
#include "kcache.h"
#include "helpers.h"

static void link_in(const char *runfiles, const char *file) {
    char from[600], to[600];
    snprintf(from, sizeof from, "%s/%s", KC_KERNELS_DIR, file);
    snprintf(to, sizeof to, "%s/%s", runfiles, file);
    assert_int_equal(symlink(from, to), 0);
}

static void test_a_runfiles_tree_of_links_loads(void **state) {
    (void)state;
    char *d = kct_tmpdir("input-links");
    link_in(d, "softmax.json");
    link_in(d, "softmax.cu");
    link_in(d, "common.cuh");
    char spec[600];
    snprintf(spec, sizeof spec, "%s/softmax.json", d);
    kc_graph_desc *g = NULL;
    int rc = kc_graph_desc_load(&g, spec);
    if (rc) fail_msg("a spec read through links: %s", kc_error_last()->message);
    kc_graph_desc_free(g);
    char real[600], m[600];
    snprintf(real, sizeof real, "%s/manifest.real.json", d);
    snprintf(m, sizeof m, "%s/manifest.json", d);
    const char *j = "{\"graphs\": [\"softmax.json\"]}";
    assert_int_equal(kct_write(real, j, strlen(j)), 0);
    assert_int_equal(symlink(real, m), 0);
    kc_manifest *man = NULL;
    rc = kc_manifest_load(&man, m);
    if (rc) fail_msg("a manifest read through a link: %s", kc_error_last()->message);
    kc_manifest_free(man);
    kct_rmtree(d);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_runfiles_tree_of_links_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

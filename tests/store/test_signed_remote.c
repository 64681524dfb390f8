/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_signed_remote.c — Ed25519-signed entries through a real redis-server and bundles (issue
 * 20): a build host with the private key writes signed entries; a GPU host holding only public
 * keys takes them from Redis and from a bundle; entries in Redis that are unsigned, or signed by a key its
 * keyring does not trust, are refused (counted mac_rejected) and never loaded — the graph is
 * compiled instead, and what that host compiles is not published (it cannot vouch for it).
 * Compile-only (NVRTC), no GPU.
 */
#include "kcache.h"
#include "helpers.h"
#include "redis_server.h"

static char *tmp;

static kc_cache *open_with(const char *dir, const char *url, const char *signer, const char *keyring) {
    return kct_open_remote(dir, url, signer, keyring, NULL);
}

static void test_signed_entries_only(void **state) {
    (void)state;
    if (!kct_have_redis()) skip();
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    char build_key[600], other_key[600], ring[600], other_ring[600], d1[600], d2[600], d3[600], d4[600], bundle[600];
    snprintf(build_key, sizeof build_key, "%s/build", tmp);
    snprintf(other_key, sizeof other_key, "%s/other", tmp);
    assert_int_equal(kc_sign_keygen(build_key, NULL), KC_OK);
    assert_int_equal(kc_sign_keygen(other_key, NULL), KC_OK);
    snprintf(ring, sizeof ring, "%s/build.pub", tmp);
    snprintf(other_ring, sizeof other_ring, "%s/other.pub", tmp);
    strcat(build_key, ".key"), strcat(other_key, ".key");
    snprintf(d1, sizeof d1, "%s/buildhost", tmp), snprintf(d2, sizeof d2, "%s/gpuhost", tmp);
    snprintf(d3, sizeof d3, "%s/planter", tmp), snprintf(d4, sizeof d4, "%s/fresh", tmp);
    snprintf(bundle, sizeof bundle, "%s/warm.kcb", tmp);
    kc_graph_desc *signed_g = kct_graph("dropout.json", 0x51), *planted = kct_graph("global_norm.json", 0x52);
    kc_graph_info info = KC_GRAPH_INFO_INIT;

    /* The build host signs what it compiles; Redis gets signed entries. */
    kc_cache *b = open_with(d1, r.url, build_key, ring);
    assert_int_equal(kc_graph_compile(b, signed_g, "sm_90", &info), KC_OK);
    assert_int_equal(kc_cache_remote_flush(b), KC_OK);
    kc_bundle_filter f;
    memset(&f, 0, sizeof f);
    kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_export(b, bundle, &f, &rep), KC_OK);
    kc_cache_close(b);
    /* Someone without the private key plants one signed by another key, and an unsigned one. */
    kc_cache *p = open_with(d3, r.url, other_key, NULL);
    assert_int_equal(kc_graph_compile(p, planted, "sm_90", &info), KC_OK);
    assert_int_equal(kc_cache_remote_flush(p), KC_OK);
    kc_cache_close(p);
    char d6[600];
    snprintf(d6, sizeof d6, "%s/planter2", tmp);
    kc_graph_desc *unsigned_g = kct_graph("layer_norm.json", 0x54);
    p = open_with(d6, r.url, NULL, NULL);
    assert_int_equal(kc_graph_compile(p, unsigned_g, "sm_90", &info), KC_OK);
    assert_int_equal(kc_cache_remote_flush(p), KC_OK);
    kc_cache_close(p);

    /* The GPU host holds public keys only. */
    kc_cache *g = open_with(d2, r.url, NULL, ring);
    assert_int_equal(kc_graph_compile(g, signed_g, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_REMOTE);
    assert_int_equal(kc_graph_compile(g, planted, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE); /* the other key's entry refused, compiled here */
    assert_true(kct_stat(g, KC_STAT_MAC_REJECTED) >= 1);
    uint64_t rejected = kct_stat(g, KC_STAT_MAC_REJECTED);
    assert_int_equal(kc_graph_compile(g, unsigned_g, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE); /* the unsigned entry refused too */
    assert_true(kct_stat(g, KC_STAT_MAC_REJECTED) > rejected);
    kc_graph_desc_free(unsigned_g);
    /* What it compiles stays local: it cannot vouch for it. */
    kc_graph_desc *own = kct_graph("softmax.json", 0x53);
    assert_int_equal(kc_graph_compile(g, own, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    kc_graph_desc_free(own);
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, info.key), KC_OK);
    assert_int_equal(kc_cache_publish(g, &k, "sm_90"), KC_EUNTRUSTED);
    assert_non_null(strstr(kc_error_last()->message, "no signing key"));
    assert_int_equal(kc_cache_remote_flush(g), KC_OK);
    kc_cache_close(g);
    /* Nor did its put send it: another keyring-only host finds nothing of it in Redis to refuse. */
    char d5[600];
    snprintf(d5, sizeof d5, "%s/gpuhost2", tmp);
    kc_cache *h = open_with(d5, r.url, NULL, ring);
    own = kct_graph("softmax.json", 0x53);
    assert_int_equal(kc_graph_compile(h, own, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(kct_stat(h, KC_STAT_MAC_REJECTED), 0);
    kc_graph_desc_free(own);
    kc_cache_close(h);

    /* A bundle: signed entries import into a keyring-only cache; with a keyring of another key, the
     * bundle is refused whole. */
    kc_options o = KC_OPTIONS_INIT;
    o.dir = d4;
    o.flags = KC_OPEN_NO_ENV;
    o.keyring = ring;
    kc_cache *fresh;
    assert_int_equal(kc_cache_open(&fresh, &o), KC_OK);
    if (kc_bundle_import(fresh, bundle, 0, &rep) != KC_OK) fail_msg("import: %s", kc_error_last()->message);
    assert_true(rep.written > 0);
    kc_cache_close(fresh);
    kct_rmtree(d4);
    o.keyring = other_ring;
    assert_int_equal(kc_cache_open(&fresh, &o), KC_OK);
    assert_int_equal(kc_bundle_import(fresh, bundle, 0, &rep), KC_EUNTRUSTED);
    assert_int_equal(kct_count_files(d4, ".kce"), 0);
    kc_cache_close(fresh);

    kc_graph_desc_free(signed_g), kc_graph_desc_free(planted);
    kct_redis_stop(&r, SIGTERM);
}

KCT_TMPDIR_FIXTURE(tmp, "signed")

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_signed_entries_only, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

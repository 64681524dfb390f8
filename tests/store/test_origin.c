/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_origin.c — each local entry records where it came from and what verified it (issue 20
 * item 4, [Note: provenance record] in src/store/local.c), against a real redis-server: a compile
 * here records "compiled"; an entry fetched by a host with a keyring records the remote's URL and
 * the signing key ("verified=ed25519:<id>"), by a host with a MAC key the MAC key's id, by a host
 * that checks nothing "verified=none"; an imported bundle records its file name.  The record is
 * never trusted: a 0400 file whose record was rewritten to "compiled" is still refused when
 * published, and a malformed record reads as unknown.  A file system without user extended
 * attributes (injected ENOTSUP) stores the entry all the same and says the detail is unavailable.
 * Compile-only (NVRTC), no GPU.
 */
#include <errno.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "kcache.h"
#include "kcache/sys/store.h"
#include "helpers.h"
#include "redis_server.h"
#include "store/local.h" /* kc_local_xattr_fault_ */

static char *tmp;
KCT_TMPDIR_FIXTURE(tmp, "origin")

static const char MAC_KEY[] = "a fleet secret of 32 bytes......";

static kc_cache *open_with(const char *dir, const char *url, const char *signer, const char *keyring, int mac) {
    return kct_open_remote(dir, url, signer, keyring, mac ? MAC_KEY : NULL);
}

static void entry_path(const char *dir, const char *key_hex, const char *variant, char *out, size_t cap) {
    snprintf(out, cap, "%s/v1/%.2s/%s.%s.kce", dir, key_hex, key_hex, variant);
}

/* The provenance of graph `key_hex`'s entry (sm_90) in `dir`, and of each of its images. */
static kc_provenance graph_prov(const char *dir, const char *key_hex) {
    char p[1024];
    entry_path(dir, key_hex, "sm_90", p, sizeof p);
    kc_provenance pv;
    assert_int_equal(kc_provenance_read(p, &pv), KC_OK);
    return pv;
}

/* Every image of graph `key_hex` in `dir` (opened as `c`) has the graph entry's provenance. */
static void images_like(kc_cache *c, const char *dir, const char *key_hex, const kc_provenance *want) {
    kc_key k;
    kc_entry *e;
    kc_image_ref *refs;
    size_t n;
    assert_int_equal(kc_key_from_hex(&k, key_hex), KC_OK);
    assert_int_equal(kc_cache_peek(c, &k, "sm_90", &e), KC_OK);
    assert_int_equal(kc_entry_images(e, &refs, &n), KC_OK);
    assert_true(n >= 1);
    for (size_t i = 0; i < n; i++) {
        char hex[KC_KEY_HEX_LEN + 1], p[1024];
        kc_key_to_hex(&refs[i].id, hex);
        entry_path(dir, hex, KC_VARIANT_IMAGE, p, sizeof p);
        kc_provenance pv;
        assert_int_equal(kc_provenance_read(p, &pv), KC_OK);
        assert_int_equal(pv.kind, want->kind);
        assert_int_equal(pv.recorded, want->recorded);
        assert_string_equal(pv.source, want->source);
        assert_string_equal(pv.verifier, want->verifier);
    }
    free(refs);
    kc_entry_free(e);
}

static void test_compiled_fetched_imported(void **state) {
    (void)state;
    if (!kct_have_redis()) skip();
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    char key[600], ring[600], dbuild[600], dring[600], dnone[600], dmac[600], dimp[600], dimp2[600], bundle[600];
    char id[2 * KC_SIGN_KEY_ID_LEN + 1], want[64];
    snprintf(key, sizeof key, "%s/build", tmp);
    assert_int_equal(kc_sign_keygen(key, id), KC_OK);
    snprintf(ring, sizeof ring, "%s/build.pub", tmp);
    strcat(key, ".key");
    snprintf(dbuild, sizeof dbuild, "%s/build-host", tmp), snprintf(dring, sizeof dring, "%s/keyring-host", tmp);
    snprintf(dnone, sizeof dnone, "%s/plain-host", tmp), snprintf(dmac, sizeof dmac, "%s/mac-host", tmp);
    snprintf(dimp, sizeof dimp, "%s/imported", tmp), snprintf(dimp2, sizeof dimp2, "%s/imported-plain", tmp);
    snprintf(bundle, sizeof bundle, "%s/warm bundle.kcb", tmp); /* a space: recorded as '_' */
    kc_graph_desc *g = kct_graph("dropout.json", 0x0419), *gm = kct_graph("softmax.json", 0x0420);
    kc_graph_info info = KC_GRAPH_INFO_INIT;

    /* Compiled here: "compiled", mode 0600 agreeing. */
    kc_cache *b = open_with(dbuild, r.url, key, ring, 0);
    assert_int_equal(kc_graph_compile(b, g, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    char gkey[KC_KEY_HEX_LEN + 1];
    snprintf(gkey, sizeof gkey, "%s", info.key);
    kc_provenance pv = graph_prov(dbuild, gkey);
    assert_int_equal(pv.kind, KC_PROV_COMPILED);
    assert_int_equal(pv.recorded, 1);
    assert_int_equal(pv.unavailable, 0);
    assert_true(pv.created > 0);
    images_like(b, dbuild, gkey, &pv);
    assert_int_equal(kc_cache_remote_flush(b), KC_OK);
    kc_bundle_filter f;
    memset(&f, 0, sizeof f);
    kc_bundle_report rep = KC_BUNDLE_REPORT_INIT;
    assert_int_equal(kc_bundle_export(b, bundle, &f, &rep), KC_OK);
    kc_cache_close(b);

    /* Fetched by a host with the keyring: the remote's URL and the key that signed it. */
    kc_cache *c = open_with(dring, r.url, NULL, ring, 0);
    assert_int_equal(kc_graph_compile(c, g, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_REMOTE);
    pv = graph_prov(dring, gkey);
    snprintf(want, sizeof want, "ed25519:%s", id);
    assert_int_equal(pv.kind, KC_PROV_FETCHED);
    assert_int_equal(pv.recorded, 1);
    assert_string_equal(pv.source, r.url);
    assert_string_equal(pv.verifier, want);
    images_like(c, dring, gkey, &pv);
    kc_cache_close(c);

    /* Fetched by a host that checks nothing: "verified=none". */
    c = open_with(dnone, r.url, NULL, NULL, 0);
    assert_int_equal(kc_graph_compile(c, g, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_REMOTE);
    pv = graph_prov(dnone, gkey);
    assert_int_equal(pv.kind, KC_PROV_FETCHED);
    assert_string_equal(pv.source, r.url);
    assert_string_equal(pv.verifier, "none");
    images_like(c, dnone, gkey, &pv);
    kc_cache_close(c);

    /* A MAC fleet: the MAC key's id, never the key. */
    c = open_with(dbuild, r.url, NULL, NULL, 1);
    assert_int_equal(kc_graph_compile(c, gm, "sm_90", &info), KC_OK);
    assert_int_equal(kc_cache_remote_flush(c), KC_OK);
    kc_cache_close(c);
    c = open_with(dmac, r.url, NULL, NULL, 1);
    assert_int_equal(kc_graph_compile(c, gm, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_REMOTE);
    pv = graph_prov(dmac, info.key);
    assert_int_equal(pv.kind, KC_PROV_FETCHED);
    assert_int_equal(strlen(pv.verifier), 4 + 2 * KC_SIGN_KEY_ID_LEN);
    assert_memory_equal(pv.verifier, "mac:", 4);
    assert_null(strstr(pv.verifier, "6120666c")); /* "a fl", the key's first bytes in hex */
    kc_cache_close(c);

    /* Imported: the bundle's file name, and the key that verified it (none without a keyring). */
    c = open_with(dimp, "", NULL, ring, 0);
    assert_int_equal(kc_bundle_import(c, bundle, 0, &rep), KC_OK);
    assert_true(rep.written >= 2);
    pv = graph_prov(dimp, gkey);
    assert_int_equal(pv.kind, KC_PROV_IMPORTED);
    assert_string_equal(pv.source, "warm_bundle.kcb");
    assert_string_equal(pv.verifier, want);
    images_like(c, dimp, gkey, &pv);
    kc_cache_close(c);
    c = open_with(dimp2, "", NULL, NULL, 0);
    assert_int_equal(kc_bundle_import(c, bundle, 0, &rep), KC_OK);
    pv = graph_prov(dimp2, gkey);
    assert_int_equal(pv.kind, KC_PROV_IMPORTED);
    assert_string_equal(pv.verifier, "none");
    kc_cache_close(c);

    kc_graph_desc_free(g), kc_graph_desc_free(gm);
    kct_redis_stop(&r, SIGTERM);
}

/* Rewrite a 0400 file's record (as its owner could, with a chmod around it). */
static void set_record(const char *path, const char *text) {
    assert_int_equal(chmod(path, 0600), 0);
    assert_int_equal(setxattr(path, "user.kcache.origin", text, strlen(text), 0), 0);
    assert_int_equal(chmod(path, 0400), 0);
}

static void test_a_record_is_never_trusted(void **state) {
    (void)state;
    if (!kct_have_redis()) skip();
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    char dp[600], da[600], p[1024];
    snprintf(dp, sizeof dp, "%s/planter", tmp), snprintf(da, sizeof da, "%s/host-a", tmp);
    kc_graph_desc *forged = kct_graph("softmax.json", 0x0f0f);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_cache *c = open_with(dp, r.url, NULL, NULL, 0); /* planted without a MAC */
    assert_int_equal(kc_graph_compile(c, forged, "sm_90", &info), KC_OK);
    assert_int_equal(kc_cache_remote_flush(c), KC_OK);
    kc_cache_close(c);
    c = open_with(da, r.url, NULL, NULL, 0); /* host A, no key yet, fetches it */
    assert_int_equal(kc_graph_compile(c, forged, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_REMOTE);
    kc_cache_close(c);
    entry_path(da, info.key, "sm_90", p, sizeof p);
    kc_provenance pv;
    assert_int_equal(kc_provenance_read(p, &pv), KC_OK);
    assert_int_equal(pv.kind, KC_PROV_FETCHED);
    assert_string_equal(pv.verifier, "none");

    /* Claims the mode denies, and malformed records, read as unknown. */
    static const char *const bad[] = {
        "compiled",
        "compiled t=12",
        "fetched redis://x verified=none t=1 extra",
        "fetched redis://x verified=ed25519:zz t=1",
        "fetched  redis://x verified=none",
        "imported b.kcb verified=mac:0123456789abcdeg",
        "fetched redis://x",
        "imported b.kcb verified=none t=-1",
        "sealed b verified=none",
        "fetched redis://x verified=none\n",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        set_record(p, bad[i]);
        assert_int_equal(kc_provenance_read(p, &pv), KC_OK);
        assert_int_equal(pv.kind, KC_PROV_UNKNOWN);
        assert_int_equal(pv.recorded, 0);
        assert_string_equal(pv.verifier, "");
    }
    set_record(p, "imported b.kcb verified=mac:0123456789abcdef t=5"); /* well-formed: read */
    assert_int_equal(kc_provenance_read(p, &pv), KC_OK);
    assert_int_equal(pv.kind, KC_PROV_IMPORTED);
    assert_int_equal(pv.created, 5);

    /* The fleet rolls a MAC key out, flushes Redis; A's record says "compiled": still refused. */
    set_record(p, "compiled t=1");
    redisContext *rc = redisConnect("127.0.0.1", r.port);
    assert_true(rc && !rc->err);
    freeReplyObject(redisCommand(rc, "FLUSHALL"));
    redisFree(rc);
    c = open_with(da, r.url, NULL, NULL, 1);
    kc_key k;
    assert_int_equal(kc_key_from_hex(&k, info.key), KC_OK);
    assert_int_equal(kc_cache_publish(c, &k, "sm_90"), KC_EUNTRUSTED);
    assert_int_equal(kct_stat(c, KC_STAT_PUBLISH_REFUSED), 1);
    kc_cache_close(c);

    /* A 0600 file (compiled here) whose record says fetched: the mode decides. */
    assert_int_equal(chmod(p, 0600), 0);
    assert_int_equal(setxattr(p, "user.kcache.origin", "fetched redis://x verified=none", 31, 0), 0);
    assert_int_equal(kc_provenance_read(p, &pv), KC_OK);
    assert_int_equal(pv.kind, KC_PROV_COMPILED);
    assert_int_equal(pv.recorded, 0);
    kc_graph_desc_free(forged);
    kct_redis_stop(&r, SIGTERM);
}

static void test_no_extended_attributes(void **state) {
    (void)state;
    char d[600], p[1024];
    snprintf(d, sizeof d, "%s/noxattr", tmp);
    kc_graph_desc *g = kct_graph("dropout.json", 0x0e0e);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    kc_cache *c = open_with(d, "", NULL, NULL, 0);
    kc_local_xattr_fault_(ENOTSUP);
    assert_int_equal(kc_graph_compile(c, g, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_int_equal(info.store_status, KC_OK); /* stored all the same */
    entry_path(d, info.key, "sm_90", p, sizeof p);
    kc_provenance pv;
    assert_int_equal(kc_provenance_read(p, &pv), KC_OK);
    assert_int_equal(pv.kind, KC_PROV_COMPILED); /* the mode says so */
    assert_int_equal(pv.recorded, 0);
    assert_int_equal(pv.unavailable, 1);
    kc_local_xattr_fault_(0);
    assert_int_equal(kc_provenance_read(p, &pv), KC_OK);
    assert_int_equal(pv.kind, KC_PROV_COMPILED);
    assert_int_equal(pv.recorded, 0); /* none was written */
    assert_int_equal(pv.unavailable, 0);
    assert_int_equal(getxattr(p, "user.kcache.origin", NULL, 0), -1);
    kc_cache_close(c);
    kc_graph_desc_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compiled_fetched_imported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_record_is_never_trusted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_extended_attributes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

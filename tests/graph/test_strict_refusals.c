/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_strict_refusals.c — an entry found and refused is said, and strict mode makes it an error
 * ([Note: refusals are said] in src/store/tiers.c).  Through a real redis-server: an entry signed by
 * a key the reader's keyring does not trust, an entry sealed with another MAC key, a compile unit
 * record signed by an untrusted key, a corrupt remote entry, a remote graph entry whose image is
 * gone; locally: a corrupt entry and a missing image.  Without KCACHE_STRICT each is a miss whose reason names the entry,
 * where it was found and why it was refused (never "no entry"), and a compile; with it, the lookup
 * fails with the refusal's status (KC_EUNTRUSTED for trust, KC_ECORRUPT for bytes) and that reason, and
 * compiles nothing.  kc_graph_get runs on the driver double; NVRTC compiles for real.
 */
#include <hiredis/hiredis.h>

#include "double/double_test.h"
#include "redis_server.h"

static kct_redis r;
static char *tmp;

typedef struct trust_cfg {
    const char *signer, *keyring, *mac;
} trust_cfg;

static kc_cache *open_at(const char *tag, const char *url, trust_cfg t, int strict) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", tmp, tag);
    kc_options o = KC_OPTIONS_INIT;
    o.dir = p;
    o.flags = KC_OPEN_NO_ENV | (strict ? KC_OPEN_STRICT : 0u);
    o.remote = url;
    o.remote_config.deadline_ms = 2000;
    o.signing_key_file = t.signer;
    o.keyring = t.keyring;
    if (t.mac) o.hmac_key = t.mac, o.hmac_key_len = strlen(t.mac);
    kc_cache *c;
    if (kc_cache_open(&c, &o) != KC_OK) fail_msg("open %s: %s", tag, kc_error_last()->message);
    return c;
}

static size_t graphs_in(const char *tag) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", tmp, tag);
    return kct_count_graphs(p);
}

static kc_graph_desc *softmax_at(int64_t rows) {
    kc_graph_desc *d, *s;
    assert_int_equal(kc_graph_desc_load(&d, KC_KERNELS_DIR "/softmax.json"), KC_OK);
    kc_tensor_meta in = KC_TENSOR_META_INIT;
    in.dtype = KC_DTYPE_F32;
    in.device = KC_DEVICE_CUDA;
    in.rank = 2;
    in.requires_grad = 1;
    in.sizes[0].value = rows;
    in.sizes[1].value = 128;
    in.strides[0].value = 128;
    in.strides[1].value = 1;
    if (kc_graph_desc_specialize(&s, d, &in, 1, NULL, 0, NULL) != KC_OK) fail_msg("%s", kc_error_last()->message);
    kc_graph_desc_free(d);
    return s;
}

/* A writer puts `d`'s sm_90 graph (its units, images) in Redis. */
static void plant(const char *tag, trust_cfg t, kc_graph_desc *d) {
    kc_cache *w = open_at(tag, r.url, t, 0);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(w, d, "sm_90", &info) != KC_OK) fail_msg("plant: %s", kc_error_last()->message);
    assert_int_equal(kc_cache_remote_flush(w), KC_OK);
    kc_cache_close(w);
}

static void has(const char *what, const char *text, const char *needle) {
    if (!strstr(text, needle)) fail_msg("%s: '%s' is not in '%s'", what, needle, text);
}

/* Not strict: a miss whose reason names the refusal (each needle), and a compile. */
static void expect_said(kc_cache *c, kc_graph_desc *d, const char *const *needles) {
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    if (kc_graph_compile(c, d, "sm_90", &info) != KC_OK) fail_msg("lookup: %s", kc_error_last()->message);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    if (strstr(info.miss_reason, "no entry")) fail_msg("the miss reason says no entry: %s", info.miss_reason);
    for (; *needles; needles++) has("miss reason", info.miss_reason, *needles);
}

/* Strict: the lookup's error, with `want` and the refusal's reason (each needle); nothing compiled or kept. */
static void expect_error(int rc, int want, const char *const *needles) {
    const kc_error *e = kc_error_last();
    if (rc != want || e->code != want)
        fail_msg("returned %s, recorded %s (%s); want %s", kc_status_str(rc), kc_status_str(e->code), e->message,
                 kc_status_str(want));
    has("strict error", e->message, "strict (KCACHE_STRICT)");
    for (; *needles; needles++) has("strict error", e->message, *needles);
}

static void test_an_entry_signed_by_an_untrusted_key(void **state) {
    (void)state;
    char mine[600], theirs[600], ring[600];
    snprintf(mine, sizeof mine, "%s/mine", tmp);
    snprintf(theirs, sizeof theirs, "%s/theirs", tmp);
    assert_int_equal(kc_sign_keygen(mine, NULL), KC_OK);
    assert_int_equal(kc_sign_keygen(theirs, NULL), KC_OK);
    snprintf(ring, sizeof ring, "%s/mine.pub", tmp);
    strcat(theirs, ".key");
    kc_graph_desc *d = softmax_at(64), *other_shape = softmax_at(96);
    plant("sig-writer", (trust_cfg){theirs, NULL, NULL}, d);
    const char *why[] = {"entry for sm_90 from redis://127.0.0.1:", "refused", "does not trust", NULL};

    kc_cache *c = open_at("sig-lenient", r.url, (trust_cfg){NULL, ring, NULL}, 0);
    expect_said(c, d, why);
    kc_cache_close(c);

    c = open_at("sig-strict", r.url, (trust_cfg){NULL, ring, NULL}, 1);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    expect_error(kc_graph_compile(c, d, "sm_90", &info), KC_EUNTRUSTED, why);
    assert_int_equal(kct_stat(c, KC_STAT_UNIT_COMPILES), 0);
    kc_graph *g = NULL;
    expect_error(kc_graph_get(c, d, 0, &g, &info), KC_EUNTRUSTED, why);
    assert_null(g);
    /* Another shape of the same kernels: no graph entry in Redis, but its compile unit's record is, and is refused. */
    const char *unit_why[] = {"compile unit record", "from redis://", "refused", "does not trust", NULL};
    expect_error(kc_graph_compile(c, other_shape, "sm_90", &info), KC_EUNTRUSTED, unit_why);
    assert_int_equal(kct_stat(c, KC_STAT_UNIT_COMPILES), 0);
    assert_int_equal(graphs_in("sig-strict"), 0);
    kc_cache_close(c);
    c = open_at("sig-lenient2", r.url, (trust_cfg){NULL, ring, NULL}, 0);
    assert_int_equal(kc_graph_compile(c, other_shape, "sm_90", &info), KC_OK);
    assert_int_equal(info.source, KC_FROM_COMPILE);
    assert_true(info.units_compiled >= 1); /* the refused unit compiled here */
    kc_cache_close(c);
    kc_graph_desc_free(d);
    kc_graph_desc_free(other_shape);
    kcdt_no_defects();
}

static void test_an_entry_sealed_with_another_mac_key(void **state) {
    (void)state;
    kc_graph_desc *d = softmax_at(32);
    plant("mac-writer", (trust_cfg){NULL, NULL, "the writer's key, 32 bytes or more"}, d);
    const char *why[] = {"entry for sm_90 from redis://", "refused", "MAC does not match", NULL};
    trust_cfg mine = {NULL, NULL, "another key entirely, 32 bytes or more"};
    /* Strict first: the lenient host, which can vouch with its key, sends what it compiles to Redis. */
    kc_cache *c = open_at("mac-strict", r.url, mine, 1);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    expect_error(kc_graph_compile(c, d, "sm_90", &info), KC_EUNTRUSTED, why);
    assert_int_equal(graphs_in("mac-strict"), 0);
    kc_cache_close(c);
    c = open_at("mac-lenient", r.url, mine, 0);
    expect_said(c, d, why);
    kc_cache_close(c);
    kc_graph_desc_free(d);
}

static void redis_del_matching(const char *pattern) {
    struct timeval tv = {1, 0};
    redisContext *rc = redisConnectWithTimeout("127.0.0.1", r.port, tv);
    assert_true(rc && !rc->err);
    redisReply *keys = redisCommand(rc, "KEYS %s", pattern);
    assert_true(keys && keys->type == REDIS_REPLY_ARRAY && keys->elements > 0);
    for (size_t i = 0; i < keys->elements; i++) freeReplyObject(redisCommand(rc, "DEL %s", keys->element[i]->str));
    freeReplyObject(keys);
    redisFree(rc);
}

static void test_a_remote_entry_whose_image_is_gone(void **state) {
    (void)state;
    redisContext *rc = redisConnectWithTimeout("127.0.0.1", r.port, (struct timeval){1, 0});
    assert_true(rc && !rc->err);
    freeReplyObject(redisCommand(rc, "FLUSHALL"));
    redisFree(rc);
    kc_graph_desc *d = softmax_at(48);
    plant("img-writer", (trust_cfg){NULL, NULL, NULL}, d);
    redis_del_matching("*.img");
    const char *why[] = {"remote entry for sm_90 refused", NULL};
    kc_cache *c = open_at("img-lenient", r.url, (trust_cfg){NULL, NULL, NULL}, 0);
    expect_said(c, d, why);
    kc_cache_close(c);
    redis_del_matching("*.img"); /* what the lenient host compiled and sent */
    c = open_at("img-strict", r.url, (trust_cfg){NULL, NULL, NULL}, 1);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    expect_error(kc_graph_compile(c, d, "sm_90", &info), KC_ECORRUPT, why);
    assert_int_equal(graphs_in("img-strict"), 0);
    kc_cache_close(c);
    kc_graph_desc_free(d);
}

/* Flip a byte in the middle of every Redis value whose key matches `pattern`. */
static void redis_damage_matching(const char *pattern) {
    struct timeval tv = {1, 0};
    redisContext *rc = redisConnectWithTimeout("127.0.0.1", r.port, tv);
    assert_true(rc && !rc->err);
    redisReply *keys = redisCommand(rc, "KEYS %s", pattern);
    assert_true(keys && keys->type == REDIS_REPLY_ARRAY && keys->elements > 0);
    for (size_t i = 0; i < keys->elements; i++) {
        redisReply *v = redisCommand(rc, "GET %s", keys->element[i]->str);
        assert_true(v && v->type == REDIS_REPLY_STRING && v->len > 64);
        v->str[v->len / 2] ^= 0x5a;
        freeReplyObject(redisCommand(rc, "SET %s %b", keys->element[i]->str, v->str, (size_t)v->len));
        freeReplyObject(v);
    }
    freeReplyObject(keys);
    redisFree(rc);
}

static void test_a_corrupt_remote_entry(void **state) {
    (void)state;
    redisContext *rc = redisConnectWithTimeout("127.0.0.1", r.port, (struct timeval){1, 0});
    assert_true(rc && !rc->err);
    freeReplyObject(redisCommand(rc, "FLUSHALL"));
    redisFree(rc);
    kc_graph_desc *d = softmax_at(24);
    plant("corrupt-writer", (trust_cfg){NULL, NULL, NULL}, d);
    redis_damage_matching("*.sm_90");
    const char *why[] = {"entry for sm_90 from redis://", "refused: corrupt", NULL};
    kc_cache *c = open_at("corrupt-strict", r.url, (trust_cfg){NULL, NULL, NULL}, 1);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    expect_error(kc_graph_compile(c, d, "sm_90", &info), KC_ECORRUPT, why);
    assert_int_equal(graphs_in("corrupt-strict"), 0);
    kc_cache_close(c);
    c = open_at("corrupt-lenient", r.url, (trust_cfg){NULL, NULL, NULL}, 0);
    expect_said(c, d, why);
    kc_cache_close(c);
    kc_graph_desc_free(d);
}

static const char *victim_kind;
static char victim[1024];
static int find_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)ftw;
    if (flag == FTW_F && strstr(p, victim_kind) && !strstr(p, "quarantine")) {
        snprintf(victim, sizeof victim, "%s", p);
        return 1;
    }
    return 0;
}

static void test_a_local_corrupt_entry_and_a_missing_image(void **state) {
    (void)state;
    kc_graph_desc *d = softmax_at(16);
    kc_cache *c = open_at("local", NULL, (trust_cfg){NULL, NULL, NULL}, 0);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    kc_cache_close(c);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/local", tmp);
    /* Damaged: said as refused, corrupt, in the local cache; strict fails with it (and kc_graph_get too). */
    for (int strict = 0; strict < 3; strict++) {
        victim_kind = ".sm_90.kce";
        if (nftw(dir, find_one, 16, FTW_PHYS) != 1) { /* the lenient pass compiled it again */
            c = open_at("local", NULL, (trust_cfg){NULL, NULL, NULL}, 0);
            assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
            kc_cache_close(c);
            assert_int_equal(nftw(dir, find_one, 16, FTW_PHYS), 1);
        }
        size_t n;
        uint8_t *b = kct_read(victim, &n);
        b[n / 2] ^= 0x5a;
        assert_int_equal(kct_write(victim, b, n), 0);
        free(b);
        const char *why[] = {"entry for sm_90 in the local cache refused: corrupt", NULL};
        c = open_at("local", NULL, (trust_cfg){NULL, NULL, NULL}, strict);
        kc_graph *g = NULL;
        if (!strict) expect_said(c, d, why);
        else if (strict == 1) expect_error(kc_graph_compile(c, d, "sm_90", &info), KC_ECORRUPT, why);
        else expect_error(kc_graph_get(c, d, 0, &g, &info), KC_ECORRUPT, why);
        kc_cache_close(c);
    }
    /* An image gone: said as the stored entry refused; strict fails with it. */
    c = open_at("local", NULL, (trust_cfg){NULL, NULL, NULL}, 0);
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    kc_cache_close(c);
    victim_kind = ".img.kce";
    assert_int_equal(nftw(dir, find_one, 16, FTW_PHYS), 1);
    assert_int_equal(unlink(victim), 0);
    const char *why[] = {"stored entry for sm_90 refused", NULL};
    c = open_at("local", NULL, (trust_cfg){NULL, NULL, NULL}, 1);
    expect_error(kc_graph_compile(c, d, "sm_90", &info), KC_ECORRUPT, why);
    kc_cache_close(c);
    c = open_at("local", NULL, (trust_cfg){NULL, NULL, NULL}, 0);
    expect_said(c, d, why);
    kc_cache_close(c);
    kc_graph_desc_free(d);
}

/* A compile unit's record whose image is gone from every tier: strict fails with it (a refusal that
 * names the unit record), instead of compiling the unit again; lenient compiles. */
static void test_a_unit_record_whose_image_is_gone(void **state) {
    (void)state;
    kc_graph_desc *d = softmax_at(16), *other = softmax_at(48); /* another shape: the same unit */
    kc_cache *c = open_at("unitimg", NULL, (trust_cfg){NULL, NULL, NULL}, 0);
    kc_graph_info info = KC_GRAPH_INFO_INIT;
    assert_int_equal(kc_graph_compile(c, d, "sm_90", &info), KC_OK);
    kc_cache_close(c);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/unitimg", tmp);
    victim_kind = ".img.kce";
    assert_int_equal(nftw(dir, find_one, 16, FTW_PHYS), 1);
    assert_int_equal(unlink(victim), 0);
    const char *why[] = {"compile unit record", "is in no tier", NULL};
    c = open_at("unitimg", NULL, (trust_cfg){NULL, NULL, NULL}, 1);
    expect_error(kc_graph_compile(c, other, "sm_90", &info), KC_ECORRUPT, why);
    kc_cache_close(c);
    c = open_at("unitimg", NULL, (trust_cfg){NULL, NULL, NULL}, 0);
    if (kc_graph_compile(c, other, "sm_90", &info) != KC_OK) fail_msg("%s", kc_error_last()->message);
    assert_int_equal(info.units_compiled, 1); /* lenient: the unit compiled again */
    kc_cache_close(c);
    kc_graph_desc_free(other);
    kc_graph_desc_free(d);
}

static int group_setup(void **state) {
    (void)state;
    if (!kct_have_redis()) return 0;
    if (kcd_set_devices("9.0") != 0 || kc_cuda_available() != KC_OK) {
        fprintf(stderr, "the driver double did not load: %s\n", kc_error_last()->message);
        return -1;
    }
    if (kct_redis_start(&r, 0) != 0) return -1;
    tmp = kct_tmpdir("refusals");
    return tmp ? 0 : -1;
}

static int group_teardown(void **state) {
    (void)state;
    if (!tmp) return 0;
    kct_redis_stop(&r, SIGTERM);
    kct_rmtree(tmp);
    free(tmp);
    return 0;
}

int main(void) {
    if (!kct_have_redis()) return KC_SKIP_CODE;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_entry_signed_by_an_untrusted_key),
        cmocka_unit_test(test_an_entry_sealed_with_another_mac_key),
        cmocka_unit_test(test_a_remote_entry_whose_image_is_gone),
        cmocka_unit_test(test_a_corrupt_remote_entry),
        cmocka_unit_test(test_a_local_corrupt_entry_and_a_missing_image),
        cmocka_unit_test(test_a_unit_record_whose_image_is_gone),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

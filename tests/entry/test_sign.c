/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sign.c — Ed25519 signatures of entries (kcache/sign.h, [Note: signatures] in
 * src/entry/entry.c): a key pair made and loaded; a signed entry verifies against a keyring that
 * trusts its key and still decodes; refused (KC_EUNTRUSTED, never the KC_EPERM of an unsafe directory) when unsigned, signed by an untrusted or
 * revoked key, altered with every checksum made right again, carrying a signature moved from
 * another entry, or truncated; rotation (old and new keys both trusted) accepts both; a private
 * key others can read is refused with the reason; a MAC and a signature never together.
 * The MAC is compared over its whole length (each of its bytes flipped is refused), and the trust
 * order holds: with a keyring a signature is required and a MAC is not enough, even where a MAC
 * key is configured too (src/entry/trust.h; mutants mac-half, trust-mac-before-keyring, …).
 */
#include <sys/stat.h>
#include <xxhash.h>

#include "common/internal.h"
#include "entry/trust.h"
#include "kcache.h"
#include "helpers.h"

static char *dir;

static void *encoded(const char *variant, uint8_t fill, size_t *len) {
    kc_key k;
    memset(k.bytes, fill, sizeof k.bytes);
    kc_entry *e;
    assert_int_equal(kc_entry_new(&e, &k, variant), KC_OK);
    assert_int_equal(kc_entry_set_toolchain(e, "nvrtc test"), KC_OK);
    uint8_t body[600];
    for (size_t i = 0; i < sizeof body; i++) body[i] = (uint8_t)(i * fill);
    assert_int_equal(kc_entry_set_section(e, KC_SECTION_KERNELS, body, sizeof body), KC_OK);
    void *b;
    assert_int_equal(kc_entry_encode(e, &b, len), KC_OK);
    kc_entry_free(e);
    return b;
}

static void keypair(const char *name, char *key_path, char *pub_path, char id[17]) {
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "%s/%s", dir, name);
    assert_int_equal(kc_sign_keygen(prefix, id), KC_OK);
    snprintf(key_path, 1100, "%s.key", prefix);
    snprintf(pub_path, 1100, "%s.pub", prefix);
}

/* Make the header checksum and every section checksum right again after bytes were changed. */
static void refix(uint8_t *b) {
    uint32_t nsec = kc_rd_u32(b + 72);
    for (uint32_t i = 0; i < nsec; i++) {
        uint8_t *d = b + 96 + (size_t)i * 40;
        kc_wr_u64(d + 32, XXH3_64bits(b + kc_rd_u64(d + 24), (size_t)kc_rd_u64(d + 16)));
    }
    uint8_t tmp[88 + 16 * 40];
    memcpy(tmp, b, 88);
    memcpy(tmp + 88, b + 96, (size_t)nsec * 40);
    kc_wr_u64(b + 88, XXH3_64bits(tmp, 88 + (size_t)nsec * 40));
}

static void test_sign_verify_and_forgeries(void **state) {
    (void)state;
    char k1[1100], p1[1100], k2[1100], p2[1100], id1[17], id2[17], got[17];
    keypair("producer", k1, p1, id1);
    keypair("other", k2, p2, id2);
    assert_string_not_equal(id1, id2);
    kc_signer *s1, *s2;
    assert_int_equal(kc_signer_load(&s1, k1), KC_OK);
    assert_string_equal(kc_signer_key_id(s1), id1);
    assert_int_equal(kc_signer_load(&s2, k2), KC_OK);
    kc_keyring *ring;
    assert_int_equal(kc_keyring_load(&ring, p1), KC_OK);
    assert_int_equal(kc_keyring_count(ring), 1);

    size_t len, lo, l2;
    void *b = encoded("sm_90", 3, &len), *other = encoded("sm_90", 5, &lo);
    assert_int_equal(kc_entry_sig_check(b, len, ring, got), KC_EUNTRUSTED); /* unsigned */
    assert_int_equal(kc_entry_sign(&b, &len, s1), KC_OK);
    assert_int_equal(kc_entry_sig_check(b, len, ring, got), KC_OK);
    assert_string_equal(got, id1);
    kc_entry *d;
    assert_int_equal(kc_entry_decode(&d, b, len), KC_OK); /* a signed entry decodes */
    kc_entry_free(d);

    /* Signed by a key the ring does not trust. */
    assert_int_equal(kc_entry_sign(&other, &lo, s2), KC_OK);
    assert_int_equal(kc_entry_sig_check(other, lo, ring, got), KC_EUNTRUSTED);
    assert_string_equal(got, id2);
    assert_non_null(strstr(kc_error_last()->message, "does not trust"));

    /* Altered bytes, every checksum made right again: the signature no longer matches. */
    uint8_t *alt = malloc(len);
    memcpy(alt, b, len);
    alt[len - 72 - 10] ^= 0x40; /* inside the last section */
    refix(alt);
    kc_entry *dd;
    assert_int_equal(kc_entry_decode(&dd, alt, len), KC_OK); /* checksums right: only the signature tells */
    kc_entry_free(dd);
    assert_int_equal(kc_entry_sig_check(alt, len, ring, got), KC_EUNTRUSTED);
    assert_non_null(strstr(kc_error_last()->message, "does not match"));

    /* A valid signature moved onto another entry signed by the same key. */
    void *third = encoded("sm_90", 7, &l2);
    assert_int_equal(kc_entry_sign(&third, &l2, s1), KC_OK);
    assert_int_equal(kc_entry_sig_check(third, l2, ring, got), KC_OK);
    uint8_t *moved = third;
    memcpy(moved + l2 - 64, (uint8_t *)b + len - 64, 64);
    assert_int_equal(kc_entry_sig_check(moved, l2, ring, got), KC_EUNTRUSTED);

    /* Truncated: the length no longer frames the trailer. */
    assert_int_equal(kc_entry_sig_check(b, len - 1, ring, got), KC_EUNTRUSTED);
    assert_int_equal(kc_entry_decode(&dd, b, len - 1), KC_ECORRUPT);

    /* Rotation: a ring of both keys takes both; without the old one (revoked), its entries are refused. */
    char both[1200];
    snprintf(both, sizeof both, "%s/ring", dir);
    mkdir(both, 0700);
    char dst[1300];
    snprintf(dst, sizeof dst, "%s/old.pub", both);
    assert_int_equal(link(p1, dst), 0);
    snprintf(dst, sizeof dst, "%s/new.pub", both);
    assert_int_equal(link(p2, dst), 0);
    kc_keyring *rot;
    assert_int_equal(kc_keyring_load(&rot, both), KC_OK);
    assert_int_equal(kc_keyring_count(rot), 2);
    assert_int_equal(kc_entry_sig_check(b, len, rot, got), KC_OK);
    assert_int_equal(kc_entry_sig_check(other, lo, rot, got), KC_OK);
    kc_keyring_free(rot);
    snprintf(dst, sizeof dst, "%s/old.pub", both);
    assert_int_equal(unlink(dst), 0);
    assert_int_equal(kc_keyring_load(&rot, both), KC_OK);
    assert_int_equal(kc_entry_sig_check(b, len, rot, got), KC_EUNTRUSTED); /* revoked */
    kc_keyring_free(rot);

    /* A MAC and a signature never together: sealing a signed entry is refused; signing replaces a MAC. */
    static const char key[] = "a fleet secret of 32 bytes......";
    assert_int_equal(kc_entry_seal(&b, &len, key, sizeof key - 1), KC_EINVAL);
    void *m = encoded("sm_80", 9, &l2);
    assert_int_equal(kc_entry_seal(&m, &l2, key, sizeof key - 1), KC_OK);
    assert_int_equal(kc_entry_sign(&m, &l2, s1), KC_OK);
    assert_int_equal(kc_entry_sig_check(m, l2, ring, got), KC_OK);
    assert_int_not_equal(kc_entry_mac_check(m, l2, key, sizeof key - 1), KC_OK);
    assert_int_equal(kc_entry_decode(&dd, m, l2), KC_OK);
    kc_entry_free(dd);
    ((uint8_t *)m)[12] |= 1; /* both flags: corrupt, whatever the checksums say */
    refix(m);
    assert_int_equal(kc_entry_decode(&dd, m, l2), KC_ECORRUPT);

    free(alt), kc_free(b), kc_free(other), kc_free(third), kc_free(m);
    kc_keyring_free(ring);
    kc_signer_free(s1), kc_signer_free(s2);
}

static void test_key_files(void **state) {
    (void)state;
    char k[1100], p[1100], id[17];
    keypair("perm", k, p, id);
    struct stat st;
    assert_int_equal(stat(k, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char prefix[1100];
    snprintf(prefix, sizeof prefix, "%s/perm", dir);
    assert_int_equal(kc_sign_keygen(prefix, id), KC_EINVAL); /* never replaces a key */
    assert_int_equal(chmod(k, 0644), 0);
    kc_signer *s = (kc_signer *)1;
    assert_int_equal(kc_signer_load(&s, k), KC_EPERM); /* others can read it */
    assert_null(s);
    assert_non_null(strstr(kc_error_last()->message, "chmod 600"));
    assert_int_equal(chmod(k, 0600), 0);
    assert_int_equal(kc_signer_load(&s, k), KC_OK);
    kc_signer_free(s);
    /* A public key file claiming another key's id is refused. */
    size_t n;
    char *text = (char *)kct_read(p, &n);
    text[n] = 0;
    char *sp = strchr(strchr(text, ' ') + 1, ' ') + 1; /* the id */
    sp[0] = sp[0] == '0' ? '1' : '0';
    char bad[1200];
    snprintf(bad, sizeof bad, "%s/bad.pub", dir);
    assert_int_equal(kct_write(bad, text, n), 0);
    free(text);
    kc_keyring *kr = (kc_keyring *)1;
    assert_int_equal(kc_keyring_load(&kr, bad), KC_EINVAL);
    assert_null(kr);
    assert_int_equal(kc_keyring_load(&kr, "/nonexistent/keyring"), KC_EIO);
}

/* Every byte of a MAC counts (a compare over half of it, or of its last byte only, would pass
 * these), and with a keyring a MAC is not enough — a MAC key configured beside it changes nothing. */
static void test_whole_mac_and_the_trust_order(void **state) {
    (void)state;
    static const char key[] = "a fleet secret of 32 bytes......";
    const size_t kl = sizeof key - 1;
    size_t len;
    uint8_t *m = encoded("sm_90", 11, &len);
    assert_int_equal(kc_entry_seal((void **)&m, &len, key, kl), KC_OK);
    assert_int_equal(kc_entry_mac_check(m, len, key, kl), KC_OK);
    for (size_t i = len - 32; i < len; i++) {
        for (unsigned bit = 1; bit < 256; bit <<= 7) { /* bits 0 and 7 */
            m[i] ^= (uint8_t)bit;
            if (kc_entry_mac_check(m, len, key, kl) != KC_EUNTRUSTED)
                fail_msg("MAC byte %zu flipped (bit %u): accepted", i - (len - 32), bit);
            m[i] ^= (uint8_t)bit;
        }
    }
    /* A sealed entry with the signature flag set too (header checksum right): corrupt, not a MAC'd entry. */
    uint8_t *both_flags = malloc(len);
    memcpy(both_flags, m, len);
    both_flags[12] |= 2;
    refix(both_flags);
    kc_entry *dd = (kc_entry *)0x1;
    assert_int_equal(kc_entry_decode(&dd, both_flags, len), KC_ECORRUPT);
    assert_null(dd);
    assert_non_null(strstr(kc_error_last()->message, "both a MAC and a signature"));
    free(both_flags);
    /* A MAC key shorter than KC_MAC_KEY_MIN neither seals nor checks. */
    size_t ul;
    void *u = encoded("sm_90", 12, &ul);
    assert_int_equal(kc_entry_seal(&u, &ul, key, KC_MAC_KEY_MIN - 1), KC_EINVAL);
    assert_int_equal(kc_entry_mac_check(m, len, key, KC_MAC_KEY_MIN - 1), KC_EINVAL);
    kc_free(u);
    char k1[1100], p1[1100], id1[17], who[KC_TRUST_WHO_MAX];
    keypair("trust", k1, p1, id1);
    kc_signer *s1;
    kc_keyring *ring;
    assert_int_equal(kc_signer_load(&s1, k1), KC_OK);
    assert_int_equal(kc_keyring_load(&ring, p1), KC_OK);
    size_t sl;
    void *signed_ = encoded("sm_90", 13, &sl);
    assert_int_equal(kc_entry_sign(&signed_, &sl, s1), KC_OK);

    kc_trust mac_only = {(const uint8_t *)key, kl, NULL, NULL}, both = {(const uint8_t *)key, kl, NULL, ring},
             ring_only = {NULL, 0, NULL, ring};
    assert_int_equal(kc_trust_check(&mac_only, m, len), KC_OK);
    assert_int_equal(kc_trust_check_by(&mac_only, m, len, who), KC_OK);
    assert_memory_equal(who, "mac:", 4);
    /* A keyring and a MAC key: the sealed entry is refused, by both calls; the signed one passes. */
    assert_int_equal(kc_trust_check(&both, m, len), KC_EUNTRUSTED);
    assert_int_equal(kc_trust_check_by(&both, m, len, who), KC_EUNTRUSTED);
    assert_string_equal(who, "");
    assert_int_equal(kc_trust_check(&both, signed_, sl), KC_OK);
    assert_int_equal(kc_trust_check_by(&both, signed_, sl, who), KC_OK);
    char want[40];
    snprintf(want, sizeof want, "ed25519:%s", id1);
    assert_string_equal(who, want);
    /* A keyring alone is a check; a host with a keyring and a MAC key but no signer vouches for nothing. */
    assert_true(kc_trust_checks(&ring_only));
    assert_int_equal(kc_trust_check(&ring_only, m, len), KC_EUNTRUSTED);
    assert_false(kc_trust_can_vouch(&both));
    assert_true(kc_trust_can_vouch(&mac_only));
    kc_free(m), kc_free(signed_);
    kc_keyring_free(ring);
    kc_signer_free(s1);
}

KCT_TMPDIR_FIXTURE(dir, "sign")

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sign_verify_and_forgeries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_whole_mac_and_the_trust_order, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

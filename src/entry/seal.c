/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seal.c — an encoded entry's trailer: the HMAC-SHA256 seal ([Note: MAC]) or the Ed25519
 * signature ([Note: signatures]), added and checked on the bytes, never on a decoded entry.
 *
 * The one idea: a trailer is checked before anything an attacker controls is parsed: the checks
 * read only the fixed header's magic, flags and total length, and the trailer itself.
 *
 * Callers: the trust (sign.c: kc_trust_check, kc_trust_vouch), the CLI's sign command, tests.
 * Must not: decode an entry, or let an entry carry both a MAC and a signature.
 */
#include "kcache/entry.h"

#include <stdio.h>
#include <stdlib.h>

#include "../common/crypto.h"
#include "../common/internal.h"
#include "layout.h"
#include "sign_internal.h"

/* ---- authentication ([Note: MAC]) ----
 * The MAC covers every byte before it, header included, so flipping any bit (the flag
 * too) breaks it.  Checking it reads only the fixed header's magic, flags and total_len:
 * nothing an attacker controls is parsed before the MAC has been verified. */

static int hmac(const void *key, size_t key_len, const void *data, size_t len, uint8_t out[MAC_LEN]) {
    unsigned int n = 0;
    if (key_len < KC_MAC_KEY_MIN) return kc_err(KC_EINVAL, "an HMAC key needs at least %d bytes", KC_MAC_KEY_MIN);
    const kc_crypto *c = kc_crypto_get();
    if (!c) return kc_err_prefix(KC_ERROR, "HMAC-SHA256");
    if (!c->hmac(c->sha256_md(), key, (int)key_len, data, len, out, &n) || n != MAC_LEN)
        return kc_err(KC_ERROR, "HMAC-SHA256 failed");
    return KC_OK;
}

int kc_entry_seal(void **data, size_t *len, const void *key, size_t key_len) {
    if (!data || !*data || !len || !key) return kc_err(KC_EINVAL, "kc_entry_seal: NULL argument");
    uint8_t *h = *data;
    if (*len < HEADER_SIZE || memcmp(h, MAGIC, 8) != 0 || kc_rd_u64(h + 64) != *len)
        return kc_err(KC_EINVAL, "kc_entry_seal: not an encoded entry");
    uint32_t nsec = kc_rd_u32(h + 72);
    if (nsec < 1 || nsec > MAX_SECTIONS || HEADER_SIZE + (size_t)nsec * DESC_SIZE > *len)
        return kc_err(KC_EINVAL, "kc_entry_seal: not an encoded entry");
    uint32_t fl = kc_rd_u32(h + 12);
    if (fl & FLAG_SIG) return kc_err(KC_EINVAL, "kc_entry_seal: the entry is signed (a signature or a MAC, not both)");
    size_t body = *len - ((fl & FLAG_MAC) ? MAC_LEN : 0);
    uint8_t *n = realloc(h, body + MAC_LEN);
    if (!n) return kc_err(KC_ENOMEM, "out of memory");
    *data = n;
    kc_wr_u32(n + 12, kc_rd_u32(n + 12) | FLAG_MAC);
    kc_wr_u64(n + 64, body + MAC_LEN);
    kc_wr_u64(n + SUM_OFFSET, header_sum(n, nsec));
    int rc = hmac(key, key_len, n, body, n + body);
    *len = body + MAC_LEN;
    return rc;
}

int kc_entry_mac_check(const void *data, size_t len, const void *key, size_t key_len) {
    if (!data || !key) return kc_err(KC_EINVAL, "kc_entry_mac_check: NULL argument");
    const uint8_t *h = data;
    if (len < HEADER_SIZE + MAC_LEN || memcmp(h, MAGIC, 8) != 0)
        return kc_err(KC_EUNTRUSTED, "not an authenticated entry (%zu bytes, no header)", len);
    if (!(kc_rd_u32(h + 12) & FLAG_MAC)) return kc_err(KC_EUNTRUSTED, "the entry carries no MAC");
    if (kc_rd_u64(h + 64) != len) return kc_err(KC_EUNTRUSTED, "the entry's length does not frame its MAC");
    uint8_t want[MAC_LEN];
    int rc = hmac(key, key_len, h, len - MAC_LEN, want);
    if (rc) return rc;
    if (kc_memcmp_ct(want, h + len - MAC_LEN, MAC_LEN) != 0)
        return kc_err(KC_EUNTRUSTED, "the entry's MAC does not match (altered, or written with another key)");
    return KC_OK;
}

/*
 * [Note: signatures] A producer signs an encoded entry with its Ed25519 key: flag bit 1 set,
 * total_len and the header checksum made final, then key_id[8] and the signature[64] appended,
 * the signature over every byte before it (header, sections, key id).  A consumer holds only
 * public keys (a keyring): kc_entry_sig_check reads the fixed header's magic, flags and length and
 * the trailer, nothing else, before it verifies — as the MAC check does.  An entry carries a MAC
 * or a signature, never both: signing replaces a MAC, sealing refuses a signed entry.
 */
int kc_entry_sign(void **data, size_t *len, const kc_signer *s) {
    if (!data || !*data || !len || !s) return kc_err(KC_EINVAL, "kc_entry_sign: NULL argument");
    uint8_t *h = *data;
    if (*len < HEADER_SIZE || memcmp(h, MAGIC, 8) != 0 || kc_rd_u64(h + 64) != *len)
        return kc_err(KC_EINVAL, "kc_entry_sign: not an encoded entry");
    uint32_t nsec = kc_rd_u32(h + 72), fl = kc_rd_u32(h + 12);
    if (nsec < 1 || nsec > MAX_SECTIONS || HEADER_SIZE + (size_t)nsec * DESC_SIZE > *len)
        return kc_err(KC_EINVAL, "kc_entry_sign: not an encoded entry");
    size_t body = *len - ((fl & FLAG_MAC) ? MAC_LEN : (fl & FLAG_SIG) ? SIG_TRAILER : 0);
    if (body < HEADER_SIZE + (size_t)nsec * DESC_SIZE) return kc_err(KC_EINVAL, "kc_entry_sign: not an encoded entry");
    uint8_t *n = realloc(h, body + SIG_TRAILER);
    if (!n) return kc_err(KC_ENOMEM, "out of memory");
    *data = n;
    kc_wr_u32(n + 12, (fl & ~FLAG_MAC) | FLAG_SIG);
    kc_wr_u64(n + 64, body + SIG_TRAILER);
    kc_wr_u64(n + SUM_OFFSET, header_sum(n, nsec));
    memcpy(n + body, kc_signer_key_id_bytes(s), KC_SIGN_KEY_ID_LEN);
    int rc = kc_sign_bytes(s, n, body + KC_SIGN_KEY_ID_LEN, n + body + KC_SIGN_KEY_ID_LEN);
    *len = body + SIG_TRAILER;
    return rc;
}

int kc_entry_signer(const void *data, size_t len, char key_id_hex[2 * KC_SIGN_KEY_ID_LEN + 1]) {
    if (key_id_hex) key_id_hex[0] = '\0';
    const uint8_t *h = data;
    if (!h || len < HEADER_SIZE + SIG_TRAILER || memcmp(h, MAGIC, 8) != 0 || !(kc_rd_u32(h + 12) & FLAG_SIG) ||
        kc_rd_u64(h + 64) != len)
        return KC_MISS;
    if (key_id_hex)
        for (int i = 0; i < KC_SIGN_KEY_ID_LEN; i++) snprintf(key_id_hex + 2 * i, 3, "%02x", h[len - SIG_TRAILER + i]);
    return KC_OK;
}

int kc_entry_sig_check(const void *data, size_t len, const kc_keyring *kr,
                       char key_id_hex[2 * KC_SIGN_KEY_ID_LEN + 1]) {
    if (key_id_hex) key_id_hex[0] = '\0';
    if (!data || !kr) return kc_err(KC_EINVAL, "kc_entry_sig_check: NULL argument");
    const uint8_t *h = data;
    if (len < HEADER_SIZE + SIG_TRAILER || memcmp(h, MAGIC, 8) != 0)
        return kc_err(KC_EUNTRUSTED, "not a signed entry (%zu bytes, no header)", len);
    if (!(kc_rd_u32(h + 12) & FLAG_SIG)) return kc_err(KC_EUNTRUSTED, "the entry carries no signature");
    if (kc_rd_u64(h + 64) != len) return kc_err(KC_EUNTRUSTED, "the entry's length does not frame its signature");
    const uint8_t *id = h + len - SIG_TRAILER;
    if (key_id_hex)
        for (int i = 0; i < KC_SIGN_KEY_ID_LEN; i++) snprintf(key_id_hex + 2 * i, 3, "%02x", id[i]);
    return kc_keyring_verify(kr, id, h, len - KC_SIGN_LEN, h + len - KC_SIGN_LEN);
}

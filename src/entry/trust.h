/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trust.h — what vouches for an entry's bytes and what checks them, in one place: an HMAC key
 * (kc_entry_seal / kc_entry_mac_check) or Ed25519 (a producer's signer, a consumer's keyring:
 * kcache/sign.h).  With a keyring, a signature of a trusted key is required and a MAC is not
 * enough; without one, the MAC key (if any) decides.  Vouching signs when there is a signer,
 * else seals when there is a MAC key.
 *
 * Callers: the tiers (remote reads, publishing), the cache (puts, profiles), bundle import.
 */
#ifndef KC_TRUST_H
#define KC_TRUST_H

#include <stddef.h>
#include <stdint.h>

#include "kcache/sign.h"

typedef struct kc_trust {
    const uint8_t *mac_key; /**< NULL: none */
    size_t mac_key_len;
    const kc_signer *signer;   /**< NULL: this host signs nothing */
    const kc_keyring *keyring; /**< NULL: signatures not required */
} kc_trust;

/** Whether anything is checked (a MAC key or a keyring). */
int kc_trust_checks(const kc_trust *t);
/** KC_OK when the bytes carry what the configuration requires (KC_OK when nothing is); KC_EUNTRUSTED
 *  naming what is missing or wrong.  Reads nothing past the fixed header but the trailer. */
int kc_trust_check(const kc_trust *t, const void *data, size_t len);
/** Room for a verifier's name: "ed25519:<16 hex>", "mac:<16 hex>", "none". */
#define KC_TRUST_WHO_MAX 32
/** kc_trust_check, saying into `who` what verified the bytes: "ed25519:<key id>" (the keyring key that
 *  signed them), "mac:<key id>" (the MAC key: the first 8 bytes of its SHA-256, in hex — never the key),
 *  "none" (nothing is checked); "" when refused. */
int kc_trust_check_by(const kc_trust *t, const void *data, size_t len, char who[KC_TRUST_WHO_MAX]);
/** What kc_trust_check_by would name for bytes already checked (a remote's, a bundle's), without checking them
 *  again: the signer the trailer names with a keyring, the MAC key's id, or "none". */
void kc_trust_verifier(const kc_trust *t, const void *data, size_t len, char who[KC_TRUST_WHO_MAX]);
/** Whether this host can vouch for bytes (a signer, or — without a keyring — a MAC key). */
int kc_trust_can_vouch(const kc_trust *t);
/** Sign (a signer) or seal (a MAC key, no keyring) encoded bytes in place; KC_OK when neither is set. */
int kc_trust_vouch(const kc_trust *t, void **data, size_t *len);

#endif

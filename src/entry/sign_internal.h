/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sign_internal.h — what entry.c's [Note: signatures] needs of sign.c: sign some bytes with a
 * producer's key, and verify bytes against the keyring key a key id names.
 *
 * Callers: entry.c only.
 */
#ifndef KC_SIGN_INTERNAL_H
#define KC_SIGN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kcache/sign.h"

/** The signer's key id (KC_SIGN_KEY_ID_LEN bytes, borrowed). */
const uint8_t *kc_signer_key_id_bytes(const kc_signer *s);
/** Ed25519 over `len` bytes into sig (KC_SIGN_LEN). */
int kc_sign_bytes(const kc_signer *s, const void *msg, size_t len, uint8_t sig[KC_SIGN_LEN]);
/** KC_OK when `sig` is the keyring key `id`'s over the bytes; KC_EUNTRUSTED (untrusted id, no match). */
int kc_keyring_verify(const kc_keyring *kr, const uint8_t id[KC_SIGN_KEY_ID_LEN], const void *msg, size_t len,
                      const uint8_t sig[KC_SIGN_LEN]);

#endif

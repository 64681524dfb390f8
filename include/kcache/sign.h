/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/sign.h — Ed25519 signatures of entries: producers sign with a private key, consumers
 * verify with public keys only ([Note: signatures] in src/entry/entry.c).
 *
 * A shared HMAC key proves only that some holder wrote an entry, and every host that verifies
 * must hold it, so any one host can forge for the fleet.  With signatures the build host keeps
 * the private key; GPU hosts hold public keys (a keyring, several at once for rotation) and can
 * verify but never forge.
 *
 * Key files are text, one line:
 *   private:  "kcache-ed25519-private 1 <key id: 16 hex> <seed: 64 hex>"  (mode 0600 or stricter:
 *             a private key others can read, or a group or others can write, is refused)
 *   public:   "kcache-ed25519-public 1 <key id: 16 hex> <key: 64 hex>"
 * A key id is the first 8 bytes of SHA-256 of the public key, so a file cannot claim another id.
 * A keyring is one public key file or a folder of `*.pub` files; a key removed from it is revoked.
 * Handles are immutable once loaded and may be used from many threads at once.
 */
#ifndef KCACHE_SIGN_H
#define KCACHE_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes of a key id, and of a signature. */
#define KC_SIGN_KEY_ID_LEN 8
#define KC_SIGN_LEN 64
/** Most public keys a keyring holds. */
#define KC_KEYRING_MAX 64

typedef struct kc_signer kc_signer;   /**< A producer's private key. */
typedef struct kc_keyring kc_keyring; /**< Trusted public keys. */

/**
 * Make a key pair: `<prefix>.key` (mode 0600; an existing file is never replaced: KC_EINVAL)
 * and `<prefix>.pub`.  `key_id_hex` (17 bytes, may be NULL) receives the key id.
 */
KC_API int kc_sign_keygen(const char *prefix, char key_id_hex[2 * KC_SIGN_KEY_ID_LEN + 1]);

/** Load a private key file (checked: format, id, permissions).  *out NULL on failure. */
KC_API int kc_signer_load(kc_signer **out, const char *path);
/** The key id, 16 hex characters (borrowed). */
KC_API const char *kc_signer_key_id(const kc_signer *s);
KC_API void kc_signer_free(kc_signer *s);

/** Load a keyring: one `.pub` file, or every `*.pub` file of a folder.  *out NULL on failure. */
KC_API int kc_keyring_load(kc_keyring **out, const char *path);
KC_API size_t kc_keyring_count(const kc_keyring *kr);
KC_API void kc_keyring_free(kc_keyring *kr);

/**
 * Sign an encoded entry in place (`*data` may be reallocated; a MAC it carried is replaced).
 * KC_EINVAL for bytes that are not an encoded entry.
 */
KC_API int kc_entry_sign(void **data, size_t *len, const kc_signer *s);

/**
 * Verify an encoded entry's signature against a keyring, reading nothing past the fixed header
 * but the trailer: KC_OK; KC_EUNTRUSTED when it is unsigned, signed by a key not in the keyring
 * (revoked, or never trusted), or the signature does not match (altered, moved from another
 * entry, truncated).  `key_id_hex` (may be NULL) receives the signer's key id when there is one.
 */
KC_API int kc_entry_sig_check(const void *data, size_t len, const kc_keyring *kr,
                              char key_id_hex[2 * KC_SIGN_KEY_ID_LEN + 1]);

/** The key id an encoded entry says signed it (not verified): KC_OK, or KC_MISS when it is unsigned. */
KC_API int kc_entry_signer(const void *data, size_t len, char key_id_hex[2 * KC_SIGN_KEY_ID_LEN + 1]);

#ifdef __cplusplus
}
#endif
#endif

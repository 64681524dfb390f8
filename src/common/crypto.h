/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crypto.h — libcrypto (OpenSSL 3), loaded when first needed ([Note: libcrypto on demand]).
 *
 * The one idea: a process that only finds its kernels in the cache (a warm start) never loads
 * libcrypto; SHA-256, HMAC and Ed25519 are needed to write an image reference, to check a
 * remote's or a bundle's bytes and to sign, and the first of those loads it.
 *
 * Callers: src/entry (image.c, entry.c, sign.c).  Must not: be used for anything a hit of the
 * local directory does.
 */
#ifndef KC_COMMON_CRYPTO_H
#define KC_COMMON_CRYPTO_H

#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

/** The functions kcache uses, resolved from libcrypto. */
typedef struct kc_crypto {
    __typeof__(&EVP_sha256) sha256_md;
    __typeof__(&EVP_Digest) digest;
    __typeof__(&HMAC) hmac;
    __typeof__(&EVP_PKEY_CTX_new_id) pkey_ctx_new_id;
    __typeof__(&EVP_PKEY_CTX_free) pkey_ctx_free;
    __typeof__(&EVP_PKEY_keygen_init) keygen_init;
    __typeof__(&EVP_PKEY_keygen) keygen;
    __typeof__(&EVP_PKEY_get_raw_private_key) get_raw_private_key;
    __typeof__(&EVP_PKEY_get_raw_public_key) get_raw_public_key;
    __typeof__(&EVP_PKEY_new_raw_private_key) new_raw_private_key;
    __typeof__(&EVP_PKEY_new_raw_public_key) new_raw_public_key;
    __typeof__(&EVP_PKEY_free) pkey_free;
    __typeof__(&EVP_MD_CTX_new) md_ctx_new;
    __typeof__(&EVP_MD_CTX_free) md_ctx_free;
    __typeof__(&EVP_DigestSignInit) digest_sign_init;
    __typeof__(&EVP_DigestSign) digest_sign;
    __typeof__(&EVP_DigestVerifyInit) digest_verify_init;
    __typeof__(&EVP_DigestVerify) digest_verify;
} kc_crypto;

/** libcrypto's functions, loaded once per process (thread-safe): NULL, with the reason in
 *  kc_error_last() (KC_ERROR, naming the library that could not be loaded), when it is not there. */
const kc_crypto *kc_crypto_get(void);

/** Whether libcrypto has been loaded by kc_crypto_get in this process (the tests). */
int kc_crypto_loaded(void);

/** For the tests: load `name` instead of libcrypto (before the first use in the process), and
 *  the soname that is loaded otherwise. */
void kc_crypto_use_soname_(const char *name);
const char *kc_crypto_soname_(void);

/** SHA-256 of `len` bytes: KC_OK, or why not (libcrypto missing). */
int kc_sha256(const void *data, size_t len, unsigned char out[32]);

/** Compare n bytes in time independent of their contents: 0 when equal. */
int kc_memcmp_ct(const void *a, const void *b, size_t n);

/** Wipe n bytes in a way the compiler may not drop. */
void kc_wipe(void *p, size_t n);

#endif

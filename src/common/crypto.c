/* SPDX-License-Identifier: Apache-2.0 */
/*
 * crypto.c — libcrypto loaded on first use (crypto.h).
 *
 * [Note: libcrypto on demand] Linking libcrypto costs every process that links kcache about
 * 1.7 ms of CPU before main (measured: an empty main with and without -lcrypto, 0.86 against
 * 2.60 ms, 126 more page faults: its relocations and constructors), more than a warm start's
 * whole lookup of a graph.  A warm start does no cryptography: a local hit's checks are XXH3
 * ([Note: checked, not inflated]).  So the library does not link libcrypto; the first call that
 * needs SHA-256, HMAC or Ed25519 dlopens it (its soname, from the OpenSSL major version the
 * library was built against) under a once-guard, and every function is looked up then.  A host
 * without it gets a clear error from exactly those calls (writing an image reference, a MAC
 * or signature check, keygen), never a crash: nothing else needs it.
 *
 * kc_dl_table, the lookup of such a library's functions, is shared by every library opened this way
 * (store/tls.c: libssl, store/http_curl.c: libcurl, store/redis_lib.c: libhiredis).
 *
 * Callers: src/entry; kc_dl_table: those three.  Must not: keep anything secret (the wipe and the
 * constant-time compare are ours, so that they work with or without the library).
 */
#include "crypto.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <openssl/opensslv.h>

#include "internal.h"

#define KC_STR_(x) #x
#define KC_STR(x) KC_STR_(x)
#define KC_LIBCRYPTO "libcrypto.so." KC_STR(OPENSSL_VERSION_MAJOR)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *soname = KC_LIBCRYPTO; /* kc_crypto_use_soname_: the tests' missing library */
static kc_crypto api;
static int loaded;    /* 1: api is whole */
static char why[512]; /* when not */

static void load(void) {
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "%s could not be loaded (%s): SHA-256, HMAC and Ed25519 need OpenSSL 3's libcrypto",
                 soname, e ? e : "unknown error");
        return;
    }
    const kc_dl_sym fns[] = {
        {(void **)&api.sha256_md, "EVP_sha256"},
        {(void **)&api.digest, "EVP_Digest"},
        {(void **)&api.hmac, "HMAC"},
        {(void **)&api.pkey_ctx_new_id, "EVP_PKEY_CTX_new_id"},
        {(void **)&api.pkey_ctx_free, "EVP_PKEY_CTX_free"},
        {(void **)&api.keygen_init, "EVP_PKEY_keygen_init"},
        {(void **)&api.keygen, "EVP_PKEY_keygen"},
        {(void **)&api.get_raw_private_key, "EVP_PKEY_get_raw_private_key"},
        {(void **)&api.get_raw_public_key, "EVP_PKEY_get_raw_public_key"},
        {(void **)&api.new_raw_private_key, "EVP_PKEY_new_raw_private_key"},
        {(void **)&api.new_raw_public_key, "EVP_PKEY_new_raw_public_key"},
        {(void **)&api.pkey_free, "EVP_PKEY_free"},
        {(void **)&api.md_ctx_new, "EVP_MD_CTX_new"},
        {(void **)&api.md_ctx_free, "EVP_MD_CTX_free"},
        {(void **)&api.digest_sign_init, "EVP_DigestSignInit"},
        {(void **)&api.digest_sign, "EVP_DigestSign"},
        {(void **)&api.digest_verify_init, "EVP_DigestVerifyInit"},
        {(void **)&api.digest_verify, "EVP_DigestVerify"},
    };
    const char *missing = kc_dl_table(h, fns, sizeof fns / sizeof fns[0]);
    if (missing) {
        snprintf(why, sizeof why, "%s has no %s: SHA-256, HMAC and Ed25519 need OpenSSL 3's libcrypto", soname,
                 missing);
        dlclose(h);
        return;
    }
    __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE); /* the handle stays open for the process */
}

const char *kc_dl_table(void *h, const kc_dl_sym *syms, size_t n) {
    static void *const none;
    for (size_t i = 0; i < n; i++) {
        void *f = dlsym(h, syms[i].name);
        if (!f) {
            for (size_t j = 0; j < i; j++) memcpy(syms[j].slot, &none, sizeof none);
            return syms[i].name;
        }
        memcpy(syms[i].slot, &f, sizeof f); /* a data pointer to a function pointer: POSIX dlsym's contract */
    }
    return NULL;
}

const kc_crypto *kc_crypto_get(void) {
    pthread_once(&once, load);
    if (__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) return &api;
    kc_err(KC_ERROR, "%s", why);
    return NULL;
}

void kc_crypto_use_soname_(const char *name) { soname = name; }

const char *kc_crypto_soname_(void) { return KC_LIBCRYPTO; }

int kc_crypto_loaded(void) { return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE); }

int kc_sha256(const void *data, size_t len, unsigned char out[32]) {
    const kc_crypto *c = kc_crypto_get();
    if (!c) return kc_err_prefix(KC_ERROR, "SHA-256");
    unsigned n = 0;
    if (c->digest(data, len, out, &n, c->sha256_md(), NULL) != 1 || n != 32) return kc_err(KC_ERROR, "SHA-256 failed");
    return KC_OK;
}

int kc_memcmp_ct(const void *a, const void *b, size_t n) {
    const volatile unsigned char *x = a, *y = b;
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++) d |= (unsigned char)(x[i] ^ y[i]);
    return d != 0;
}

void kc_wipe(void *p, size_t n) {
    volatile unsigned char *v = p;
    while (n--) *v++ = 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sign.c — Ed25519 keys for entry signatures (kcache/sign.h): key pairs made and written as
 * text, a producer's private key loaded with its permissions checked, keyrings of public keys,
 * and the two primitives entry.c's [Note: signatures] uses (sign some bytes; verify them against
 * the key a key id names).  OpenSSL's EVP interface does the cryptography.
 *
 * The one idea: a key id is derived from the public key (SHA-256, first 8 bytes), never taken
 * from a file's word, so a keyring entry cannot claim another key's id, and a signature names
 * the one key that can verify it.
 *
 * Callers: entry.c (kc_sign_bytes, kc_keyring_verify, kc_signer_key_id_bytes); the CLI (keygen);
 * the cache (loading a signer and a keyring).  Must not: keep a private key's bytes anywhere but
 * its EVP_PKEY (the seed read from the file is wiped).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "../common/crypto.h"
#include "../common/fs.h"
#include "../common/internal.h"
#include "kcache/sign.h"
#include "kcache/entry.h"
#include "sign_internal.h"
#include "trust.h"

#define SEED_LEN 32
#define PUB_LEN 32
#define ID_HEX (2 * KC_SIGN_KEY_ID_LEN)

struct kc_signer {
    EVP_PKEY *key;
    uint8_t id[KC_SIGN_KEY_ID_LEN];
    char id_hex[ID_HEX + 1];
};

typedef struct ring_key {
    EVP_PKEY *key;
    uint8_t id[KC_SIGN_KEY_ID_LEN];
} ring_key;

struct kc_keyring {
    ring_key k[KC_KEYRING_MAX];
    size_t n;
};

static void to_hex(const uint8_t *b, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static int from_hex(const char *s, size_t n, uint8_t *out) {
    if (strlen(s) != 2 * n) return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        char pair[3] = {s[2 * i], s[2 * i + 1], 0};
        if (!strchr("0123456789abcdef", pair[0]) || !strchr("0123456789abcdef", pair[1]) ||
            sscanf(pair, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    return 0;
}

static int key_id_of(const uint8_t pub[PUB_LEN], uint8_t id[KC_SIGN_KEY_ID_LEN]) {
    uint8_t d[32];
    int rc = kc_sha256(pub, PUB_LEN, d);
    if (!rc) memcpy(id, d, KC_SIGN_KEY_ID_LEN);
    return rc;
}

/* Read a one-line key file (at most 255 bytes) into `line`, its fields split: "kind 1 id hex". */
static int read_key_line(const char *path, const char *kind, char *line, size_t cap, char **id, char **hex) {
    void *data = NULL;
    size_t len = 0;
    int rc = kc_fs_read_file(path, 255, &data, &len, NULL);
    if (rc) return kc_err_prefix(rc, "key file '%s'", path);
    if (len >= cap) len = cap - 1;
    memcpy(line, data, len);
    line[len] = '\0';
    kc_wipe(data, len);
    free(data);
    line[strcspn(line, "\r\n")] = '\0';
    char *save = NULL, *k = strtok_r(line, " ", &save), *v = strtok_r(NULL, " ", &save);
    *id = strtok_r(NULL, " ", &save);
    *hex = strtok_r(NULL, " ", &save);
    if (!k || strcmp(k, kind) != 0 || !v || strcmp(v, "1") != 0 || !*id || !*hex || strtok_r(NULL, " ", &save))
        return kc_err(KC_EINVAL, "key file '%s': not a \"%s 1 <key id> <key>\" line", path, kind);
    return KC_OK;
}

static int write_new(const char *path, const char *text, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return errno == EEXIST ? kc_err(KC_EINVAL, "'%s' exists: a key is never replaced", path)
                               : kc_err_errno(errno, "creating '%s'", path);
    int rc = kc_fs_write_all(fd, text, strlen(text), path);
    if (rc == KC_OK && fsync(fd) != 0) rc = kc_err_errno(errno, "fsync of '%s'", path);
    if (close(fd) != 0 && rc == KC_OK) rc = kc_err_errno(errno, "closing '%s'", path);
    if (rc) unlink(path);
    return rc;
}

int kc_sign_keygen(const char *prefix, char key_id_hex[ID_HEX + 1]) {
    if (key_id_hex) key_id_hex[0] = '\0';
    if (!prefix || !*prefix) return kc_err(KC_EINVAL, "kc_sign_keygen: no path prefix");
    char kp[4096], pp[4096];
    if (snprintf(kp, sizeof kp, "%s.key", prefix) >= (int)sizeof kp ||
        snprintf(pp, sizeof pp, "%s.pub", prefix) >= (int)sizeof pp)
        return kc_err(KC_EINVAL, "kc_sign_keygen: path too long");
    const kc_crypto *c = kc_crypto_get();
    if (!c) return kc_err_prefix(KC_ERROR, "Ed25519 key generation");
    EVP_PKEY *k = NULL;
    EVP_PKEY_CTX *ctx = c->pkey_ctx_new_id(EVP_PKEY_ED25519, NULL);
    if (!ctx || c->keygen_init(ctx) <= 0 || c->keygen(ctx, &k) <= 0) {
        c->pkey_ctx_free(ctx);
        return kc_err(KC_ERROR, "Ed25519 key generation failed");
    }
    c->pkey_ctx_free(ctx);
    uint8_t seed[SEED_LEN], pub[PUB_LEN], id[KC_SIGN_KEY_ID_LEN];
    size_t sl = SEED_LEN, pl = PUB_LEN;
    int ok = c->get_raw_private_key(k, seed, &sl) == 1 && c->get_raw_public_key(k, pub, &pl) == 1 && sl == SEED_LEN &&
             pl == PUB_LEN;
    c->pkey_free(k);
    if (ok && key_id_of(pub, id) != KC_OK) ok = 0;
    if (!ok) {
        kc_wipe(seed, sizeof seed);
        return kc_err(KC_ERROR, "Ed25519: the raw key could not be read");
    }
    char idh[ID_HEX + 1], sh[2 * SEED_LEN + 1], ph[2 * PUB_LEN + 1], line[256];
    to_hex(id, sizeof id, idh), to_hex(seed, sizeof seed, sh), to_hex(pub, sizeof pub, ph);
    snprintf(line, sizeof line, "kcache-ed25519-private 1 %s %s\n", idh, sh);
    int rc = write_new(kp, line, 0600);
    kc_wipe(line, sizeof line), kc_wipe(sh, sizeof sh), kc_wipe(seed, sizeof seed);
    if (rc) return rc;
    snprintf(line, sizeof line, "kcache-ed25519-public 1 %s %s\n", idh, ph);
    if ((rc = write_new(pp, line, 0644))) {
        unlink(kp);
        return rc;
    }
    if (key_id_hex) memcpy(key_id_hex, idh, sizeof idh);
    return KC_OK;
}

int kc_signer_load(kc_signer **out, const char *path) {
    if (out) *out = NULL;
    if (!out || !path) return kc_err(KC_EINVAL, "kc_signer_load: NULL argument");
    struct stat st;
    if (stat(path, &st) != 0) return kc_err_errno(errno, "private key '%s'", path);
    if (st.st_mode & (S_IRWXG | S_IRWXO))
        return kc_err(KC_EPERM,
                      "private key '%s' can be read or written by others (mode %03o): chmod 600 it, or "
                      "anyone on this host can sign kernels for the fleet",
                      path, (unsigned)(st.st_mode & 0777));
    const kc_crypto *c = kc_crypto_get();
    if (!c) return kc_err_prefix(KC_ERROR, "private key '%s'", path);
    char line[256], *idh, *hex;
    int rc = read_key_line(path, "kcache-ed25519-private", line, sizeof line, &idh, &hex);
    uint8_t seed[SEED_LEN], id[KC_SIGN_KEY_ID_LEN], want[KC_SIGN_KEY_ID_LEN], pub[PUB_LEN];
    if (!rc && (from_hex(hex, SEED_LEN, seed) || from_hex(idh, KC_SIGN_KEY_ID_LEN, want)))
        rc = kc_err(KC_EINVAL, "private key '%s': its key id or seed is not hex of the right length", path);
    EVP_PKEY *k = rc ? NULL : c->new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, SEED_LEN);
    kc_wipe(seed, sizeof seed), kc_wipe(line, sizeof line);
    if (rc) return rc;
    size_t pl = PUB_LEN;
    if (!k || c->get_raw_public_key(k, pub, &pl) != 1) {
        c->pkey_free(k);
        return kc_err(KC_EINVAL, "private key '%s': not an Ed25519 key", path);
    }
    if ((rc = key_id_of(pub, id)) != KC_OK || memcmp(id, want, sizeof id) != 0) {
        c->pkey_free(k);
        return rc ? rc : kc_err(KC_EINVAL, "private key '%s': its key id is not its key's", path);
    }
    kc_signer *s = kc_calloc(1, sizeof *s);
    if (!s) {
        c->pkey_free(k);
        return kc_err(KC_ENOMEM, "out of memory");
    }
    s->key = k;
    memcpy(s->id, id, sizeof id);
    to_hex(id, sizeof id, s->id_hex);
    *out = s;
    return KC_OK;
}

const char *kc_signer_key_id(const kc_signer *s) { return s ? s->id_hex : ""; }
const uint8_t *kc_signer_key_id_bytes(const kc_signer *s) { return s->id; }

void kc_signer_free(kc_signer *s) {
    if (!s) return;
    kc_crypto_get()->pkey_free(s->key); /* a signer exists only where libcrypto was loaded */
    free(s);
}

/* One public key file into the ring. */
static int ring_add(kc_keyring *kr, const char *path) {
    if (kr->n == KC_KEYRING_MAX) return kc_err(KC_EINVAL, "keyring: more than %d keys", KC_KEYRING_MAX);
    char line[256], *idh, *hex;
    int rc = read_key_line(path, "kcache-ed25519-public", line, sizeof line, &idh, &hex);
    if (rc) return rc;
    uint8_t pub[PUB_LEN], want[KC_SIGN_KEY_ID_LEN], id[KC_SIGN_KEY_ID_LEN];
    if (from_hex(hex, PUB_LEN, pub) || from_hex(idh, KC_SIGN_KEY_ID_LEN, want))
        return kc_err(KC_EINVAL, "public key '%s': its key id or key is not hex of the right length", path);
    if ((rc = key_id_of(pub, id)) != KC_OK) return kc_err_prefix(rc, "public key '%s'", path);
    if (memcmp(id, want, sizeof id) != 0)
        return kc_err(KC_EINVAL, "public key '%s': its key id is not its key's", path);
    for (size_t i = 0; i < kr->n; i++)
        if (memcmp(kr->k[i].id, id, sizeof id) == 0) return KC_OK;                           /* the same key twice */
    EVP_PKEY *k = kc_crypto_get()->new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, PUB_LEN); /* loaded: key_id_of */
    if (!k) return kc_err(KC_EINVAL, "public key '%s': not an Ed25519 key", path);
    kr->k[kr->n].key = k;
    memcpy(kr->k[kr->n].id, id, sizeof id);
    kr->n++;
    return KC_OK;
}

int kc_keyring_load(kc_keyring **out, const char *path) {
    if (out) *out = NULL;
    if (!out || !path) return kc_err(KC_EINVAL, "kc_keyring_load: NULL argument");
    kc_keyring *kr = kc_calloc(1, sizeof *kr);
    if (!kr) return kc_err(KC_ENOMEM, "out of memory");
    struct stat st;
    int rc = stat(path, &st) == 0 ? KC_OK : kc_err_errno(errno, "keyring '%s'", path);
    if (!rc && S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (!d) rc = kc_err_errno(errno, "keyring '%s'", path);
        struct dirent *de;
        while (!rc && d && (de = readdir(d))) {
            size_t l = strlen(de->d_name);
            if (l < 5 || strcmp(de->d_name + l - 4, ".pub") != 0) continue;
            char p[4096];
            if (snprintf(p, sizeof p, "%s/%s", path, de->d_name) >= (int)sizeof p)
                rc = kc_err(KC_EINVAL, "keyring: path too long");
            else rc = ring_add(kr, p);
        }
        if (d) closedir(d);
    } else if (!rc) {
        rc = ring_add(kr, path);
    }
    if (!rc && kr->n == 0) rc = kc_err(KC_EINVAL, "keyring '%s' holds no public key (*.pub)", path);
    if (rc) {
        kc_keyring_free(kr);
        return rc;
    }
    *out = kr;
    return KC_OK;
}

size_t kc_keyring_count(const kc_keyring *kr) { return kr ? kr->n : 0; }

void kc_keyring_free(kc_keyring *kr) {
    if (!kr) return;
    for (size_t i = 0; i < kr->n; i++) kc_crypto_get()->pkey_free(kr->k[i].key); /* n > 0: libcrypto was loaded */
    free(kr);
}

int kc_sign_bytes(const kc_signer *s, const void *msg, size_t len, uint8_t sig[KC_SIGN_LEN]) {
    const kc_crypto *c = kc_crypto_get(); /* loaded: a signer exists */
    EVP_MD_CTX *ctx = c->md_ctx_new();
    size_t sl = KC_SIGN_LEN;
    int ok = ctx && c->digest_sign_init(ctx, NULL, NULL, NULL, s->key) == 1 &&
             c->digest_sign(ctx, sig, &sl, msg, len) == 1 && sl == KC_SIGN_LEN;
    c->md_ctx_free(ctx);
    return ok ? KC_OK : kc_err(KC_ERROR, "Ed25519 signing failed");
}

int kc_keyring_verify(const kc_keyring *kr, const uint8_t id[KC_SIGN_KEY_ID_LEN], const void *msg, size_t len,
                      const uint8_t sig[KC_SIGN_LEN]) {
    char idh[ID_HEX + 1];
    to_hex(id, KC_SIGN_KEY_ID_LEN, idh);
    const ring_key *k = NULL;
    for (size_t i = 0; i < kr->n && !k; i++)
        if (memcmp(kr->k[i].id, id, KC_SIGN_KEY_ID_LEN) == 0) k = &kr->k[i];
    if (!k)
        return kc_err(KC_EUNTRUSTED, "signed by key %s, which the keyring does not trust (never added, or revoked)",
                      idh);
    const kc_crypto *c = kc_crypto_get(); /* loaded: the ring holds a key */
    EVP_MD_CTX *ctx = c->md_ctx_new();
    int ok = ctx && c->digest_verify_init(ctx, NULL, NULL, NULL, k->key) == 1 &&
             c->digest_verify(ctx, sig, KC_SIGN_LEN, msg, len) == 1;
    c->md_ctx_free(ctx);
    return ok ? KC_OK
              : kc_err(KC_EUNTRUSTED, "the signature by key %s does not match (altered, or moved from another entry)",
                       idh);
}

/* ---- trust.h ---- */

int kc_trust_checks(const kc_trust *t) { return t && (t->keyring || t->mac_key); }

int kc_trust_check(const kc_trust *t, const void *data, size_t len) {
    if (!t) return KC_OK;
    if (t->keyring) return kc_entry_sig_check(data, len, t->keyring, NULL);
    if (t->mac_key) return kc_entry_mac_check(data, len, t->mac_key, t->mac_key_len);
    return KC_OK;
}

static void mac_key_id(const kc_trust *t, char who[KC_TRUST_WHO_MAX]) {
    uint8_t d[32];
    memcpy(who, "mac:", 4);
    if (kc_sha256(t->mac_key, t->mac_key_len, d) == KC_OK) to_hex(d, KC_SIGN_KEY_ID_LEN, who + 4);
    else snprintf(who + 4, KC_TRUST_WHO_MAX - 4, "unknown"); /* not reached: the MAC was just checked */
}

int kc_trust_check_by(const kc_trust *t, const void *data, size_t len, char who[KC_TRUST_WHO_MAX]) {
    char id[ID_HEX + 1] = "";
    who[0] = '\0';
    if (t && t->keyring) {
        int rc = kc_entry_sig_check(data, len, t->keyring, id);
        if (rc == KC_OK) snprintf(who, KC_TRUST_WHO_MAX, "ed25519:%s", id);
        return rc;
    }
    int rc = kc_trust_check(t, data, len);
    if (rc == KC_OK && t && t->mac_key) mac_key_id(t, who);
    else if (rc == KC_OK) snprintf(who, KC_TRUST_WHO_MAX, "none");
    return rc;
}

void kc_trust_verifier(const kc_trust *t, const void *data, size_t len, char who[KC_TRUST_WHO_MAX]) {
    char id[ID_HEX + 1];
    if (t && t->keyring) {
        if (kc_entry_signer(data, len, id) == KC_OK) snprintf(who, KC_TRUST_WHO_MAX, "ed25519:%s", id);
        else snprintf(who, KC_TRUST_WHO_MAX, "none"); /* not reached: a keyring host takes only signed bytes */
    } else if (t && t->mac_key) {
        mac_key_id(t, who);
    } else {
        snprintf(who, KC_TRUST_WHO_MAX, "none");
    }
}

int kc_trust_can_vouch(const kc_trust *t) { return t && (t->signer || (t->mac_key && !t->keyring)); }

int kc_trust_vouch(const kc_trust *t, void **data, size_t *len) {
    if (!t) return KC_OK;
    if (t->signer) return kc_entry_sign(data, len, t->signer);
    if (t->mac_key && !t->keyring) return kc_entry_seal(data, len, t->mac_key, t->mac_key_len);
    return KC_OK;
}

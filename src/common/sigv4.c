/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common/sigv4.c — AWS Signature Version 4 ([the one idea] in sigv4.h).
 *
 * The steps are AWS's: the canonical request (method, path, query, headers, signed header names,
 * payload hash), the string to sign (algorithm, date, scope, hash of the canonical request), the
 * signing key (HMAC chain over date, region, service, "aws4_request") and the signature (HMAC of the
 * string to sign).  Every buffer is bounded; the derived keys are wiped after use.
 *
 * Callers: store/http.c; tests/store/test_http_sigv4.c.  Must not: do I/O or keep secrets.
 */
#include "sigv4.h"

#include <stdio.h>

#include "crypto.h"
#include "internal.h"

#define CANON_MAX 8192

static void hex(const unsigned char *b, size_t n, char *out) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) out[2 * i] = d[b[i] >> 4], out[2 * i + 1] = d[b[i] & 15];
    out[2 * n] = 0;
}

int kc_sha256_hex(const void *data, size_t len, char out[65]) {
    unsigned char h[32];
    int rc = kc_sha256(data, len, h);
    if (rc) return rc;
    hex(h, 32, out);
    return KC_OK;
}

int kc_sigv4_uri_encode(const char *s, int keep_slash, char *out, size_t cap) {
    size_t o = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                   c == '.' || c == '~' || (c == '/' && keep_slash);
        if (o + (keep ? 1 : 3) >= cap) return kc_err(KC_EINVAL, "sigv4: a path or query is too long");
        if (keep) out[o++] = (char)c;
        else o += (size_t)snprintf(out + o, cap - o, "%%%02X", c);
    }
    out[o] = 0;
    return KC_OK;
}

static int hmac(const kc_crypto *c, const void *key, size_t klen, const char *msg, unsigned char out[32]) {
    unsigned n = 0;
    if (!c->hmac(c->sha256_md(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &n) || n != 32)
        return kc_err(KC_ERROR, "sigv4: HMAC-SHA256 failed");
    return KC_OK;
}

/* "host;range;x-amz-date" from the "name:value" lines. */
static int signed_names(const kc_sigv4_req *r, char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < r->nheaders; i++) {
        const char *colon = strchr(r->headers[i], ':');
        size_t n = colon ? (size_t)(colon - r->headers[i]) : 0;
        if (!n || o + n + 2 > cap) return kc_err(KC_EINVAL, "sigv4: a malformed or too long header list");
        if (o) out[o++] = ';';
        memcpy(out + o, r->headers[i], n), o += n;
    }
    out[o] = 0;
    return KC_OK;
}

static int canonical_hash(const kc_sigv4_req *r, const char *names, char out[65]) {
    char *canon = kc_malloc(CANON_MAX);
    if (!canon) return kc_err(KC_ENOMEM, "out of memory");
    int n = snprintf(canon, CANON_MAX, "%s\n%s\n%s\n", r->method, r->path, r->query);
    for (size_t i = 0; i < r->nheaders && n > 0 && n < CANON_MAX; i++)
        n += snprintf(canon + n, CANON_MAX - (size_t)n, "%s\n", r->headers[i]);
    if (n > 0 && n < CANON_MAX) n += snprintf(canon + n, CANON_MAX - (size_t)n, "\n%s\n%s", names, r->payload_hash);
    int rc = n > 0 && n < CANON_MAX ? kc_sha256_hex(canon, (size_t)n, out)
                                    : kc_err(KC_EINVAL, "sigv4: the canonical request is too long");
    free(canon);
    return rc;
}

int kc_sigv4_authorization(const kc_sigv4_req *r, char *out, size_t cap, char *sig_hex) {
    if (!r || !out || !r->method || !r->path || !r->query || !r->payload_hash || !r->amz_date || !r->region ||
        !r->service || !r->access_key || !r->secret_key || strlen(r->amz_date) != 16)
        return kc_err(KC_EINVAL, "sigv4: an incomplete request");
    const kc_crypto *c = kc_crypto_get();
    if (!c) return KC_ERROR;
    char names[1024], chash[65], sts[512], day[9], key[300];
    memcpy(day, r->amz_date, 8), day[8] = 0;
    int rc = signed_names(r, names, sizeof names);
    if (!rc) rc = canonical_hash(r, names, chash);
    if (rc) return rc;
    snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", r->amz_date, day, r->region,
             r->service, chash);
    int kl = snprintf(key, sizeof key, "AWS4%s", r->secret_key);
    if (kl < 0 || (size_t)kl >= sizeof key) return kc_err(KC_EINVAL, "sigv4: the secret key is too long");
    unsigned char k1[32], k2[32];
    rc = hmac(c, key, (size_t)kl, day, k1);
    if (!rc) rc = hmac(c, k1, 32, r->region, k2);
    if (!rc) rc = hmac(c, k2, 32, r->service, k1);
    if (!rc) rc = hmac(c, k1, 32, "aws4_request", k2);
    if (!rc) rc = hmac(c, k2, 32, sts, k1);
    kc_wipe(key, sizeof key), kc_wipe(k2, sizeof k2);
    if (rc) return rc;
    char sig[65];
    hex(k1, 32, sig);
    int n = snprintf(out, cap, "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request,SignedHeaders=%s,Signature=%s",
                     r->access_key, day, r->region, r->service, names, sig);
    if (sig_hex) memcpy(sig_hex, sig, 65);
    if (n < 0 || (size_t)n >= cap) return kc_err(KC_EINVAL, "sigv4: the Authorization header does not fit");
    return KC_OK;
}

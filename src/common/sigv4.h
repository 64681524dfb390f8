/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common/sigv4.h — AWS Signature Version 4 for one request (the S3 back end's Authorization header).
 *
 * The one idea: the signature is a pure function of the request's canonical form, the date, the
 * scope and the secret, so it is computed here without any I/O and checked against AWS's worked
 * examples (tests/store/test_http_sigv4.c).  HMAC-SHA256 and SHA-256 come from libcrypto, opened on
 * demand (common/crypto.c).
 *
 * Callers: store/http.c (s3:// requests); the tests.  Must not: read the environment, log, or keep
 * the secret anywhere but the caller's buffers.
 */
#ifndef KC_COMMON_SIGV4_H
#define KC_COMMON_SIGV4_H

#include <stddef.h>

/** One request to sign.  `headers`: "name:value" lines, lower-case names, sorted by name, values
 *  trimmed; they are all signed.  `query`: the canonical query string ("" for none). */
typedef struct kc_sigv4_req {
    const char *method; /* "GET" */
    const char *path;   /* URI-encoded path, "/bucket/key" */
    const char *query;  /* "max-keys=2&prefix=J", "lifecycle=" or "" */
    const char *const *headers;
    size_t nheaders;
    const char *payload_hash; /* 64 hex: SHA-256 of the body, or "UNSIGNED-PAYLOAD" */
    const char *amz_date;     /* "20130524T000000Z" */
    const char *region;       /* "us-east-1" */
    const char *service;      /* "s3" */
    const char *access_key;
    const char *secret_key;
} kc_sigv4_req;

/** The Authorization header's value ("AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…")
 *  into out[cap]; `sig_hex` (65 bytes, optional) receives the signature alone.  KC_OK, KC_EINVAL for a
 *  malformed request or a buffer too small, KC_ERROR when libcrypto is missing. */
int kc_sigv4_authorization(const kc_sigv4_req *r, char *out, size_t cap, char *sig_hex);

/** Lower-case hex SHA-256 of data (65 bytes with the NUL).  KC_OK or KC_ERROR (no libcrypto). */
int kc_sha256_hex(const void *data, size_t len, char out[65]);

/** URI-encode `s` as SigV4 wants (unreserved kept; '/' kept when keep_slash) into out[cap]; KC_EINVAL
 *  when it does not fit. */
int kc_sigv4_uri_encode(const char *s, int keep_slash, char *out, size_t cap);

#endif

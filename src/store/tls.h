/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/tls.h — a TLS client over a non-blocking socket, libssl opened on demand (tls.c).
 * Callers: store/redis.c (the context) and store/redis_conn.c (sessions) only.
 */
#ifndef KC_STORE_TLS_H
#define KC_STORE_TLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct kc_tls kc_tls;

/** What a TLS client checks and presents: paths (empty: none) and the name to send and check. */
typedef struct kc_tls_opts {
    char ca_file[1024], ca_dir[1024]; /* both empty: the system store (SSL_CERT_FILE/SSL_CERT_DIR honoured) */
    char cert[1024], key[1024];       /* a client certificate (chain) and its key; key empty: in cert */
    char sni[256];                    /* empty: the URL's host */
} kc_tls_opts;

/** A client context (TLS 1.2 at least, the server verified); `who` names the remote in errors. */
int kc_tls_new(kc_tls **out, const kc_tls_opts *o, const char *who);
void kc_tls_free(kc_tls *t);

/** The handshake on connected non-blocking `fd`, checking `host` (or the sni option) by `deadline`. */
int kc_tls_handshake(kc_tls *t, int fd, const char *host, uint64_t deadline, const char *who, void **ssl_out);
int kc_tls_write(void *ssl, int fd, const char *p, size_t n, uint64_t deadline, const char *who);
int kc_tls_read(void *ssl, int fd, char *buf, size_t cap, size_t *got, uint64_t deadline, const char *who);
/** Bytes decrypted and not yet read. */
int kc_tls_pending(void *ssl);
void kc_tls_close(void *ssl);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/tls.c — a TLS client for the redis back end (rediss://), over kcache's own non-blocking
 * socket (redis_conn.c), with libssl opened on demand (tls.h).
 *
 * The one idea: TLS changes what travels, never the promises.  The handshake, every read and
 * every write run on the non-blocking socket under the command's one deadline (WANT_READ and
 * WANT_WRITE wait in poll for what OpenSSL asks); the server's certificate is verified against
 * the remote's CA file or directory, or else the system store (SSL_CERT_FILE and SSL_CERT_DIR
 * honoured), and its name checked (an address literal as an IP address), TLS 1.2 at least.  A
 * failure says what (the verification error, a host name mismatch, a server that does not speak
 * TLS) and where (the URL as shown, never a password); the caller's breaker then turns it into
 * misses.
 *
 * As libcrypto is ([Note: libcrypto on demand], common/crypto.c), libssl is not linked: the first
 * rediss:// connection dlopens it (the soname of the OpenSSL major version built against) under a
 * once-guard; a host without it gets an error naming the package, and misses.
 *
 * OpenSSL's socket BIO writes with write(2); SIGPIPE is blocked on this thread around every call
 * that may write, and one it raised is consumed, so that a closed peer never kills the caller.
 *
 * Callers: store/redis.c (contexts), store/redis_conn.c (sessions).  Must not: accept an
 * unverified server, block past the deadline, or change the process's signal handling.
 */
#include "tls.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "../common/internal.h"
#include "redis_io.h"

#define KC_STR_(x) #x
#define KC_STR(x) KC_STR_(x)
#define KC_LIBSSL "libssl.so." KC_STR(OPENSSL_VERSION_MAJOR)

#define FN(name) __typeof__(name) *name
static struct {
    FN(TLS_client_method);
    FN(SSL_CTX_new);
    FN(SSL_CTX_free);
    FN(SSL_CTX_ctrl);
    FN(SSL_CTX_set_verify);
    FN(SSL_CTX_load_verify_locations);
    FN(SSL_CTX_set_default_verify_paths);
    FN(SSL_CTX_use_certificate_chain_file);
    FN(SSL_CTX_use_PrivateKey_file);
    FN(SSL_CTX_check_private_key);
    FN(SSL_new);
    FN(SSL_free);
    FN(SSL_set_fd);
    FN(SSL_set1_host);
    FN(SSL_ctrl);
    FN(SSL_connect);
    FN(SSL_read);
    FN(SSL_write);
    FN(SSL_get_error);
    FN(SSL_get_verify_result);
    FN(SSL_pending);
    FN(ERR_get_error);
    FN(ERR_peek_last_error);
    FN(ERR_error_string_n);
    FN(ERR_clear_error);
    FN(X509_verify_cert_error_string);
} S;
#undef FN

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char why[512];

static void load(void) {
    void *h = dlopen(KC_LIBSSL, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, sizeof why,
                 "%s could not be loaded (%s): rediss:// needs OpenSSL 3's libssl (Debian: apt-get install libssl3)",
                 KC_LIBSSL, e ? e : "unknown error");
        return;
    }
#define SYM(name) \
    { (void **)&S.name, #name }
    const kc_dl_sym fns[] = {
        SYM(TLS_client_method),
        SYM(SSL_CTX_new),
        SYM(SSL_CTX_free),
        SYM(SSL_CTX_ctrl),
        SYM(SSL_CTX_set_verify),
        SYM(SSL_CTX_load_verify_locations),
        SYM(SSL_CTX_set_default_verify_paths),
        SYM(SSL_CTX_use_certificate_chain_file),
        SYM(SSL_CTX_use_PrivateKey_file),
        SYM(SSL_CTX_check_private_key),
        SYM(SSL_new),
        SYM(SSL_free),
        SYM(SSL_set_fd),
        SYM(SSL_set1_host),
        SYM(SSL_ctrl),
        SYM(SSL_connect),
        SYM(SSL_read),
        SYM(SSL_write),
        SYM(SSL_get_error),
        SYM(SSL_get_verify_result),
        SYM(SSL_pending),
        SYM(ERR_get_error),
        SYM(ERR_peek_last_error),
        SYM(ERR_error_string_n),
        SYM(ERR_clear_error),
        SYM(X509_verify_cert_error_string),
    };
#undef SYM
    const char *missing = kc_dl_table(h, fns, sizeof fns / sizeof fns[0]);
    if (missing) {
        snprintf(why, sizeof why, "%s has no %s: rediss:// needs OpenSSL 3's libssl", KC_LIBSSL, missing);
        dlclose(h);
        return;
    }
    __atomic_store_n(&loaded, 1, __ATOMIC_RELEASE); /* the handle stays open for the process */
}

struct kc_tls {
    SSL_CTX *ctx;
    char sni[256];
};

/* OpenSSL's last error, as text ("" when none). */
static const char *ssl_err(char *buf, size_t cap) {
    unsigned long e = S.ERR_peek_last_error();
    buf[0] = '\0';
    if (e) S.ERR_error_string_n(e, buf, cap);
    return buf;
}

int kc_tls_new(kc_tls **out, const kc_tls_opts *o, const char *who) {
    *out = NULL;
    pthread_once(&once, load);
    if (!__atomic_load_n(&loaded, __ATOMIC_ACQUIRE)) return kc_err(KC_EUNAVAILABLE, "redis %s: %s", who, why);
    kc_tls *t = kc_calloc(1, sizeof *t);
    if (!t) return kc_err(KC_ENOMEM, "out of memory");
    snprintf(t->sni, sizeof t->sni, "%s", o->sni);
    char eb[256];
    int rc = KC_OK;
    S.ERR_clear_error();
    t->ctx = S.SSL_CTX_new(S.TLS_client_method());
    if (!t->ctx) rc = kc_err(KC_ENOMEM, "redis %s: TLS: cannot create a context: %s", who, ssl_err(eb, sizeof eb));
    else if (S.SSL_CTX_ctrl(t->ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL) != 1)
        rc = kc_err(KC_EIO, "redis %s: TLS: cannot require TLS 1.2: %s", who, ssl_err(eb, sizeof eb));
    else if ((o->ca_file[0] || o->ca_dir[0]) &&
             S.SSL_CTX_load_verify_locations(t->ctx, o->ca_file[0] ? o->ca_file : NULL,
                                             o->ca_dir[0] ? o->ca_dir : NULL) != 1)
        rc = kc_err(KC_EINVAL, "redis %s: TLS: cannot load the CA certificates from '%s': %s", who,
                    o->ca_file[0] ? o->ca_file : o->ca_dir, ssl_err(eb, sizeof eb));
    else if (!o->ca_file[0] && !o->ca_dir[0] && S.SSL_CTX_set_default_verify_paths(t->ctx) != 1)
        rc = kc_err(KC_EIO, "redis %s: TLS: cannot use the system's CA store: %s", who, ssl_err(eb, sizeof eb));
    else if (o->cert[0] && S.SSL_CTX_use_certificate_chain_file(t->ctx, o->cert) != 1)
        rc = kc_err(KC_EINVAL, "redis %s: TLS: cannot load the client certificate '%s': %s", who, o->cert,
                    ssl_err(eb, sizeof eb));
    else if (o->cert[0] && S.SSL_CTX_use_PrivateKey_file(t->ctx, o->key[0] ? o->key : o->cert, SSL_FILETYPE_PEM) != 1)
        rc = kc_err(KC_EINVAL, "redis %s: TLS: cannot load the client key '%s': %s", who, o->key[0] ? o->key : o->cert,
                    ssl_err(eb, sizeof eb));
    else if (o->cert[0] && S.SSL_CTX_check_private_key(t->ctx) != 1)
        rc = kc_err(KC_EINVAL, "redis %s: TLS: the client key does not match the certificate '%s'", who, o->cert);
    if (rc) {
        kc_tls_free(t);
        return rc;
    }
    S.SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
    *out = t;
    return KC_OK;
}

void kc_tls_free(kc_tls *t) {
    if (!t) return;
    if (t->ctx) S.SSL_CTX_free(t->ctx);
    free(t);
}

/* SIGPIPE blocked on this thread around a call that may write; one it raised is consumed. */
typedef struct sigguard {
    sigset_t old;
    int was_pending;
} sigguard;

static void guard_on(sigguard *g) {
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &g->old);
}

static void guard_off(sigguard *g) {
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (!g->was_pending) {
        struct timespec zero = {0, 0};
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) sigtimedwait(&pipe, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

enum { OP_CONNECT, OP_READ, OP_WRITE };

/* One OpenSSL call on a non-blocking socket: > 0 done, 0 wait (*ev set), < 0 failed (*err the SSL error). */
static int step(SSL *ssl, int op, void *buf, size_t n, short *ev, int *err) {
    sigguard g;
    guard_on(&g);
    S.ERR_clear_error();
    errno = 0;
    int r = op == OP_CONNECT ? S.SSL_connect(ssl)
            : op == OP_READ  ? S.SSL_read(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n)
                             : S.SSL_write(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    int e = r > 0 ? SSL_ERROR_NONE : S.SSL_get_error(ssl, r);
    guard_off(&g);
    *err = e;
    if (r > 0) return r;
    if (e == SSL_ERROR_WANT_READ) return *ev = POLLIN, 0;
    if (e == SSL_ERROR_WANT_WRITE) return *ev = POLLOUT, 0;
    return -1;
}

/* Why the handshake failed, in words. */
static int handshake_error(SSL *ssl, int e, const char *name, const char *who) {
    char eb[256];
    long v = S.SSL_get_verify_result(ssl);
    unsigned long code = S.ERR_peek_last_error();
    int reason = ERR_GET_LIB(code) == ERR_LIB_SSL ? ERR_GET_REASON(code) : 0;
    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH)
        return kc_err(KC_EIO,
                      "redis %s: TLS: host name mismatch: the server's certificate is not for '%s' (sni= sets the "
                      "name sent and checked)",
                      who, name);
    if (v != X509_V_OK)
        return kc_err(KC_EIO, "redis %s: TLS: certificate verify failed: %s (ca_file= names the CA to trust)", who,
                      S.X509_verify_cert_error_string(v));
    if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG || reason == SSL_R_HTTP_REQUEST)
        return kc_err(KC_EIO, "redis %s: TLS: the server did not answer TLS (plaintext port? use redis://)", who);
    if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN || reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)
        return kc_err(KC_EIO,
                      "redis %s: TLS: the server closed the connection during the handshake%s%s (plaintext port, or "
                      "a client certificate required?)",
                      who, errno ? ": " : "", errno ? strerror(errno) : "");
    return kc_err(KC_EIO, "redis %s: TLS handshake failed: %s", who, ssl_err(eb, sizeof eb));
}

static int is_ip(const char *s) {
    unsigned char a[16];
    return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

int kc_tls_handshake(kc_tls *t, int fd, const char *host, uint64_t deadline, const char *who, void **ssl_out) {
    *ssl_out = NULL;
    const char *name = t->sni[0] ? t->sni : host;
    SSL *ssl = S.SSL_new(t->ctx);
    if (!ssl) return kc_err(KC_ENOMEM, "out of memory");
    int ok = S.SSL_set_fd(ssl, fd) == 1 && S.SSL_set1_host(ssl, name) == 1 &&
             (is_ip(name) || S.SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, (void *)name));
    S.SSL_ctrl(ssl, SSL_CTRL_MODE, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, NULL);
    if (!ok) {
        S.SSL_free(ssl);
        return kc_err(KC_EINVAL, "redis %s: TLS: cannot use '%s' as the server's name", who, name);
    }
    for (;;) {
        short ev = 0;
        int err = 0, r = step(ssl, OP_CONNECT, NULL, 0, &ev, &err);
        if (r > 0) break;
        int rc = r < 0 ? handshake_error(ssl, err, name, who) : kc_redis_wait_fd(fd, ev, deadline);
        if (rc == KC_ETIMEOUT)
            rc = kc_err(rc, "redis %s: TLS handshake: no answer within the deadline (is it a TLS port?)", who);
        else if (rc && r == 0) rc = kc_err(rc, "redis %s: poll: %s", who, strerror(errno));
        if (rc) {
            S.SSL_free(ssl);
            return rc;
        }
    }
    *ssl_out = ssl;
    return KC_OK;
}

/* A failed read or write, in words. */
static int io_error(int err, const char *op, const char *who) {
    char eb[256];
    if (err == SSL_ERROR_ZERO_RETURN || (err == SSL_ERROR_SYSCALL && errno == 0) ||
        ERR_GET_REASON(S.ERR_peek_last_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
        return kc_err(KC_EIO, "redis %s: %s: the server closed the connection", who, op);
    if (err == SSL_ERROR_SYSCALL) return kc_err(KC_EIO, "redis %s: %s: %s", who, op, strerror(errno));
    return kc_err(KC_EIO, "redis %s: %s: TLS: %s", who, op, ssl_err(eb, sizeof eb));
}

int kc_tls_write(void *ssl, int fd, const char *p, size_t n, uint64_t deadline, const char *who) {
    while (n) {
        short ev = 0;
        int err = 0, r = step(ssl, OP_WRITE, (void *)p, n, &ev, &err);
        if (r > 0) {
            p += r, n -= (size_t)r;
            continue;
        }
        if (r < 0) return io_error(err, "write", who);
        int rc = kc_redis_wait_fd(fd, ev, deadline);
        if (rc == KC_ETIMEOUT) return kc_err(rc, "redis %s: no progress sending within the deadline", who);
        if (rc) return kc_err(rc, "redis %s: poll: %s", who, strerror(errno));
    }
    return KC_OK;
}

int kc_tls_read(void *ssl, int fd, char *buf, size_t cap, size_t *got, uint64_t deadline, const char *who) {
    for (;;) {
        short ev = 0;
        int err = 0, r = step(ssl, OP_READ, buf, cap, &ev, &err);
        if (r > 0) {
            *got = (size_t)r;
            return KC_OK;
        }
        if (r < 0) return io_error(err, "read", who);
        int rc = kc_redis_wait_fd(fd, ev, deadline);
        if (rc == KC_ETIMEOUT) return kc_err(rc, "redis %s: no reply within the deadline", who);
        if (rc) return kc_err(rc, "redis %s: poll: %s", who, strerror(errno));
    }
}

int kc_tls_pending(void *ssl) { return S.SSL_pending(ssl); }

void kc_tls_close(void *ssl) { S.SSL_free(ssl); }

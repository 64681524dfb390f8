/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_redis_tls.c (label redis) — the redis back end over TLS (rediss://) against real
 * redis-servers started here by tests/servers/redis_tls.sh (a test CA, TLS-only ports, the ACL
 * user "kc", the default user off): the backend conformance suite over TLS as an ACL user whose
 * password is in a file, and with the password in the URL; a client certificate; the system
 * store (SSL_CERT_FILE) instead of ca_file; and each refusal with its clear error, bounded by the
 * deadline: a wrong CA, an expired certificate, a wrong-host certificate (and an sni= that
 * names another host), plaintext to the TLS port, TLS to a plaintext port, a wrong password, a
 * password file others may read (KC_EPERM), TLS parameters on redis://.  The password appears in
 * no message and in no URL shown.  A cache over an unverifiable server answers a miss.
 * Skipped (77) without redis-server, redis-cli or openssl.
 */
#include "kcache.h"
#include "helpers.h"
#include "conformance.h"
#include "redis_server.h"

#include "common/internal.h"
#include "kcache/sys/store.h"
#include "store/registry.h"

static char dir[256], url[1024], url_expired[1024], url_wronghost[1024], password[128];
static int port;

static void read_line(const char *name, char *out, size_t cap) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    if (!f || !fgets(out, (int)cap, f)) {
        fprintf(stderr, "cannot read %s\n", p);
        exit(1);
    }
    fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

static void stop_servers(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "bash %s/redis_tls.sh stop %s; rm -rf %s", KC_SERVERS_DIR, dir, dir);
    if (system(cmd) != 0) fprintf(stderr, "stop failed\n");
}

static void on_signal(int sig) {
    stop_servers();
    signal(sig, SIG_DFL);
    raise(sig);
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static kc_remote_limits limits(void) {
    kc_remote_limits l = KC_REMOTE_LIMITS_INIT;
    l.deadline_ms = 1000;
    l.connect_ms = 500;
    l.backoff_ms = 50;
    l.backoff_max_ms = 100;
    return l;
}

static kc_store_backend *open_ok(const char *u) {
    kc_store_backend *b = NULL;
    kc_remote_limits l = limits();
    int rc = kc_store_open_url(&b, u, &l);
    if (rc) fail_msg("open %s: %s", u, kc_error_last()->message);
    return b;
}

/* The URL with its query replaced. */
static void with_query(char *out, size_t cap, const char *base, const char *query) {
    const char *q = strchr(base, '?');
    snprintf(out, cap, "%.*s?%s", (int)(q - base), base, query);
}

/* A get that must fail with `want` in its message, within a few deadlines; never the password. */
static void refused(const char *u, const char *want) {
    kc_store_backend *b = open_ok(u);
    void *v = NULL;
    size_t n = 0;
    uint64_t t0 = now_ms();
    int rc = b->get(b, "0123456789abcdef0123456789abcdef.unit", &v, &n);
    uint64_t took = now_ms() - t0;
    const char *m = kc_error_last()->message;
    if (rc == KC_OK || rc == KC_MISS || !strstr(m, want)) fail_msg("%s: rc %d, '%s' (wanted '%s')", u, rc, m, want);
    assert_null(strstr(m, password));
    assert_true(took < 5000); /* bounded by the deadline (1 s), never a hang */
    kc_remote_state st;
    assert_int_equal(kc_store_redis_state(b, &st), KC_OK);
    assert_int_equal(st.breaker, KC_BREAKER_OPEN); /* the failure opened the breaker */
    assert_null(strstr(st.url, password));
    b->free(b);
}

static void test_conformance_acl_user_password_file(void **state) {
    (void)state;
    kc_store_backend *b = open_ok(url);
    kcc_conformance(b);
    kc_remote_state st;
    assert_int_equal(kc_store_redis_state(b, &st), KC_OK);
    assert_non_null(strstr(st.url, "rediss://kc@127.0.0.1:"));
    assert_non_null(strstr(st.url, "password_file=")); /* the file's path, never its content */
    assert_null(strstr(st.url, password));
    b->free(b);
}

static void test_password_in_the_url(void **state) {
    (void)state;
    char u[1200], q[600];
    snprintf(q, sizeof q, "ca_file=%s/ca.pem", dir);
    snprintf(u, sizeof u, "rediss://kc:%s@localhost:%d/3?%s", password, port, q);
    kc_store_backend *b = open_ok(u);
    assert_int_equal(b->put(b, "0123456789abcdef0123456789abcdef.unit", "abc", 3), KC_OK);
    assert_int_equal(b->exists(b, "0123456789abcdef0123456789abcdef.unit"), 1);
    kc_remote_state st;
    assert_int_equal(kc_store_redis_state(b, &st), KC_OK);
    assert_non_null(strstr(st.url, "rediss://kc:***@localhost:"));
    assert_non_null(strstr(st.url, "/3?ca_file="));
    assert_null(strstr(st.url, password));
    char shown[1200];
    kc_store_redact(u, shown, sizeof shown);
    assert_null(strstr(shown, password));
    b->free(b);
}

static void test_client_certificate_and_sni(void **state) {
    (void)state;
    char u[1200], q[900];
    snprintf(q, sizeof q,
             "ca_file=%s/ca.pem&password_file=%s/password&cert=%s/client.pem&key=%s/client.key&sni=localhost", dir, dir,
             dir, dir);
    with_query(u, sizeof u, url, q);
    kc_store_backend *b = open_ok(u);
    assert_int_equal(b->put(b, "0123456789abcdef0123456789abcdef.unit", "abc", 3), KC_OK);
    b->free(b);
    snprintf(q, sizeof q, "ca_file=%s/ca.pem&password_file=%s/password&cert=%s/nothere.pem", dir, dir, dir);
    with_query(u, sizeof u, url, q);
    refused(u, "cannot load the client certificate");
}

static void test_system_store(void **state) {
    (void)state;
    char u[1200], q[600], ca[400];
    snprintf(q, sizeof q, "password_file=%s/password", dir);
    with_query(u, sizeof u, url, q);
    snprintf(ca, sizeof ca, "%s/ca.pem", dir);
    setenv("SSL_CERT_FILE", ca, 1); /* OpenSSL's own variable: the system store is this file now */
    kc_store_backend *b = open_ok(u);
    assert_int_equal(b->put(b, "0123456789abcdef0123456789abcdef.unit", "abc", 3), KC_OK);
    b->free(b);
    unsetenv("SSL_CERT_FILE"); /* the real system store does not know the test CA */
    refused(u, "TLS: certificate verify failed: ");
}

static void test_wrong_ca(void **state) {
    (void)state;
    char u[1200], q[600];
    snprintf(q, sizeof q, "ca_file=%s/other-ca.pem&password_file=%s/password", dir, dir);
    with_query(u, sizeof u, url, q);
    refused(u, "TLS: certificate verify failed: ");
}

static void test_expired(void **state) {
    (void)state;
    refused(url_expired, "certificate verify failed: certificate has expired");
}

static void test_wrong_host(void **state) {
    (void)state;
    refused(url_wronghost, "host name mismatch");
    char u[1200], q[600];
    snprintf(q, sizeof q, "ca_file=%s/ca.pem&password_file=%s/password&sni=wrong.example", dir, dir);
    with_query(u, sizeof u, url, q);
    refused(u, "host name mismatch");
}

static void test_plaintext_to_the_tls_port(void **state) {
    (void)state;
    char u[1200];
    snprintf(u, sizeof u, "redis://127.0.0.1:%d/0?password_file=%s/password", port, dir);
    refused(u, "(a TLS port? use rediss://)");
}

static void test_tls_to_a_plaintext_port(void **state) {
    (void)state;
    kct_redis r;
    assert_int_equal(kct_redis_start(&r, 0), 0);
    char u[1200];
    snprintf(u, sizeof u, "rediss://127.0.0.1:%d/0?ca_file=%s/ca.pem", r.port, dir);
    refused(u, "TLS");
    kct_redis_stop(&r, SIGTERM);
}

static void test_wrong_password(void **state) {
    (void)state;
    char u[1200];
    snprintf(u, sizeof u, "rediss://kc:not-%s@127.0.0.1:%d/0?ca_file=%s/ca.pem", password, port, dir);
    refused(u, "AUTH: WRONGPASS");
}

static void test_password_file_refused(void **state) {
    (void)state;
    char u[1200], q[600];
    snprintf(q, sizeof q, "ca_file=%s/ca.pem&password_file=%s/password_open", dir, dir);
    with_query(u, sizeof u, url, q);
    kc_store_backend *b = NULL;
    kc_remote_limits l = limits();
    assert_int_equal(kc_store_open_url(&b, u, &l), KC_EPERM);
    assert_null(b);
    assert_non_null(strstr(kc_error_last()->message, "can be read or written by others (mode 644)"));
    assert_null(strstr(kc_error_last()->message, password));
    snprintf(u, sizeof u, "redis://127.0.0.1:%d/0?ca_file=%s/ca.pem", port, dir);
    assert_int_equal(kc_store_open_url(&b, u, &l), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "'ca_file' is a TLS parameter: use rediss://"));
    snprintf(u, sizeof u, "rediss://kc:%s@127.0.0.1:%d/0?bogus=1", password, port);
    assert_int_equal(kc_store_open_url(&b, u, &l), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "unknown parameter 'bogus'"));
    assert_null(strstr(kc_error_last()->message, password));
}

/* Through a cache: a server that cannot be verified is a miss, never an error, never a hang. */
static void test_cache_misses_on_an_unverified_server(void **state) {
    (void)state;
    char cdir[] = "/tmp/kc-tls-cache-XXXXXX";
    assert_non_null(mkdtemp(cdir));
    kc_options o = KC_OPTIONS_INIT;
    o.dir = cdir;
    o.flags = KC_OPEN_NO_ENV;
    o.remote = url_expired;
    o.remote_config = limits();
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    kc_key k;
    memset(&k, 7, sizeof k);
    kc_entry *e = NULL;
    assert_int_equal(kc_cache_get(c, &k, KC_VARIANT_UNIT, &e), KC_MISS);
    assert_null(e);
    kc_cache_close(c);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cdir);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/kc-redis-tls-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "bash %s/redis_tls.sh start %s >/dev/null", KC_SERVERS_DIR, dir);
    int st = system(cmd);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
        stop_servers();
        fprintf(stderr, "skipped: redis-server, redis-cli or openssl is not installed (tools/deps.sh installs them)\n");
        return KC_SKIP_CODE;
    }
    atexit(stop_servers);
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGABRT, on_signal);
    if (st != 0) return 1;
    char p[32];
    read_line("url", url, sizeof url);
    read_line("url_expired", url_expired, sizeof url_expired);
    read_line("url_wronghost", url_wronghost, sizeof url_wronghost);
    read_line("password", password, sizeof password);
    read_line("port", p, sizeof p);
    port = atoi(p);
    unsetenv("SSL_CERT_FILE");
    unsetenv("SSL_CERT_DIR");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conformance_acl_user_password_file),
        cmocka_unit_test(test_password_in_the_url),
        cmocka_unit_test(test_client_certificate_and_sni),
        cmocka_unit_test(test_system_store),
        cmocka_unit_test(test_wrong_ca),
        cmocka_unit_test(test_expired),
        cmocka_unit_test(test_wrong_host),
        cmocka_unit_test(test_plaintext_to_the_tls_port),
        cmocka_unit_test(test_tls_to_a_plaintext_port),
        cmocka_unit_test(test_wrong_password),
        cmocka_unit_test(test_password_file_refused),
        cmocka_unit_test(test_cache_misses_on_an_unverified_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

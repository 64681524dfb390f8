/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http_hostile.c (label http) — the HTTP content store against a hostile server
 * (tests/store/http_hostile.py, started and stopped here): a round trip where the server behaves;
 * 404 a miss; a body cut short, a wrong Content-Length, a Content-Length over the value cap, a chunked
 * body past the cap, a redirect to another host, a 500 and a 429 each an error (never a value), the 500
 * opening the breaker; a 429 once then 200 retried into a value; a server that never answers ends at the
 * deadline; a HEAD of an object over the value cap is an answer (exists 1); a listing whose server repeats
 * its continuation token ends; URLs with a password next to '/', '?' or '#' never show it.  An alarm ends
 * the test if any call hangs.
 */
#include "helpers.h"

#include <signal.h>
#include <sys/wait.h>

#include "common/internal.h"
#include "kcache.h"
#include "kcache/sys/store.h"

#define NAME "0123456789abcdef0123456789abcdef.sm_90"
#define IMG "fedcba9876543210fedcba9876543210.img"

static pid_t server;
static int port;
static char *dir;

static int start(void **state) {
    (void)state;
    dir = kct_tmpdir("http-hostile");
    char pf[1100];
    snprintf(pf, sizeof pf, "%s/port", dir);
    server = fork();
    if (server == 0) {
        execlp("python3", "python3", KC_TESTS_DIR "/store/http_hostile.py", pf, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200 && !port; i++) {
        size_t n;
        uint8_t *p = kct_read(pf, &n);
        if (p) port = atoi((char *)p), free(p);
        else usleep(20000);
    }
    return port ? 0 : -1;
}

static int stop(void **state) {
    (void)state;
    if (server > 0) kill(server, SIGKILL), waitpid(server, NULL, 0);
    kct_rmtree(dir);
    free(dir);
    return 0;
}

static kc_store_backend *open_mode(const char *mode, unsigned deadline_ms, uint64_t max_value) {
    char url[200];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/%s", port, mode);
    kc_remote_limits l = KC_REMOTE_LIMITS_INIT;
    l.deadline_ms = deadline_ms;
    l.max_value = max_value;
    kc_store_backend *b = NULL;
    assert_int_equal(kc_store_open_url(&b, url, &l), KC_OK);
    return b;
}

/* get must fail with `want` and leave no value. */
static void get_fails(const char *mode, int want, const char *needle) {
    kc_store_backend *b = open_mode(mode, 3000, 1 << 20);
    void *v = (void *)1;
    size_t n = 7;
    alarm(20);
    int rc = b->get(b, NAME, &v, &n);
    alarm(0);
    if (rc != want || (needle && !strstr(kc_error_last()->message, needle)))
        fail_msg("%s: rc %d (want %d), '%s' (want '%s')", mode, rc, want, kc_error_last()->message,
                 needle ? needle : "");
    assert_null(v);
    b->free(b);
}

static void test_round_trip_and_404(void **state) {
    (void)state;
    kc_store_backend *b = open_mode("ok", 3000, 1 << 20);
    void *v;
    size_t n;
    assert_int_equal(b->get(b, NAME, &v, &n), KC_MISS);
    assert_int_equal(b->exists(b, NAME), 0);
    assert_int_equal(b->put(b, NAME, "entry bytes", 11), KC_OK);
    assert_int_equal(b->put(b, IMG, "image bytes!", 12), KC_OK);
    assert_int_equal(b->exists(b, NAME), 1);
    assert_int_equal(b->get(b, NAME, &v, &n), KC_OK);
    assert_int_equal(n, 11);
    assert_memory_equal(v, "entry bytes", 11);
    free(v);
    assert_int_equal(b->get(b, IMG, &v, &n), KC_OK);
    assert_int_equal(n, 12);
    free(v);
    assert_int_equal(b->remove(b, NAME), KC_OK);
    assert_int_equal(b->remove(b, NAME), KC_MISS);
    assert_int_equal(b->get(b, NAME, &v, &n), KC_MISS);
    assert_int_equal(b->get(b, "../../etc/passwd", &v, &n), KC_EINVAL); /* never a path outside */
    kc_remote_state st;
    assert_int_equal(b->state(b, &st), KC_OK);
    assert_int_equal(st.breaker, KC_BREAKER_CLOSED); /* misses are no failures */
    b->free(b);
}

static void test_cut_short_and_wrong_length_are_errors(void **state) {
    (void)state;
    get_fails("short", KC_EIO, NULL);
    get_fails("wrongcl", KC_EIO, NULL);
}

static void test_over_the_cap_is_refused_as_it_arrives(void **state) {
    (void)state;
    get_fails("huge", KC_EINVAL, "value cap");
    get_fails("chunky", KC_EINVAL, "value cap");
}

static void test_redirect_500_429(void **state) {
    (void)state;
    get_fails("redirect", KC_EIO, "redirect");
    get_fails("e429", KC_EIO, "429");
    kc_store_backend *b = open_mode("e500", 3000, 1 << 20);
    void *v;
    size_t n;
    assert_int_equal(b->get(b, NAME, &v, &n), KC_EIO);
    assert_non_null(strstr(kc_error_last()->message, "HTTP 500"));
    kc_remote_state st;
    assert_int_equal(b->state(b, &st), KC_OK);
    assert_int_equal(st.breaker, KC_BREAKER_OPEN);
    assert_int_equal(b->get(b, NAME, &v, &n), KC_EUNAVAILABLE); /* skipped while open */
    b->free(b);
}

static void test_429_once_is_retried(void **state) {
    (void)state;
    kc_store_backend *b = open_mode("once429", 3000, 1 << 20);
    void *v;
    size_t n;
    assert_int_equal(b->get(b, NAME, &v, &n), KC_OK);
    assert_int_equal(n, 13);
    assert_memory_equal(v, "after a retry", 13);
    free(v);
    b->free(b);
}

static void test_silence_ends_at_the_deadline(void **state) {
    (void)state;
    kc_store_backend *b = open_mode("silent", 300, 1 << 20);
    void *v;
    size_t n;
    alarm(10);
    assert_int_equal(b->get(b, NAME, &v, &n), KC_ETIMEOUT);
    alarm(0);
    b->free(b);
}

static void test_bad_urls_are_refused(void **state) {
    (void)state;
    kc_store_backend *b = NULL;
    kc_remote_limits l = KC_REMOTE_LIMITS_INIT;
    assert_int_equal(kc_store_open_url(&b, "http://127.0.0.1:1/x?layout=zip", &l), KC_EINVAL);
    assert_int_equal(kc_store_open_url(&b, "http://127.0.0.1:1/x?colour=red", &l), KC_EINVAL);
    assert_non_null(strstr(kc_error_last()->message, "colour"));
    assert_int_equal(kc_store_open_url(&b, "http://u:secretpw@127.0.0.1:1/x?colour=red", &l), KC_EINVAL);
    assert_null(strstr(kc_error_last()->message, "secretpw"));
    assert_null(b);
}

static void test_exists_of_an_object_over_the_cap(void **state) {
    (void)state;
    kc_store_backend *b = open_mode("bighead", 3000, 1 << 20);
    alarm(20);
    assert_int_equal(b->exists(b, NAME), 1);
    alarm(0);
    kc_remote_state st;
    assert_int_equal(b->state(b, &st), KC_OK);
    assert_int_equal(st.breaker, KC_BREAKER_CLOSED);
    b->free(b);
}

static int count_item(const kc_store_item *it, void *ctx) {
    (void)it;
    ++*(int *)ctx;
    return 0;
}

static void test_a_repeated_continuation_token_ends_the_listing(void **state) {
    (void)state;
    setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
    char url[200];
    snprintf(url, sizeof url, "s3://loop/p?endpoint=http://127.0.0.1:%d&region=us-east-1", port);
    kc_remote_limits l = KC_REMOTE_LIMITS_INIT;
    kc_store_backend *b = NULL;
    assert_int_equal(kc_store_open_url(&b, url, &l), KC_OK);
    int n = 0;
    alarm(20);
    assert_int_equal(b->iterate(b, count_item, &n), KC_ECORRUPT);
    alarm(0);
    assert_non_null(strstr(kc_error_last()->message, "continuation token"));
    b->free(b);
}

/* The URL opens (and reaches the server) or is refused; either way no message holds `secret`. */
static void no_secret(const char *fmt, const char *secret, int want_open) {
    char url[300];
    snprintf(url, sizeof url, fmt, port);
    kc_remote_limits l = KC_REMOTE_LIMITS_INIT;
    l.deadline_ms = 3000;
    kc_store_backend *b = NULL;
    int rc = kc_store_open_url(&b, url, &l);
    if (rc == KC_OK) {
        void *v;
        size_t n;
        alarm(20);
        rc = b->get(b, NAME, &v, &n);
        alarm(0);
        assert_int_equal(rc, KC_EIO);
        assert_non_null(strstr(kc_error_last()->message, "HTTP 500")); /* the right host, the right path */
        b->free(b);
    } else assert_null(b);
    if (strstr(kc_error_last()->message, secret) || (rc == KC_EINVAL) == want_open)
        fail_msg("%s: rc %d, '%s'", url, rc, kc_error_last()->message);
}

static void test_passwords_with_odd_characters_never_show(void **state) {
    (void)state;
    no_secret("http://bob:pa/ss@127.0.0.1:%d/e500", "pa/ss", 1);
    no_secret("http://bob:pa%%2Fss@127.0.0.1:%d/e500", "pa%2Fss", 1);
    no_secret("http://bob:pa?ss@127.0.0.1:%d/e500", "ss@", 0);
    no_secret("http://bob:pa?ss@127.0.0.1:%d/e500", "pa?ss", 0);
    no_secret("http://bob:pa#ss@127.0.0.1:%d/e500", "pa#ss", 1);
    no_secret("http://bob:pa%%zzss@127.0.0.1:%d/e500", "zzss", 0);
}

static void test_fragments_and_unsafe_characters_are_refused(void **state) {
    (void)state;
    kc_store_backend *b = NULL;
    kc_remote_limits l = KC_REMOTE_LIMITS_INIT;
    static const char *const bad[] = {"http://127.0.0.1:1/x#y",
                                      "https://127.0.0.1:1/a b",
                                      "http://127.0.0.1:1/x\"y",
                                      "s3://bucket/pre%20fix?endpoint=http://127.0.0.1:1",
                                      "s3://bucket/pre#fix?endpoint=http://127.0.0.1:1",
                                      "s3://buck!et/p",
                                      NULL};
    setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", 1);
    for (int i = 0; bad[i]; i++) {
        if (kc_store_open_url(&b, bad[i], &l) != KC_EINVAL) fail_msg("%s: opened", bad[i]);
        assert_null(b);
    }
    assert_int_equal(kc_store_open_url(&b, "http://127.0.0.1:1/a%20b/c~d", &l), KC_OK); /* escapes stay */
    b->free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_404),
        cmocka_unit_test(test_cut_short_and_wrong_length_are_errors),
        cmocka_unit_test(test_over_the_cap_is_refused_as_it_arrives),
        cmocka_unit_test(test_redirect_500_429),
        cmocka_unit_test(test_429_once_is_retried),
        cmocka_unit_test(test_silence_ends_at_the_deadline),
        cmocka_unit_test(test_bad_urls_are_refused),
        cmocka_unit_test(test_exists_of_an_object_over_the_cap),
        cmocka_unit_test(test_a_repeated_continuation_token_ends_the_listing),
        cmocka_unit_test(test_passwords_with_odd_characters_never_show),
        cmocka_unit_test(test_fragments_and_unsafe_characters_are_refused),
    };
    return cmocka_run_group_tests(tests, start, stop);
}

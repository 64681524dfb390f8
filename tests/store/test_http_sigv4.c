/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http_sigv4.c (label unit) — the S3 back end's request signer against AWS's published worked
 * examples ("Signature Calculations for the Authorization Header: Transferring Payload in a Single
 * Chunk", Amazon S3 API reference): GET object with Range, PUT object, GET bucket lifecycle, list
 * objects, each with the example credentials AKIAIOSFODNN7EXAMPLE.  A signer that differs in any step
 * (canonical request, scope, key derivation, header list) gives another signature.
 */
#include "helpers.h"

#include "common/internal.h"
#include "common/sigv4.h"

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define HOST "host:examplebucket.s3.amazonaws.com"
#define DATE "x-amz-date:20130524T000000Z"

static kc_sigv4_req example(const char *method, const char *path, const char *query, const char *const *h, size_t n,
                            const char *payload) {
    kc_sigv4_req r = {method,
                      path,
                      query,
                      h,
                      n,
                      payload,
                      "20130524T000000Z",
                      "us-east-1",
                      "s3",
                      "AKIAIOSFODNN7EXAMPLE",
                      "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
    return r;
}

static void check(const kc_sigv4_req *r, const char *want_sig, const char *want_names) {
    char auth[1024], sig[65], expect[1024];
    assert_int_equal(kc_sigv4_authorization(r, auth, sizeof auth, sig), KC_OK);
    assert_string_equal(sig, want_sig);
    snprintf(expect, sizeof expect,
             "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
             "SignedHeaders=%s,Signature=%s",
             want_names, want_sig);
    assert_string_equal(auth, expect);
}

static void test_get_object_with_range(void **state) {
    (void)state;
    const char *h[] = {HOST, "range:bytes=0-9", ("x-amz-content-sha256:" EMPTY_SHA), DATE};
    kc_sigv4_req r = example("GET", "/test.txt", "", h, 4, EMPTY_SHA);
    check(&r, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
          "host;range;x-amz-content-sha256;x-amz-date");
}

static void test_put_object(void **state) {
    (void)state;
    const char *body = "Welcome to Amazon S3.";
    char ph[65], path[64];
    assert_int_equal(kc_sha256_hex(body, strlen(body), ph), KC_OK);
    assert_string_equal(ph, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072");
    char sha[100];
    snprintf(sha, sizeof sha, "x-amz-content-sha256:%s", ph);
    const char *h[] = {"date:Fri, 24 May 2013 00:00:00 GMT", HOST, sha, DATE, "x-amz-storage-class:REDUCED_REDUNDANCY"};
    assert_int_equal(kc_sigv4_uri_encode("/test$file.text", 1, path, sizeof path), KC_OK);
    assert_string_equal(path, "/test%24file.text");
    kc_sigv4_req r = example("PUT", path, "", h, 5, ph);
    check(&r, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
          "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class");
}

static void test_get_bucket_lifecycle(void **state) {
    (void)state;
    const char *h[] = {HOST, ("x-amz-content-sha256:" EMPTY_SHA), DATE};
    kc_sigv4_req r = example("GET", "/", "lifecycle=", h, 3, EMPTY_SHA);
    check(&r, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
          "host;x-amz-content-sha256;x-amz-date");
}

static void test_list_objects(void **state) {
    (void)state;
    const char *h[] = {HOST, ("x-amz-content-sha256:" EMPTY_SHA), DATE};
    kc_sigv4_req r = example("GET", "/", "max-keys=2&prefix=J", h, 3, EMPTY_SHA);
    check(&r, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
          "host;x-amz-content-sha256;x-amz-date");
}

static void test_malformed_requests_are_refused(void **state) {
    (void)state;
    const char *h[] = {"no-colon-here"};
    kc_sigv4_req r = example("GET", "/", "", h, 1, EMPTY_SHA);
    char auth[1024];
    assert_int_equal(kc_sigv4_authorization(&r, auth, sizeof auth, NULL), KC_EINVAL);
    const char *ok[] = {HOST};
    r = example("GET", "/", "", ok, 1, EMPTY_SHA);
    r.amz_date = "2013";
    assert_int_equal(kc_sigv4_authorization(&r, auth, sizeof auth, NULL), KC_EINVAL);
    r = example("GET", "/", "", ok, 1, EMPTY_SHA);
    assert_int_equal(kc_sigv4_authorization(&r, auth, 20, NULL), KC_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_object_with_range),          cmocka_unit_test(test_put_object),
        cmocka_unit_test(test_get_bucket_lifecycle),           cmocka_unit_test(test_list_objects),
        cmocka_unit_test(test_malformed_requests_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

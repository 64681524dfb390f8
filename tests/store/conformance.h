/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conformance.h — what every store backend must do (kcache/sys/store.h), run against the
 * local directory (test_local) and Redis (test_redis): misses, round trips of binary
 * values, replacement, exists, remove, get_first, get_many (a table of version 3 that has
 * it: every name's value or NULL, in order), and many threads on shared names always
 * seeing a whole value, through get and get_many alike.
 */
#ifndef KC_TEST_CONFORMANCE_H
#define KC_TEST_CONFORMANCE_H

#include <pthread.h>

#include "kcache/sys/store.h"

/* A value that names itself: 8 bytes of length, a fill byte, then the fill repeated. */
static inline uint8_t *kcc_value(size_t len, uint8_t fill) {
    uint8_t *v = malloc(len);
    for (size_t i = 0; i < len; i++) v[i] = (uint8_t)(fill + i * 7);
    if (len >= 9) {
        for (int i = 0; i < 8; i++) v[i] = (uint8_t)(len >> (8 * i));
        v[8] = fill;
    }
    return v;
}

static inline int kcc_value_whole(const uint8_t *v, size_t len) {
    if (len < 9) return 0;
    size_t n = 0;
    for (int i = 0; i < 8; i++) n |= (size_t)v[i] << (8 * i);
    if (n != len) return 0;
    for (size_t i = 9; i < len; i++)
        if (v[i] != (uint8_t)(v[8] + i * 7)) return 0;
    return 1;
}

#define KCC_NAME(i)                                           \
    (i == 0   ? "0123456789abcdef0123456789abcdef.sm_90"      \
     : i == 1 ? "0123456789abcdef0123456789abcdef.compute_80" \
              : "fedcba9876543210fedcba9876543210.sm_80a")

typedef struct kcc_thread {
    kc_store_backend *b;
    int id, torn, errors;
} kcc_thread;

/* get_many of the three shared names (and one twice): each value present is whole. */
static void kcc_read_many(kcc_thread *t) {
    const char *names[] = {KCC_NAME(0), KCC_NAME(1), KCC_NAME(2), KCC_NAME(0)};
    void *d[4];
    size_t len[4];
    int rc = t->b->get_many(t->b, names, 4, d, len);
    for (int i = 0; i < 4; i++) {
        if (rc == KC_OK && d[i]) t->torn += !kcc_value_whole(d[i], len[i]);
        else if (rc != KC_OK && d[i]) t->errors++; /* an error leaves every out[i] NULL */
        free(d[i]);
    }
    if (rc != KC_OK) t->errors++;
}

static void *kcc_worker(void *arg) {
    kcc_thread *t = arg;
    unsigned s = (unsigned)t->id;
    int many = t->b->version >= 3 && t->b->get_many;
    for (int r = 0; r < 60; r++) {
        const char *name = KCC_NAME(rand_r(&s) % 3);
        int op = rand_r(&s) % (many ? 3 : 2);
        if (op == 2) {
            kcc_read_many(t);
        } else if (op) {
            size_t len = 9 + (size_t)(rand_r(&s) % 70000);
            uint8_t *v = kcc_value(len, (uint8_t)rand_r(&s));
            if (t->b->put(t->b, name, v, len) != KC_OK) t->errors++;
            free(v);
        } else {
            void *d;
            size_t len;
            int rc = t->b->get(t->b, name, &d, &len);
            if (rc == KC_OK) {
                t->torn += !kcc_value_whole(d, len);
                free(d);
            } else if (rc != KC_MISS) {
                t->errors++;
            }
        }
    }
    return NULL;
}

/* Run the whole suite on an empty backend. */
static inline void kcc_conformance(kc_store_backend *b) {
    assert_int_equal(b->version, KC_STORE_BACKEND_VERSION);
    void *d = NULL;
    size_t len = 0;
    const char *n0 = KCC_NAME(0), *n1 = KCC_NAME(1);
    assert_int_equal(b->get(b, n0, &d, &len), KC_MISS);
    assert_int_equal(b->exists(b, n0), 0);
    assert_int_equal(b->remove(b, n0), KC_MISS);
    /* Binary values (NUL bytes, every byte value), small and large, round-trip exactly. */
    const size_t sizes[] = {9, 4096, 1 << 20};
    for (size_t i = 0; i < 3; i++) {
        uint8_t *v = kcc_value(sizes[i], (uint8_t)i);
        assert_int_equal(b->put(b, n0, v, sizes[i]), KC_OK);
        assert_int_equal(b->get(b, n0, &d, &len), KC_OK);
        assert_int_equal(len, sizes[i]);
        assert_memory_equal(d, v, len);
        free(d);
        free(v);
    }
    assert_int_equal(b->exists(b, n0), 1);
    /* Replacing gives the new value; other names are untouched. */
    uint8_t *v1 = kcc_value(100, 1), *v2 = kcc_value(50, 2);
    assert_int_equal(b->put(b, n1, v1, 100), KC_OK);
    assert_int_equal(b->put(b, n1, v2, 50), KC_OK);
    assert_int_equal(b->get(b, n1, &d, &len), KC_OK);
    assert_int_equal(len, 50);
    assert_memory_equal(d, v2, 50);
    free(d);
    /* get_first, when offered: the first present name, by position. */
    if (b->get_first) {
        const char *names[] = {KCC_NAME(2), n1, n0};
        size_t which = 99;
        assert_int_equal(b->get_first(b, names, 3, &which, &d, &len), KC_OK);
        assert_int_equal(which, 1);
        assert_int_equal(len, 50);
        free(d);
        assert_int_equal(b->get_first(b, names, 1, &which, &d, &len), KC_MISS);
    }
    /* get_many, when offered: each name's value or NULL, by position; a name may repeat. */
    if (b->version >= 3 && b->get_many) {
        const char *names[] = {KCC_NAME(2), n1, n0, n1, KCC_NAME(2)};
        void *out[5];
        size_t lens[5];
        static char junk;
        for (int i = 0; i < 5; i++) out[i] = &junk, lens[i] = 99; /* overwritten */
        assert_int_equal(b->get_many(b, names, 5, out, lens), KC_OK);
        uint8_t *big = kcc_value(1 << 20, 2); /* n0's last value */
        assert_null(out[0]);
        assert_null(out[4]);
        assert_non_null(out[1]);
        assert_int_equal(lens[1], 50);
        assert_memory_equal(out[1], v2, 50);
        assert_non_null(out[2]);
        assert_int_equal(lens[2], 1 << 20);
        assert_memory_equal(out[2], big, 1 << 20);
        assert_non_null(out[3]);
        assert_int_equal(lens[3], 50);
        assert_memory_equal(out[3], v2, 50);
        assert_true(out[1] != out[3]); /* each the caller's, freed on its own */
        for (int i = 0; i < 5; i++) free(out[i]);
        free(big);
        out[0] = &junk;
        assert_int_equal(b->get_many(b, names, 1, out, lens), KC_OK); /* all absent */
        assert_null(out[0]);
        assert_int_equal(b->get_many(b, names, 0, out, lens), KC_OK); /* nothing asked */
    }
    assert_int_equal(b->remove(b, n1), KC_OK);
    assert_int_equal(b->exists(b, n1), 0);
    assert_int_equal(b->get(b, n1, &d, &len), KC_MISS);
    assert_int_equal(b->remove(b, n0), KC_OK);
    free(v1);
    free(v2);
    /* Many threads on three shared names: every value read is whole, nothing fails. */
    enum { T = 8 };
    pthread_t th[T];
    kcc_thread ts[T];
    for (int i = 0; i < T; i++) {
        ts[i] = (kcc_thread){b, i + 1, 0, 0};
        pthread_create(&th[i], NULL, kcc_worker, &ts[i]);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(ts[i].torn, 0);
        assert_int_equal(ts[i].errors, 0);
    }
}

#endif

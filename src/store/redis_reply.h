/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_reply.h — the shape of a RESP2 reply, checked byte by byte before hiredis sees it,
 * and once complete against what its command expects (redis_reply.c).  Only store/redis.c (and
 * its tests) use it.
 */
#ifndef KC_STORE_REDIS_REPLY_H
#define KC_STORE_REDIS_REPLY_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#define REPLY_MAX_ELEMENTS 64 /* a reply's elements by default (GET, EVAL: at most 2); MGET sets its own */
#define REPLY_MAX_LINE 4096   /* a status, error or number line */
#define REPLY_MAX_DEPTH 8

typedef struct kc_reply_scan {
    int depth;                       /* open levels; 0: the reply is complete */
    long long left[REPLY_MAX_DEPTH]; /* values still expected at each level */
    enum { S_TYPE, S_LINE, S_NUM, S_BULK } st;
    char type;
    int neg, digits;
    long long num;
    uint64_t bulk_left, line, elements;
    uint64_t total; /* bytes of bulk strings so far */
    uint64_t max_elements, max_total;
} kc_reply_scan;

/**
 * Start checking a new reply of at most `max_elements` array elements in all levels together
 * and at most `max_total` bytes of bulk strings together (each bulk string is also held to the
 * value cap given to kc_reply_scan_feed).
 */
void kc_reply_scan_init(kc_reply_scan *s, uint64_t max_elements, uint64_t max_total);

/**
 * Walk `n` bytes of the reply; *used is how many belong to it (fewer than n when it completed
 * inside them: the rest is an extra reply).  KC_OK, or KC_EIO naming what is wrong (`who` is
 * the server as shown in messages; a bulk string over `max_value`, or one that takes the
 * reply's bulk strings past max_total, is refused).
 */
int kc_reply_scan_feed(kc_reply_scan *s, uint64_t max_value, const char *who, const char *p, size_t n, size_t *used);

/* Reply types a command may answer with (an error reply is always possible). */
#define T_STRING (1u << REDIS_REPLY_STRING)
#define T_ARRAY (1u << REDIS_REPLY_ARRAY)
#define T_INTEGER (1u << REDIS_REPLY_INTEGER)
#define T_NIL (1u << REDIS_REPLY_NIL)
#define T_STATUS (1u << REDIS_REPLY_STATUS)

/** What a command's reply may be. */
typedef struct kc_reply_expect {
    unsigned types;        /**< reply types allowed, T_* (an error reply is always possible) */
    size_t elements;       /**< > 0: an array of exactly this many values, each a string or nil (MGET) */
    uint64_t max_total;    /**< the reply's bulk strings together; 0: the value cap */
    uint64_t max_elements; /**< elements == 0: at most this many in all levels; 0: REPLY_MAX_ELEMENTS (SCAN) */
} kc_reply_expect;

/** Whether a complete reply has the shape `ex` asks for: its type, and for MGET its length and
 *  its elements' types.  1 or 0. */
int kc_reply_shape_ok(const redisReply *r, const kc_reply_expect *ex);

#endif

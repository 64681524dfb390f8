/*
 * store/redis_reply.h — the shape of a RESP2 reply, checked byte by byte before hiredis sees it
 * (redis_reply.c).  Only store/redis.c uses it.
 */
#ifndef KC_STORE_REDIS_REPLY_H
#define KC_STORE_REDIS_REPLY_H

#include <stddef.h>
#include <stdint.h>

#define REPLY_MAX_ELEMENTS 64 /* the largest reply any command here expects has 2 */
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
} kc_reply_scan;

/** Start checking a new reply. */
void kc_reply_scan_init(kc_reply_scan *s);

/**
 * Walk `n` bytes of the reply; *used is how many belong to it (fewer than n when it completed
 * inside them: the rest is an extra reply).  KC_OK, or KC_EIO naming what is wrong (`who` is
 * the server as shown in messages; a bulk string over `max_value` is refused).
 */
int kc_reply_scan_feed(kc_reply_scan *s, uint64_t max_value, const char *who, const char *p, size_t n, size_t *used);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redis_reply.c — the reply's shape, checked as its bytes arrive and before hiredis sees them: hiredis 0.14
 * allocates an array's element table from the count in its header (`*2000000000` asks for
 * 16 GB) and frees a half-built reply element by element, and it has no element or size
 * limit of its own.  So every byte read is first walked here (RESP2: + - : $ *), and a
 * reply is refused as soon as a header declares more elements in all than the command
 * expects (REPLY_MAX_ELEMENTS, or an MGET's name count), a bulk string over the value cap or
 * past the reply's total cap, or a line over REPLY_MAX_LINE; what hiredis holds is then at
 * most the elements and bytes the command asked for, which free at once.  Bytes after the
 * complete reply are not the reply's: the scan stops there and marks the connection unusable
 * (a server that sends an extra reply would otherwise answer the next command with it).  Once
 * hiredis has built the reply, kc_reply_shape_ok holds it to the command's expected type and,
 * for an MGET, to exactly one string or nil per name asked.
 *
 * Callers: store/redis.c (send_recv, command_as) only.  Must not: allocate, or read past the
 * bytes given.
 */
#include "redis_reply.h"

#include <string.h>

#include "../common/internal.h"

void kc_reply_scan_init(kc_reply_scan *s, uint64_t max_elements, uint64_t max_total) {
    memset(s, 0, sizeof *s);
    s->depth = 1, s->left[0] = 1;
    s->max_elements = max_elements, s->max_total = max_total;
}

/* One value complete: count it in its level, closing the arrays it completes. */
static void scan_value(kc_reply_scan *s) {
    while (s->depth > 0 && --s->left[s->depth - 1] == 0) s->depth--;
    s->st = S_TYPE;
}

/* The bytes being walked, and what the messages name. */
typedef struct feed {
    uint64_t max_value;
    const char *who;
    const char *p;
    size_t n, i;
} feed;

/* A value's first byte: its type. */
static int on_type(kc_reply_scan *s, feed *f) {
    char ch = f->p[f->i];
    s->type = ch, s->line = 0, s->num = 0, s->neg = 0, s->digits = 0;
    if (ch == '+' || ch == '-' || ch == ':') s->st = S_LINE;
    else if (ch == '$' || ch == '*') s->st = S_NUM;
    else return kc_err(KC_EIO, "redis %s: protocol: unexpected byte 0x%02x", f->who, (unsigned char)ch);
    f->i++;
    return KC_OK;
}

/* A status, error or number line, up to its '\n'. */
static int on_line(kc_reply_scan *s, feed *f) {
    char ch = f->p[f->i++];
    if (ch == '\n') scan_value(s);
    else if (++s->line > REPLY_MAX_LINE)
        return kc_err(KC_EIO, "redis %s: protocol: a reply line over %d bytes", f->who, REPLY_MAX_LINE);
    return KC_OK;
}

/* A bulk string's header is complete: its length, held to the value cap and the reply's total. */
static int bulk_header(kc_reply_scan *s, const feed *f) {
    if ((uint64_t)s->num > f->max_value)
        return kc_err(KC_EIO, "redis %s: a reply over the value cap (%lld bytes, cap %llu)", f->who, s->num,
                      (unsigned long long)f->max_value);
    if ((uint64_t)s->num > s->max_total - s->total) /* total <= max_total: no wrap */
        return kc_err(KC_EIO, "redis %s: a reply's values over %llu bytes together", f->who,
                      (unsigned long long)s->max_total);
    s->total += (uint64_t)s->num;
    s->bulk_left = (uint64_t)s->num + 2, s->st = S_BULK;
    return KC_OK;
}

/* An array's header is complete: its count, held to the elements expected and the nesting depth. */
static int array_header(kc_reply_scan *s, const feed *f) {
    s->elements += (uint64_t)s->num;
    if (s->elements > s->max_elements)
        return kc_err(KC_EIO, "redis %s: a reply of %llu+ elements (at most %llu expected)", f->who,
                      (unsigned long long)s->elements, (unsigned long long)s->max_elements);
    if (s->num == 0) scan_value(s);
    else if (s->depth == REPLY_MAX_DEPTH) return kc_err(KC_EIO, "redis %s: protocol: a reply nested too deep", f->who);
    else s->left[s->depth++] = s->num, s->st = S_TYPE;
    return KC_OK;
}

/* A bulk or array header's length, digit by digit; its '\n' ends it. */
static int on_num(kc_reply_scan *s, feed *f) {
    char ch = f->p[f->i++];
    if (ch == '-' && s->digits == 0 && !s->neg) s->neg = 1;
    else if (ch >= '0' && ch <= '9' && s->digits < 18) s->num = s->num * 10 + (ch - '0'), s->digits++;
    else if (ch == '\r' && s->digits > 0) {
        /* the '\n' follows */
    } else if (ch == '\n' && s->digits > 0) {
        if (!s->neg) return s->type == '$' ? bulk_header(s, f) : array_header(s, f);
        if (s->num != 1) return kc_err(KC_EIO, "redis %s: protocol: bad length -%lld", f->who, s->num);
        scan_value(s); /* nil */
    } else {
        return kc_err(KC_EIO, "redis %s: protocol: bad %s header", f->who, s->type == '$' ? "bulk" : "array");
    }
    return KC_OK;
}

/* A bulk string's bytes and its "\r\n", as many as are here. */
static int on_bulk(kc_reply_scan *s, feed *f) {
    uint64_t k = f->n - f->i < s->bulk_left ? f->n - f->i : s->bulk_left;
    f->i += (size_t)k, s->bulk_left -= k;
    if (s->bulk_left == 0) scan_value(s);
    return KC_OK;
}

/* What to do with the next byte, by the scan's state. */
static int (*const steps[])(kc_reply_scan *,
                            feed *) = {[S_TYPE] = on_type, [S_LINE] = on_line, [S_NUM] = on_num, [S_BULK] = on_bulk};

/* Walk `n` bytes; *used is how many belong to the reply (fewer than n when it completed
 * inside them).  KC_OK, or KC_EIO naming what is wrong. */
int kc_reply_scan_feed(kc_reply_scan *s, uint64_t max_value, const char *who, const char *p, size_t n, size_t *used) {
    feed f = {max_value, who, p, n, 0};
    while (f.i < n && s->depth > 0) {
        int rc = steps[s->st](s, &f);
        if (rc) return rc;
    }
    *used = f.i;
    return KC_OK;
}

int kc_reply_shape_ok(const redisReply *r, const kc_reply_expect *ex) {
    if (r->type < 1 || r->type > 5 || !(ex->types & (1u << r->type))) return 0;
    if (!ex->elements) return 1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != ex->elements) return 0;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i]->type != REDIS_REPLY_STRING && r->element[i]->type != REDIS_REPLY_NIL) return 0;
    return 1;
}

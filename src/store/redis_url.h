/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_url.h — a redis back end's URL, parsed (redis_url.c).  Callers: store/redis.c only.
 */
#ifndef KC_STORE_REDIS_URL_H
#define KC_STORE_REDIS_URL_H

#include "tls.h"

/** What a redis:// or rediss:// URL says. */
typedef struct kc_redis_url {
    int tls; /* rediss:// */
    char host[256], user[128], password[256];
    int port, db;
    char password_file[1024]; /* where the password came from (shown instead of it) */
    kc_tls_opts tls_opts;     /* rediss:// only */
    char shown[1400];         /* the URL as every message shows it: never the password */
} kc_redis_url;

/**
 * Parse `url`: redis[s]://[user[:password]@]host[:port][/db][?name=value&…], the values
 * percent-decoded; names: password_file (both schemes), ca_file, ca_dir, cert, key, sni
 * (rediss:// only).  A password file is read here (its first line; refused with KC_EPERM when
 * others may read or write it).  KC_EINVAL naming what is wrong, the URL shown redacted.
 */
int kc_redis_url_parse(kc_redis_url *u, const char *url);

/** `url` as a message may show it: the password (between "://" and the user info's '@') "***". */
void kc_redis_url_redact(const char *url, char *out, size_t cap);

#endif

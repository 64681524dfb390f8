/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_admin.h — redis.c's command runner for redis_admin.c, and redis_admin.c's slots of the redis
 * back end's table (leases, the listing).  Only the redis back end's files include it.
 */
#ifndef KC_STORE_REDIS_ADMIN_H
#define KC_STORE_REDIS_ADMIN_H

#include <hiredis/hiredis.h>

#include "kcache/sys/store.h"
#include "redis_io.h"

/** One command on back end `b` (redis.c's rb) through its breaker and deadline; a single server or a cluster's
 *  slot's master.  An error reply is KC_EIO (WRONGTYPE: KC_ECORRUPT), and *refused (when given) is then 1:
 *  the server answered and refused, which never counts against the breaker. */
int kc_redis_command_(void *b, const kc_redis_cmd *cmd, redisReply **out, int *refused);
/** The back end's URL as every message shows it (never a password). */
const char *kc_redis_shown_(const void *b);

int kc_redis_lease_take_(kc_store_backend *be, const char *name, uint64_t ttl_ms, const char *holder);
int kc_redis_lease_release_(kc_store_backend *be, const char *name, const char *holder);
int kc_redis_iterate_(kc_store_backend *be, kc_store_iter_cb cb, void *ctx);

#endif

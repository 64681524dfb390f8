/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_io.h — one command to a Redis server and its reply, under a deadline, in step
 * (redis_io.c, [Note: replies in step]).  Only store/redis.c uses it.
 */
#ifndef KC_STORE_REDIS_IO_H
#define KC_STORE_REDIS_IO_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "redis_conn.h"
#include "redis_reply.h"

/** Wait for `ev` on fd until `deadline` (monotonic ns): KC_OK, KC_ETIMEOUT or KC_EIO. */
int kc_redis_wait_fd(int fd, short ev, uint64_t deadline);

/** One command: its arguments and what its reply may be (`ex` NULL: a setup command). */
typedef struct kc_redis_cmd {
    int argc;
    const char **argv;
    const size_t *lens;
    const kc_reply_expect *ex;
} kc_redis_cmd;

/** Where a command goes: the connection, the server as messages show it, the value cap, the deadline. */
typedef struct kc_redis_link {
    kc_redis_conn *c;
    const char *who;
    uint64_t max_value;
    uint64_t deadline;
} kc_redis_link;

/**
 * Send one command and read its reply, all before the link's deadline; the reply is held to
 * `cmd->ex`'s element count and sizes as it arrives (the link's max_value: the value cap).
 * `cmd->ex` NULL: a setup command (AUTH, SELECT: the first on a fresh connection), sent alone.
 * Any other command is followed by an ECHO of a fresh nonce, whose reply must follow the
 * command's: anything else is KC_EIO, the connection out of step ([Note: replies in step]).
 * *extra is set when the connection must not be used again (bytes past the replies, or out of
 * step).
 */
int kc_redis_send_recv(const kc_redis_link *l, const kc_redis_cmd *cmd, redisReply **out, int *extra);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_lib.h — hiredis, opened on demand (redis_lib.c): the seven functions the redis back
 * end calls, through one table.  The back end's files call the kc_hiredis_* wrappers below, never
 * hiredis by name, so that libkcache has no link to libhiredis.
 */
#ifndef KC_STORE_REDIS_LIB_H
#define KC_STORE_REDIS_LIB_H

#include <hiredis/hiredis.h>

/** hiredis's functions, typed as the headers built against declare them. */
typedef struct kc_hiredis_api {
    __typeof__(&redisFormatCommandArgv) format_argv;
    __typeof__(&redisFreeCommand) free_command;
    __typeof__(&redisReaderCreate) reader_create;
    __typeof__(&redisReaderFree) reader_free;
    __typeof__(&redisReaderFeed) reader_feed;
    __typeof__(&redisReaderGetReply) reader_get_reply;
    __typeof__(&freeReplyObject) free_reply;
} kc_hiredis_api;

/** The table once libhiredis is loaded; NULL before, and for good where it could not be. */
extern const kc_hiredis_api *kc_hiredis_;

/**
 * Load libhiredis (once per process; later calls only read the outcome): the table, or NULL with
 * KC_EUNAVAILABLE set saying which library is missing and what to install.  Every way to a
 * reply (kc_store_redis_open, kc_redis_conn_open) calls it first.
 */
const kc_hiredis_api *kc_hiredis_load(void);

/** The table, for code that runs only once kc_hiredis_load succeeded (on a connection, a reply). */
static inline const kc_hiredis_api *kc_hiredis(void) { return __atomic_load_n(&kc_hiredis_, __ATOMIC_ACQUIRE); }

/** Free a reply (NULL: nothing).  A reply exists only where hiredis was loaded to parse it. */
static inline void kc_hiredis_free_reply(void *reply) {
    const kc_hiredis_api *h = reply ? kc_hiredis_load() : NULL;
    if (h) h->free_reply(reply);
}

/** For the tests: the soname loaded (the hiredis version built against); another soname to load
 *  instead, and the folder to look in when the dynamic linker does not find it (NULL: none). */
const char *kc_hiredis_soname_(void);
void kc_hiredis_use_soname_(const char *name, const char *dir);

/** The folder looked in when the dynamic linker does not find the soname (NULL: none built in). */
const char *kc_hiredis_dir_(void);

#endif

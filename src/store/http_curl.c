/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/http_curl.c — libcurl, opened on demand ([Note: libcrypto on demand] in common/crypto.c, for the
 * same reason): libkcache does not link libcurl, because libcurl links libssl and libcrypto, and a
 * process that never names an HTTP remote must load neither (a warm start loads no libcrypto).  The
 * first http://, https:// or s3:// remote dlopens libcurl.so.4 and resolves the ten functions the
 * back end calls; curl_global_init runs then, once.
 *
 * Callers: store/http.c (open), store/http_req.c (every call through kc_curl_).  Must not: load
 * anything before an HTTP remote is opened.
 */
#include "http.h"

#include <dlfcn.h>
#include <stdio.h>

#include "../common/internal.h"

#define KC_LIBCURL "libcurl.so.4"

const kc_curl_api *kc_curl_;
static kc_curl_api api;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char why[300];

static void load(void) {
    void *h = dlopen(KC_LIBCURL, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, sizeof why, "%s", dlerror());
        return;
    }
    const kc_dl_sym syms[] = {
        {(void **)&api.global_init, "curl_global_init"},   {(void **)&api.easy_init, "curl_easy_init"},
        {(void **)&api.easy_cleanup, "curl_easy_cleanup"}, {(void **)&api.easy_reset, "curl_easy_reset"},
        {(void **)&api.easy_setopt, "curl_easy_setopt"},   {(void **)&api.easy_perform, "curl_easy_perform"},
        {(void **)&api.easy_getinfo, "curl_easy_getinfo"}, {(void **)&api.easy_strerror, "curl_easy_strerror"},
        {(void **)&api.slist_append, "curl_slist_append"}, {(void **)&api.slist_free_all, "curl_slist_free_all"},
    };
    const char *missing = kc_dl_table(h, syms, sizeof syms / sizeof syms[0]);
    if (missing) {
        snprintf(why, sizeof why, "%s has no %s", KC_LIBCURL, missing);
        return;
    }
    if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(why, sizeof why, "curl_global_init failed");
        return;
    }
    __atomic_store_n(&kc_curl_, &api, __ATOMIC_RELEASE);
}

const kc_curl_api *kc_curl_load(void) {
    pthread_once(&once, load);
    const kc_curl_api *a = __atomic_load_n(&kc_curl_, __ATOMIC_ACQUIRE);
    if (!a)
        kc_err(KC_EUNAVAILABLE, "the HTTP back end needs libcurl (%s: %s): install it (apt-get install libcurl4)",
               KC_LIBCURL, why);
    return a;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/redis_url.c — a redis back end's URL: redis://, rediss:// and their query parameters
 * (redis_url.h).
 *
 * The one idea: the URL is the remote's whole configuration, and the password is its one secret.
 * So the password is parsed out once and every message, log, `kcache config` line and stats
 * record names the remote by `shown`, which has "***" (or the password file's path) in its place.
 * The user information ends at the last '@' before the query; a URL whose '@' comes only after a
 * '?' is refused (a password with '?' belongs in a password file, an '@' in a query value is
 * written %40), and shown with everything up to its last '@' hidden, so that a malformed URL
 * never shows a password either.
 *
 * A password file holds the password on its first line; like the HMAC key file it is refused
 * (KC_EPERM) when others may read it or anyone but its owner's group may write it.  It is read
 * when the remote is opened (a rotated password takes effect when the cache is opened again).
 *
 * Callers: store/redis.c.  Must not: put the password into any message.
 */
#include "redis_url.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/fs.h"
#include "../common/crypto.h"
#include "../common/internal.h"
#include "registry.h"

void kc_redis_url_redact(const char *url, char *out, size_t cap) {
    const char *s = strstr(url, "://");
    s = s ? s + 3 : url;
    const char *at, *colon;
    int has = kc_store_url_userinfo(s, &at, &colon);
    if (has < 0) { /* malformed: hide all up to the last '@' */
        snprintf(out, cap, "%.*s***%s", (int)(s - url), url, strrchr(s, '@'));
        return;
    }
    if (!has) {
        snprintf(out, cap, "%s", url);
        return;
    }
    int keep = colon && colon > s ? (int)(colon - s) : 0; /* the user name, shown */
    snprintf(out, cap, "%.*s%.*s:***%s", (int)(s - url), url, keep, s, at);
}

/* The password file's first line, checked as the HMAC key file is. */
static int read_password_file(kc_redis_url *u, const char *shown) {
    void *data;
    size_t len;
    struct stat st;
    const char *path = u->password_file;
    int rc = kc_fs_read_input(path, 4096, &data, &len, &st);
    if (rc == KC_MISS) return kc_err(KC_EINVAL, "remote '%s': password_file '%s' does not exist", shown, path);
    if (rc) return kc_err_prefix(rc, "remote '%s': password_file '%s'", shown, path);
    if (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)) {
        kc_wipe(data, len), free(data);
        return kc_err(KC_EPERM,
                      "remote '%s': password_file '%s' can be read or written by others (mode %03o): whoever reads "
                      "it can use the cache as you; chmod 600 it (a Kubernetes secret: defaultMode 0400)",
                      shown, path, (unsigned)(st.st_mode & 0777));
    }
    size_t n = 0;
    while (n < len && ((char *)data)[n] != '\n' && ((char *)data)[n] != '\r') n++;
    rc = n == 0 || n >= sizeof u->password || memchr(data, '\0', n)
             ? kc_err(KC_EINVAL,
                      "remote '%s': password_file '%s': its first line must hold the password (1 to %zu bytes)", shown,
                      path, sizeof u->password - 1)
             : KC_OK;
    if (!rc) memcpy(u->password, data, n), u->password[n] = '\0';
    kc_wipe(data, len), free(data);
    return rc;
}

/* One name=value of the query. */
static int query_param(kc_redis_url *u, const char *p, size_t n, const char *shown) {
    const char *eq = memchr(p, '=', n);
    size_t nl = eq ? (size_t)(eq - p) : n;
    struct {
        const char *name;
        char *dst;
        size_t cap;
        int tls_only;
    } params[] = {
        {"password_file", u->password_file, sizeof u->password_file, 0},
        {"ca_file", u->tls_opts.ca_file, sizeof u->tls_opts.ca_file, 1},
        {"ca_dir", u->tls_opts.ca_dir, sizeof u->tls_opts.ca_dir, 1},
        {"cert", u->tls_opts.cert, sizeof u->tls_opts.cert, 1},
        {"key", u->tls_opts.key, sizeof u->tls_opts.key, 1},
        {"sni", u->tls_opts.sni, sizeof u->tls_opts.sni, 1},
    };
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        if (strlen(params[i].name) != nl || strncmp(p, params[i].name, nl) != 0) continue;
        if (params[i].tls_only && !u->tls)
            return kc_err(KC_EINVAL, "remote '%s': '%s' is a TLS parameter: use rediss://", shown, params[i].name);
        if (!eq || kc_store_pct_decode(eq + 1, n - nl - 1, params[i].dst, params[i].cap) != 0 || !params[i].dst[0])
            return kc_err(KC_EINVAL, "remote '%s': '%s' needs a value (at most %zu bytes, %%XX escapes)", shown,
                          params[i].name, params[i].cap - 1);
        return KC_OK;
    }
    return kc_err(KC_EINVAL,
                  "remote '%s': unknown parameter '%.*s' (known: password_file; with rediss://: ca_file, ca_dir, cert, "
                  "key, sni)",
                  shown, (int)(nl > 64 ? 64 : nl), p);
}

static int parse_query(kc_redis_url *u, const char *q, const char *shown) {
    while (*q) {
        size_t n = strcspn(q, "&");
        if (n && query_param(u, q, n, shown)) return KC_EINVAL;
        q += n + (q[n] == '&');
    }
    if (u->password_file[0] && u->password[0])
        return kc_err(KC_EINVAL, "remote '%s': a password in the URL and a password_file: give one", shown);
    if (u->tls_opts.key[0] && !u->tls_opts.cert[0])
        return kc_err(KC_EINVAL, "remote '%s': key= without cert= (the client certificate)", shown);
    return u->password_file[0] ? read_password_file(u, shown) : KC_OK;
}

/* user:password, :password or password (a bare word is the password, as Redis clients read it; with a
 * password_file it is the user, see kc_redis_url_parse) up to `at`. */
static int parse_userinfo(kc_redis_url *u, const char *cred, const char *at, const char *colon) {
    size_t n = (size_t)(at - cred);
    if (colon && colon > cred) { /* user:password (a Redis 6 ACL user) */
        size_t ul = (size_t)(colon - cred);
        if (ul >= sizeof u->user) return kc_err(KC_EINVAL, "remote URL: user name too long");
        memcpy(u->user, cred, ul);
        u->user[ul] = '\0';
    }
    if (colon) n -= (size_t)(colon + 1 - cred), cred = colon + 1;
    if (n >= sizeof u->password) return kc_err(KC_EINVAL, "remote URL: password too long");
    memcpy(u->password, cred, n);
    u->password[n] = '\0';
    return KC_OK;
}

/* host[:port][/db], up to the query. */
static int parse_hostpart(kc_redis_url *u, const char *p, const char *url) {
    const char *hs = p, *he;
    if (*p == '[') {
        he = strchr(p, ']');
        if (!he) return kc_err(KC_EINVAL, "remote URL '%s': unterminated [address]", url);
        hs = p + 1;
        p = he + 1;
    } else {
        he = p + strcspn(p, ":/?");
        p = he;
    }
    size_t hl = (size_t)(he - hs);
    if (hl == 0 || hl >= sizeof u->host) return kc_err(KC_EINVAL, "remote URL '%s': no host", url);
    memcpy(u->host, hs, hl);
    u->host[hl] = '\0';
    u->port = 6379;
    if (*p == ':') {
        char *end;
        long v = strtol(p + 1, &end, 10);
        if (end == p + 1 || v <= 0 || v > 65535) return kc_err(KC_EINVAL, "remote URL '%s': bad port", url);
        u->port = (int)v;
        p = end;
    }
    if (*p == '/') {
        char *end = (char *)p + 1;
        long v = p[1] && p[1] != '?' ? strtol(p + 1, &end, 10) : 0;
        if ((*end && *end != '?') || v < 0 || v > INT_MAX || (end == p + 1 && p[1] && p[1] != '?'))
            return kc_err(KC_EINVAL, "remote URL '%s': bad db", url);
        u->db = (int)v;
        p = end;
    }
    if (*p && *p != '?') return kc_err(KC_EINVAL, "remote URL '%s': unexpected '%s'", url, p);
    return KC_OK;
}

/* The URL as every message shows it: "***" for a password, the password file's path in the query. */
static void make_shown(kc_redis_url *u, const char *q) {
    int v6 = strchr(u->host, ':') != NULL;
    char cred[1200] = "";
    if (u->password_file[0] && u->user[0])
        snprintf(cred, sizeof cred, "%s@", u->user); /* the file's path is in the query shown below */
    else if (!u->password_file[0] && (u->user[0] || u->password[0]))
        snprintf(cred, sizeof cred, "%s%s@", u->user, u->password[0] ? ":***" : "");
    snprintf(u->shown, sizeof u->shown, "%s://%s%s%s%s:%d/%d%s%s", u->tls ? "rediss" : "redis", cred, v6 ? "[" : "",
             u->host, v6 ? "]" : "", u->port, u->db, q ? "?" : "", q ? q + 1 : "");
}

int kc_redis_url_parse(kc_redis_url *u, const char *url_given) {
    memset(u, 0, sizeof *u);
    char url[1400]; /* the URL as messages show it */
    kc_redis_url_redact(url_given, url, sizeof url);
    const char *p = url_given;
    if (strncmp(p, "rediss://", 9) == 0) u->tls = 1, p += 9;
    else if (strncmp(p, "redis://", 8) == 0) p += 8;
    else
        return kc_err(KC_EINVAL,
                      "remote '%s': only redis://[user[:password]@]host[:port][/db][?…] or rediss://… is supported",
                      url);
    const char *at, *colon;
    if (kc_store_url_userinfo(p, &at, &colon) < 0)
        return kc_err(KC_EINVAL,
                      "remote '%s': an '@' after a '?': a password holding '?' goes in password_file=, an '@' in a "
                      "query value is written %%40",
                      url);
    int rc = at ? parse_userinfo(u, p, at, colon) : KC_OK;
    if (rc) return rc;
    char bare[sizeof u->password] = ""; /* user@host?password_file=…: the word is the user */
    if (at && !colon) memcpy(bare, u->password, sizeof bare), u->password[0] = '\0';
    if (at) p = at + 1;
    const char *q = strchr(p, '?');
    if (!(rc = parse_hostpart(u, p, url)) && q) rc = parse_query(u, q + 1, url);
    if (!rc && bare[0] && u->password_file[0] && strlen(bare) >= sizeof u->user)
        rc = kc_err(KC_EINVAL, "remote URL: user name too long");
    if (!rc && bare[0] && u->password_file[0]) snprintf(u->user, sizeof u->user, "%s", bare);
    else if (!rc && bare[0]) memcpy(u->password, bare, sizeof u->password);
    kc_wipe(bare, sizeof bare);
    if (rc) {
        kc_wipe(u->password, sizeof u->password);
        return rc;
    }
    make_shown(u, q);
    return KC_OK;
}

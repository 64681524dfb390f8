/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config/aws.c — S3 credentials from the environment or a credentials file ([the one idea] in aws.h).
 *
 * The file is read bounded (64 KiB) and parsed as the AWS CLI's INI: "[profile]" sections with
 * "name = value" lines; only aws_access_key_id, aws_secret_access_key and aws_session_token are taken.
 *
 * Callers: store/http.c.  Must not: print a secret, or read the environment when told not to.
 */
#include "aws.h"

#include <stdio.h>
#include <stdlib.h>

#include "../common/crypto.h"
#include "../common/fs.h"
#include "../common/internal.h"

static void copy(char *dst, size_t cap, const char *s, size_t n) {
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    while (n && (*s == ' ' || *s == '\t')) s++, n--;
    if (n >= cap) n = 0; /* too long: treated as absent */
    memcpy(dst, s, n), dst[n] = 0;
}

/* One "name = value" line of the profile wanted. */
static void take_line(kc_aws_creds *c, const char *l, size_t n) {
    const char *eq = memchr(l, '=', n);
    if (!eq) return;
    char name[64];
    copy(name, sizeof name, l, (size_t)(eq - l));
    const char *v = eq + 1;
    size_t vn = n - (size_t)(v - l);
    if (strcmp(name, "aws_access_key_id") == 0) copy(c->access_key, sizeof c->access_key, v, vn);
    else if (strcmp(name, "aws_secret_access_key") == 0) copy(c->secret_key, sizeof c->secret_key, v, vn);
    else if (strcmp(name, "aws_session_token") == 0) copy(c->session_token, sizeof c->session_token, v, vn);
}

static int read_file(const char *path, const char *profile, kc_aws_creds *c) {
    void *data;
    size_t len;
    int rc = kc_fs_read_file(path, 64 * 1024, &data, &len, NULL);
    if (rc) return rc;
    const char *p = data, *end = p + len;
    int in = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        char sec[128];
        copy(sec, sizeof sec, p, n);
        if (sec[0] == '[') {
            size_t sl = strlen(sec);
            in = sl >= 2 && sec[sl - 1] == ']' && strlen(profile) == sl - 2 && strncmp(sec + 1, profile, sl - 2) == 0;
        } else if (in) {
            take_line(c, p, n);
        }
        p += n + (nl ? 1 : 0);
    }
    kc_wipe(data, len);
    free(data);
    return KC_OK;
}

int kc_config_aws_creds_(const char *file, int no_env, kc_aws_creds *out) {
    memset(out, 0, sizeof *out);
    const char *e;
    if (!no_env) {
        if ((e = getenv("AWS_REGION")) || (e = getenv("AWS_DEFAULT_REGION")))
            copy(out->region, sizeof out->region, e, strlen(e));
        const char *id = getenv("AWS_ACCESS_KEY_ID"), *secret = getenv("AWS_SECRET_ACCESS_KEY");
        if (id && *id && secret && *secret) {
            copy(out->access_key, sizeof out->access_key, id, strlen(id));
            copy(out->secret_key, sizeof out->secret_key, secret, strlen(secret));
            if ((e = getenv("AWS_SESSION_TOKEN"))) copy(out->session_token, sizeof out->session_token, e, strlen(e));
            if (out->access_key[0] && out->secret_key[0]) return KC_OK;
        }
    }
    char path[1024] = "";
    const char *profile = no_env || !(e = getenv("AWS_PROFILE")) || !*e ? "default" : e;
    if (file && *file) snprintf(path, sizeof path, "%s", file);
    else if (!no_env && (e = getenv("AWS_SHARED_CREDENTIALS_FILE")) && *e) snprintf(path, sizeof path, "%s", e);
    else if (!no_env && (e = getenv("HOME")) && *e) snprintf(path, sizeof path, "%s/.aws/credentials", e);
    int rc = path[0] ? read_file(path, profile, out) : KC_MISS;
    if (rc == KC_OK && out->access_key[0] && out->secret_key[0]) return KC_OK;
    kc_wipe(out, sizeof *out);
    return kc_err(KC_EINVAL,
                  "s3: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give a credentials "
                  "file (credentials_file= in the URL, AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials) with "
                  "aws_access_key_id and aws_secret_access_key under [%s]%s%s%s",
                  profile, path[0] ? " (read: " : "", path, path[0] ? ")" : "");
}

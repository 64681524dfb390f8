/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record.c — the cache directory's record: a few named facts about the directory that are not
 * entries (which toolchains stored entries here, a pinned toolchain, memos), in one small
 * text file beside the shards.
 *
 *   <dir>/v1/record        the record (grammar below)
 *   <dir>/v1/record.lock   flock'ed by a writer
 *
 *   record = *line                          at most KC_RECORD_MAX bytes
 *   line   = name "=" value LF
 *   name   = 1*128 (ALPHA / DIGIT / "." / "_" / "-" / ":")
 *   value  = *8192 (any byte but LF and NUL)
 *
 * A line that does not parse is ignored by readers and dropped by the next writer; when a
 * name appears twice, the first is read and a writer keeps only the new one.  Names in use:
 * "pin", "toolchain.<id>", "nvrtc.file.<16 hex>" (cache/toolchain_choice.c says what they
 * mean); a new user picks a prefix of its own.
 *
 * The one idea: readers take the whole file in one read and no lock (a writer replaces it by
 * an atomic rename, so a reader sees the old record or the new one); writers serialise on
 * flock of record.lock, read, change one field, and replace the file — so two processes
 * adding fields at once lose neither.
 *
 * Callers: the public kc_cache_record_* (cache.h), cache/toolchain_choice.c.
 * Must not: be needed — a record that cannot be read is an empty one, and a failed write
 * loses a fact, never an entry; write in a read-only or disabled cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include "../common/fs.h"
#include "../common/internal.h"
#include "internal.h"
#include "record.h"

#define NAME_MAX_LEN 128
#define VALUE_MAX_LEN 8192

static int name_ok(const char *s, size_t n) {
    if (n == 0 || n > NAME_MAX_LEN) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
              ch == '_' || ch == '-' || ch == ':'))
            return 0;
    }
    return 1;
}

static int check_field(const char *name, const char *value) {
    if (!name || !name_ok(name, strlen(name)))
        return kc_err(KC_EINVAL, "record: '%.200s' is not a field name (1 to %d of A-Z a-z 0-9 . _ - :)",
                      name ? name : "(null)", NAME_MAX_LEN);
    if (value && (strlen(value) > VALUE_MAX_LEN || strchr(value, '\n')))
        return kc_err(KC_EINVAL, "record: the value of '%s' has a newline or is over %d bytes", name, VALUE_MAX_LEN);
    return KC_OK;
}

static int path_of(kc_cache *c, const char *file, char *out, size_t cap) {
    kc_local *l = c && kc_cache_mode(c) != KC_CACHE_DISABLED ? kc_cache_local_(c) : NULL;
    if (!l) return KC_MISS;
    int n = snprintf(out, cap, "%s/v1/%s", kc_local_root(l), file);
    if (n < 0 || (size_t)n >= cap) return kc_err(KC_EINVAL, "record: the path does not fit");
    char v1[PATH_MAX]; /* a linked v1/ is never followed ([Note: no links inside], store/local_layout.c) */
    snprintf(v1, sizeof v1, "%.*s", (int)(strlen(out) - strlen(file) - 1), out);
    return kc_fs_real_dir(v1);
}

int kc_record_load_(kc_cache *c, kc_record *r) {
    memset(r, 0, sizeof *r);
    char path[PATH_MAX];
    int rc = path_of(c, "record", path, sizeof path);
    if (rc) return rc;
    void *data;
    size_t len;
    if ((rc = kc_fs_read_file(path, KC_RECORD_MAX, &data, &len, NULL))) return rc;
    char *p = kc_realloc(data, len + 1); /* room for the NUL of the last value */
    if (!p) {
        free(data);
        return kc_err(KC_ENOMEM, "record: out of memory");
    }
    p[len] = '\0';
    r->data = p;
    /* In place: each good line becomes name NUL value NUL; the fields point into it. */
    for (size_t i = 0; i < len && r->n < KC_ARRAY_LEN(r->name);) {
        char *line = p + i, *nl = memchr(line, '\n', len - i);
        size_t ll = nl ? (size_t)(nl - line) : len - i;
        i += ll + 1;
        if (!nl) break; /* a last line without its LF was cut short: not a line */
        *nl = '\0';
        char *eq = memchr(line, '=', ll);
        if (!eq || !name_ok(line, (size_t)(eq - line)) || ll - (size_t)(eq - line) - 1 > VALUE_MAX_LEN ||
            memchr(line, 0, ll))
            continue;
        *eq = '\0';
        if (kc_record_find_(r, line)) continue; /* the first of a repeated name */
        r->name[r->n] = line;
        r->value[r->n++] = eq + 1;
    }
    return KC_OK;
}

void kc_record_free_(kc_record *r) {
    if (!r) return;
    free(r->data);
    memset(r, 0, sizeof *r);
}

const char *kc_record_find_(const kc_record *r, const char *name) {
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->name[i], name) == 0) return r->value[i];
    return NULL;
}

int kc_record_set_(kc_cache *c, const char *name, const char *value, const char *cap_prefix, size_t cap_n) {
    int rc = check_field(name, value);
    if (rc) return rc;
    if (!c) return kc_err(KC_EINVAL, "record: NULL cache");
    if (kc_cache_mode(c) != KC_CACHE_READWRITE)
        return kc_err(KC_EREADONLY, "the cache '%s' is read-only or disabled: its record is not written",
                      kc_cache_dir(c));
    char path[PATH_MAX], lock[PATH_MAX];
    if ((rc = path_of(c, "record", path, sizeof path)) || (rc = path_of(c, "record.lock", lock, sizeof lock)))
        return rc;
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return kc_err_errno(errno, "record: opening '%s'", lock);
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            rc = kc_err_errno(errno, "record: locking '%s'", lock);
            close(fd);
            return rc;
        }
    kc_record r;
    rc = kc_record_load_(c, &r);
    if (rc == KC_MISS || rc == KC_ECORRUPT) rc = KC_OK; /* absent, or over its size: start afresh */
    kc_buf b = {0};
    if (!rc) {
        /* With a cap, the oldest fields of cap_prefix go first, so at most cap_n remain. */
        size_t have = 0, drop = 0;
        for (size_t i = 0; cap_prefix && i < r.n; i++)
            have += strncmp(r.name[i], cap_prefix, strlen(cap_prefix)) == 0 && strcmp(r.name[i], name) != 0;
        if (cap_prefix && value && have + 1 > cap_n) drop = have + 1 - cap_n;
        for (size_t i = 0; i < r.n; i++) {
            if (strcmp(r.name[i], name) == 0) continue;
            if (drop && strncmp(r.name[i], cap_prefix, strlen(cap_prefix)) == 0) {
                drop--;
                continue;
            }
            kc_buf_printf(&b, "%s=%s\n", r.name[i], r.value[i]);
        }
        if (value) kc_buf_printf(&b, "%s=%s\n", name, value);
        if (b.failed) rc = kc_err(KC_ENOMEM, "record: out of memory");
        else if (b.len > KC_RECORD_MAX)
            rc = kc_err(KC_EINVAL, "record: '%s' would grow the record past %d bytes", name, KC_RECORD_MAX);
        else rc = kc_fs_write_atomic(path, b.data ? (const void *)b.data : "", b.len);
    }
    kc_buf_free(&b);
    kc_record_free_(&r);
    flock(fd, LOCK_UN);
    close(fd);
    return rc;
}

int kc_cache_record_get(kc_cache *c, const char *name, char *out, size_t cap) {
    if (!c || !out || cap == 0) return kc_err(KC_EINVAL, "kc_cache_record_get: NULL argument");
    out[0] = '\0';
    int rc = check_field(name, NULL);
    if (rc) return rc;
    kc_record r;
    if ((rc = kc_record_load_(c, &r))) return rc == KC_ECORRUPT ? KC_MISS : rc;
    const char *v = kc_record_find_(&r, name);
    if (!v) rc = KC_MISS;
    else if (strlen(v) >= cap)
        rc = kc_err(KC_EINVAL, "record: the value of '%s' has %zu bytes; %zu given", name, strlen(v), cap);
    else snprintf(out, cap, "%s", v);
    kc_record_free_(&r);
    return rc;
}

int kc_cache_record_set(kc_cache *c, const char *name, const char *value) {
    return kc_record_set_(c, name, value, NULL, 0);
}

int kc_cache_record_foreach(kc_cache *c, const char *prefix, kc_cache_record_cb cb, void *ctx) {
    if (!c || !cb) return kc_err(KC_EINVAL, "kc_cache_record_foreach: NULL argument");
    kc_record r;
    int rc = kc_record_load_(c, &r);
    if (rc == KC_MISS || rc == KC_ECORRUPT) return KC_OK;
    if (rc) return rc;
    size_t pl = prefix ? strlen(prefix) : 0;
    for (size_t i = 0; i < r.n && !rc; i++)
        if (!pl || strncmp(r.name[i], prefix, pl) == 0) rc = cb(r.name[i], r.value[i], ctx);
    kc_record_free_(&r);
    return rc;
}

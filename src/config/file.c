/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config/file.c — configuration files: `key = value` lines (ccache's format; the grammar is in
 * kcache/config.h), read line by line and written one setting at a time.
 *
 * The one idea: a file is checked whole when it is read — an unknown key, an environment-only
 * one, or a line that is no setting is an error naming FILE:LINE, never skipped — and a write
 * changes one setting and keeps every other line (comments included) as it was, replacing the
 * file by an atomic rename under a lock, so a reader sees the old file or the new one and two
 * writers lose neither's setting.  An older cache directory kept its size limit and toolchain pin
 * in v1/record (cache/record.c's grammar): they are read here as the directory's settings.
 *
 * Callers: config.c (reading), kc_config_file_set (kcache/config.h: cache/cache.c's
 * kc_cache_config_set, hence `kcache config KEY VALUE`, `kcache limit`, `kcache toolchain --pin`).
 * Must not: follow a link or trust a file another user may write inside the cache directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/fs.h"
#include "../common/internal.h"
#include "config.h"

/** The largest configuration file read. */
#define FILE_MAX (64 * 1024)

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    return p;
}

static const char *trim_end(const char *start, const char *end) {
    while (end > start && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) end--;
    return end;
}

/* One line [p, end): blank or a comment (1), a setting (0, key and value copied out), or an error. */
static int split_line(const char *p, const char *end, char *key, size_t kcap, char *value, size_t vcap,
                      const char *where) {
    p = skip_ws(p, end);
    if (p == end || *p == '#') return 1;
    const char *eq = memchr(p, '=', (size_t)(end - p));
    if (!eq) return kc_err(KC_EINVAL, "%s: not a `key = value` line (or a # comment)", where);
    const char *kend = trim_end(p, eq), *v = skip_ws(eq + 1, end), *vend = trim_end(v, end);
    if ((size_t)(kend - p) >= kcap || (size_t)(vend - v) >= vcap || memchr(p, 0, (size_t)(end - p)))
        return kc_err(KC_EINVAL, "%s: the line is too long or holds a NUL", where);
    snprintf(key, kcap, "%.*s", (int)(kend - p), p);
    snprintf(value, vcap, "%.*s", (int)(vend - v), v);
    return 0;
}

/* The id of a key a file may set, or an error naming FILE:LINE. */
static int file_key(const char *key, const char *where, int *id) {
    *id = -1;
    for (int i = 0; i < KC_CONFIG_COUNT; i++)
        if (strcmp(kc_config_row_of(i)->name, key) == 0) *id = i;
    if (*id < 0)
        return kc_err(KC_EINVAL, "%s: unknown key '%.100s' (`kcache config --reference` lists the keys)", where, key);
    if (!kc_config_row_of(*id)->in_file)
        return kc_err(KC_EINVAL, "%s: '%s' cannot be set in a file (only by its environment variable %s)", where, key,
                      kc_config_row_of(*id)->env);
    return KC_OK;
}

/* A file inside the cache directory must be this user's and not writable by everyone (a group that
 * may write it may write the directory too: the directory's own check, store/safedir.c, decides). */
/* The cache directory's file is as safe as the directory (store/safedir.c checks its owner and mode,
 * and a directory shared by a group is the caller's choice, KCACHE_ALLOW_UNSAFE_DIR): a file another
 * member of the group wrote is read like the old v1/record was.  Only a file anyone may write is
 * refused, since anyone could then pick this cache's settings. */
static int owner_check(const char *path, const struct stat *st) {
    if (st->st_mode & S_IWOTH)
        return kc_err(KC_EPERM,
                      "%s can be written by anyone (mode %03o): the cache is not opened with settings anyone "
                      "may pick; chmod o-w it (or remove it)",
                      path, (unsigned)(st->st_mode & 0777));
    return KC_OK;
}

static int read_whole(const char *path, int inside_cache, char **out, size_t *len) {
    void *data;
    struct stat st;
    int rc = inside_cache ? kc_fs_read_file(path, FILE_MAX, &data, len, &st)
                          : kc_fs_read_input(path, FILE_MAX, &data, len, &st);
    if (rc == KC_ECORRUPT) return kc_err(KC_EINVAL, "%s: not a regular file of at most %d bytes", path, FILE_MAX);
    if (rc) return rc;
    if (inside_cache && (rc = owner_check(path, &st))) {
        free(data);
        return rc;
    }
    *out = data;
    return KC_OK;
}

int kc_config_file_read_(const char *path, int inside_cache, kc_config *c, kc_config_apply_fn apply, void *ctx) {
    char *data = NULL;
    size_t len = 0;
    int rc = read_whole(path, inside_cache, &data, &len);
    if (rc) return rc;
    const char *p = data, *end = data + len;
    for (unsigned line = 1; p < end && !rc; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *lend = nl ? nl : end;
        char where[PATH_MAX + 32], key[64], value[PATH_MAX + 1];
        snprintf(where, sizeof where, "%s:%u", path, line);
        int id, s = split_line(p, lend, key, sizeof key, value, sizeof value, where);
        if (s < 0) rc = s;
        else if (s == 0 && !(rc = file_key(key, where, &id))) rc = apply(c, id, value, where, ctx);
        p = nl ? nl + 1 : end;
    }
    free(data);
    return rc;
}

void kc_config_record_read_(const char *dir, kc_config *c, kc_config_apply_fn apply, void *ctx) {
    static const struct {
        const char *field;
        int id;
    } moved[] = {
        {"max_size", KC_CONFIG_max_size}, /* kc_cache_set_max_size wrote it before kcache.conf */
    }; /* the record's "pin" is read where it is used, as before (cache/toolchain_choice.c) */
    char v1[PATH_MAX], path[PATH_MAX];
    if (snprintf(v1, sizeof v1, "%s/v1", dir) >= (int)sizeof v1 || kc_fs_real_dir(v1) != KC_OK) return;
    snprintf(path, sizeof path, "%s/record", v1);
    void *data;
    size_t len;
    if (kc_fs_read_file(path, 256 * 1024, &data, &len, NULL) != KC_OK) return;
    for (size_t m = 0; m < KC_ARRAY_LEN(moved); m++) {
        if (c->origin[moved[m].id] == KC_ORIGIN_DIR_FILE) continue; /* kcache.conf names it: that wins */
        size_t fl = strlen(moved[m].field);
        for (const char *p = data, *end = p + len; p < end;) { /* record = *(name "=" value LF); the first wins */
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            if (!nl) break;
            if ((size_t)(nl - p) > fl && strncmp(p, moved[m].field, fl) == 0 && p[fl] == '=') {
                char value[PATH_MAX];
                snprintf(value, sizeof value, "%.*s", (int)(nl - p - (ptrdiff_t)fl - 1), p + fl + 1);
                if (apply(c, moved[m].id, value, path, ctx) != KC_OK) /* as before: a bad one is ignored */
                    kc_log(KC_LOG_STORE, "the record's %s '%s' is not used: %s", moved[m].field, value,
                           kc_error_last()->message);
                break;
            }
            p = nl + 1;
        }
    }
    free(data);
}

/* ---- writing one setting ---- */

/* The file's lines with `key`'s replaced by `line` (or appended; NULL: removed) into *b. */
static void rewrite(const char *data, size_t len, const char *key, const char *line, kc_buf *b) {
    int done = 0;
    for (const char *p = data, *end = data + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *lend = nl ? nl : end;
        char k[64], v[PATH_MAX + 1];
        int s = split_line(p, lend, k, sizeof k, v, sizeof v, "");
        if (s == 0 && strcmp(k, key) == 0) {
            if (line && !done) kc_buf_printf(b, "%s\n", line);
            done = 1;
        } else {
            kc_buf_printf(b, "%.*s\n", (int)(lend - p), p);
        }
        p = nl ? nl + 1 : end;
    }
    if (line && !done) kc_buf_printf(b, "%s\n", line);
}

/* Rewrite `path` with `line` for `key`, under `path`.lock (held by one writer at a time). */
static int write_locked(const char *path, const char *key, const char *line) {
    char lock[PATH_MAX];
    if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock)
        return kc_err(KC_EINVAL, "%s: path too long", path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return kc_err_errno(errno, "opening '%s'", lock);
    int rc = KC_OK;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            rc = kc_err_errno(errno, "locking '%s'", lock);
            close(fd);
            return rc;
        }
    char *data = NULL;
    size_t len = 0;
    rc = read_whole(path, 1, &data, &len);
    if (rc == KC_MISS) rc = KC_OK;
    kc_buf b = {0};
    if (!rc) {
        rewrite(data ? data : "", data ? len : 0, key, line, &b);
        if (b.failed) rc = kc_err(KC_ENOMEM, "out of memory");
        else if (b.len > FILE_MAX) rc = kc_err(KC_EINVAL, "%s would grow past %d bytes", path, FILE_MAX);
        else rc = kc_fs_write_atomic_mode(path, b.data ? (const void *)b.data : "", b.len, 0644);
    }
    kc_buf_free(&b);
    free(data);
    flock(fd, LOCK_UN);
    close(fd);
    return rc;
}

/* `value` checked by row `id`'s parser, as a file's line is (nothing kept). */
static int check_value(int id, const char *name, const char *value) {
    kc_config *scratch = kc_calloc(1, sizeof *scratch);
    if (!scratch) return kc_err(KC_ENOMEM, "out of memory");
    char what[80];
    snprintf(what, sizeof what, "%s", name);
    int rc = kc_config_set_(scratch, id, value, KC_ORIGIN_DIR_FILE, NULL, what);
    kc_config_free_(scratch);
    return rc;
}

int kc_config_check(const char *name, const char *value) {
    if (!name || !value) return kc_err(KC_EINVAL, "kc_config_check: NULL argument");
    int id, rc = file_key(name, "kc_config_check", &id);
    return rc ? rc : check_value(id, name, value);
}

int kc_config_file_set(const char *path, const char *name, const char *value) {
    if (!path || !name) return kc_err(KC_EINVAL, "kc_config_file_set: NULL argument");
    int id, rc = file_key(name, path, &id);
    if (rc) return rc;
    char line[PATH_MAX + 80] = "";
    if (value) { /* the value checked by its row, before anything is written */
        if ((rc = check_value(id, name, value))) return rc;
        if (snprintf(line, sizeof line, "%s = %s", name, value) >= (int)sizeof line)
            return kc_err(KC_EINVAL, "the value of %s is too long", name);
    }
    return write_locked(path, name, value ? line : NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guard/profile.c — a cache's profile directory, its site profiles as data (kcache/guard.h):
 * check a profile's bytes, merge some into the directory, walk them in name order, and how many
 * there are.  The format, its file and its locked merge are profile_format.c's ([Note: profile
 * format]); a site's own profile (learned, loaded, saved) is site.c's.
 *
 * Callers: bundles (export, import: kc_site_profile_merge_at_), `kcache stats` (kc_site_profile_usage).
 * Must not: accept bytes from outside in any but the one written form (kc_site_profile_parse_),
 * or write into a cache that is not read-write.
 */
#include "kcache/guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../cache/internal.h"
#include "../common/fs.h"
#include "../common/internal.h"
#include "internal.h"

int kc_site_profile_check(const void *data, size_t len, char *site, size_t cap) {
    char name[KC_SITE_NAME_MAX + 1];
    int rc = kc_site_profile_parse_(data, len, name, NULL);
    if (rc == KC_OK && site && cap) snprintf(site, cap, "%s", name);
    return rc;
}

int kc_site_profile_merge_at_(kc_cache *cache, const char *pdir, const void *data, size_t len, int flags,
                              int *changed) {
    if (changed) *changed = 0;
    if (!cache) return kc_err(KC_EINVAL, "kc_site_profile_merge: cache is NULL");
    char site[KC_SITE_NAME_MAX + 1], path[PATH_MAX];
    uint32_t m[KC_SITE_MAX_INPUTS] = {0};
    int rc = kc_site_profile_parse_(data, len, site, m);
    if (rc) return rc;
    if (!(flags & KC_SITE_PROFILE_DRY) && kc_cache_mode(cache) != KC_CACHE_READWRITE)
        return kc_err(KC_EREADONLY, "the cache is read-only or disabled: profile of %s not merged", site);
    if (!kc_site_profile_path_of_(pdir, site, path, sizeof path))
        return kc_err(KC_EINVAL, "profile: the path is too long");
    return kc_site_profile_merge_file_(path, site, m, flags, changed, kc_cache_local_(cache));
}

int kc_site_profile_merge(kc_cache *cache, const void *data, size_t len, int dry_run, int *changed) {
    char pdir[PATH_MAX];
    if (changed) *changed = 0;
    if (!cache) return kc_err(KC_EINVAL, "kc_site_profile_merge: cache is NULL");
    int rc = kc_cache_profile_dir(cache, pdir, sizeof pdir);
    return rc ? rc : kc_site_profile_merge_at_(cache, pdir, data, len, dry_run ? KC_SITE_PROFILE_DRY : 0, changed);
}

static int profile_by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int kc_site_profile_foreach(kc_cache *cache, int (*cb)(const void *data, size_t len, void *ctx), void *ctx) {
    if (!cache || !cb) return kc_err(KC_EINVAL, "kc_site_profile_foreach: NULL argument");
    char pdir[PATH_MAX];
    if (kc_cache_mode(cache) == KC_CACHE_DISABLED || kc_cache_profile_dir(cache, pdir, sizeof pdir) != KC_OK) {
        kc_error_clear();
        return KC_OK; /* no directory: no profiles */
    }
    DIR *d = opendir(pdir);
    if (!d) return errno == ENOENT ? KC_OK : kc_err_errno(errno, "profile: reading '%s'", pdir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = KC_OK;
    for (struct dirent *de; (de = readdir(d)) != NULL && !rc;) {
        const char *nm = de->d_name;
        if (strlen(nm) != 24 || strcmp(nm + 16, ".profile") != 0 || strspn(nm, "0123456789abcdef") != 16) continue;
        if (n == cap) {
            char **p = kc_realloc(names, (cap = cap ? cap * 2 : 16) * sizeof *p);
            if (!p) {
                rc = kc_err(KC_ENOMEM, "out of memory");
                break;
            }
            names = p;
        }
        if (!(names[n] = kc_malloc(25))) rc = kc_err(KC_ENOMEM, "out of memory");
        else memcpy(names[n++], nm, 25);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, profile_by_name);
    for (size_t i = 0; i < n && !rc; i++) {
        char path[PATH_MAX], want[PATH_MAX], site[KC_SITE_NAME_MAX + 1];
        void *data;
        size_t len;
        snprintf(path, sizeof path, "%s/%s", pdir, names[i]);
        if (kc_fs_read_file(path, KC_SITE_PROFILE_MAX, &data, &len, NULL) != KC_OK) {
            kc_log(KC_LOG_STORE, "profile %s left out: %s", path, kc_error_last()->message);
            kc_error_clear();
            continue;
        }
        if (kc_site_profile_parse_(data, len, site, NULL) != KC_OK ||
            !kc_site_profile_path_of_(pdir, site, want, sizeof want) || strcmp(want, path) != 0) {
            kc_log(KC_LOG_STORE, "profile %s left out: not a sound profile filed under its site's name", path);
            kc_error_clear();
        } else {
            rc = cb(data, len, ctx);
        }
        free(data);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

int kc_site_profile_usage(kc_cache *cache, uint64_t *files, uint64_t *bytes) {
    if (!cache || !files || !bytes) return kc_err(KC_EINVAL, "kc_site_profile_usage: NULL argument");
    *files = *bytes = 0;
    char pdir[PATH_MAX];
    if (kc_cache_mode(cache) == KC_CACHE_DISABLED || kc_cache_profile_dir(cache, pdir, sizeof pdir) != KC_OK) {
        kc_error_clear();
        return KC_OK; /* no directory: no profiles */
    }
    DIR *d = opendir(pdir);
    if (!d) return errno == ENOENT ? KC_OK : kc_err_errno(errno, "profile: reading '%s'", pdir);
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        struct stat st;
        const char *nm = de->d_name;
        if (strlen(nm) != 24 || strcmp(nm + 16, ".profile") != 0 || strspn(nm, "0123456789abcdef") != 16) continue;
        if (fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
        *files += 1;
        *bytes += (uint64_t)st.st_size;
    }
    closedir(d);
    return KC_OK;
}

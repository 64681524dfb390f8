/*
 * guard/profile.c — the public calls on a cache's site profiles as data (kcache/guard.h): check
 * a profile's bytes, merge some into the cache, walk them, and how many there are.  The format,
 * its file and its locked merge are the cache's ([Note: profile format] in src/cache/cache.c);
 * a site's own profile (learned, loaded, saved) is site.c's.
 *
 * Callers: bundles (export, import), `kcache stats` (kc_site_profile_usage).  Must not: accept
 * bytes from outside in any but the one written form (kc_cache_profile_parse_).
 */
#include "kcache/guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../cache/internal.h"
#include "../common/internal.h"

#define profile_parse kc_cache_profile_parse_

int kc_site_profile_check(const void *data, size_t len, char *site, size_t cap) {
    char name[KC_SITE_NAME_MAX + 1];
    int rc = profile_parse(data, len, name, NULL);
    if (rc == KC_OK && site && cap) snprintf(site, cap, "%s", name);
    return rc;
}

int kc_site_profile_merge(kc_cache *cache, const void *data, size_t len, int dry_run, int *changed) {
    return kc_cache_profile_merge_(cache, data, len, dry_run ? KC_PROFILE_DRY : 0, changed);
}

int kc_site_profile_foreach(kc_cache *cache, int (*cb)(const void *data, size_t len, void *ctx), void *ctx) {
    return kc_cache_profile_foreach_(cache, cb, ctx);
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


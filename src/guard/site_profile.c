/* SPDX-License-Identifier: Apache-2.0 */
/*
 * site_profile.c — a site's own profile: the dynamic dimensions it learned, found where the
 * cache keeps profiles (kc_cache_profile_dir), loaded when the site opens (with the remote's
 * merged in), and saved — merged, never overwritten — when a lookup learns a dimension.
 *
 * The one idea: the file is the union of what every process learned (profile_format.c's
 * locked merge); a read-only cache reads it and never writes it, and a profile that cannot be
 * read or written is no error of the site's, only a dimension learned again.
 * Callers: site.c (kc_site_new, a lookup that learned), the public kc_site_save_profile.
 * Must not: hold the site's lock while touching the file system.
 */
#include "kcache/guard.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../common/internal.h"
#include "site_impl.h"

#define PROFILE_TOUCH_S 3600 /* a loaded profile's time is refreshed when older than this */

/* The profile's format, its file and its locked merge are profile_format.c's ([Note: profile format]);
 * its travels to and from a remote, profile_remote.c's ([Note: profiles in the remote]). */
#define profile_read kc_site_profile_read_
#define profile_path_of kc_site_profile_path_of_
#define profile_merge_file kc_site_profile_merge_file_

/* Read the site's profile; a read-write site refreshes the file's time (at most once an hour): the
 * LRU clock gc evicts profiles by ([Note: profiles in the size] in src/store/local_profiles.c). */
static void profile_load(kc_site *s, int writable) {
    if (!s->persist) return;
    profile_read(s->profile_path, s->profile);
    struct stat st;
    time_t now = time(NULL);
    if (writable && lstat(s->profile_path, &st) == 0 && S_ISREG(st.st_mode) &&
        (st.st_mtime + PROFILE_TOUCH_S < now || st.st_mtime > now + PROFILE_TOUCH_S))
        utimensat(AT_FDCWD, s->profile_path, NULL, AT_SYMLINK_NOFOLLOW); /* bookkeeping: a failure is no error */
}

int kc_site_save_profile(kc_site *s) {
    if (!s) return kc_err(KC_EINVAL, "kc_site_save_profile: site is NULL");
    if (!s->persist) return KC_OK;
    uint32_t prof[KC_SITE_MAX_INPUTS];
    pthread_mutex_lock(&s->mu);
    memcpy(prof, s->profile, sizeof prof);
    pthread_mutex_unlock(&s->mu);
    int rc = profile_merge_file(s->profile_path, s->name, prof, 0, NULL, NULL);
    if (rc == KC_OK && s->remote) kc_site_profile_to_remote_(s->remote, s->name, prof);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < KC_SITE_MAX_INPUTS; i++) s->profile[i] |= prof[i];
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* The site's profile when it opens: where it lives (the cache says; a name that does not fit is never
 * persisted), read from there, and, with a remote, the fleet's merged in ([Note: profiles in the remote]). */
void kc_site_profile_open_(kc_site *s, kc_cache *cache, const char *name) {
    char pdir[PATH_MAX];
    int have_dir = cache && kc_cache_mode(cache) != KC_CACHE_DISABLED &&
                   kc_cache_profile_dir(cache, pdir, sizeof pdir) == KC_OK;
    if (cache && !have_dir) kc_error_clear(); /* no profile is no error: the site still works */
    if (have_dir) {
        /* Where profiles live is the cache's business; a name that does not fit is never persisted. */
        int fits = profile_path_of(pdir, name, s->profile_path, sizeof s->profile_path);
        s->persist = fits && kc_cache_mode(cache) == KC_CACHE_READWRITE ? 1 : 0;
        if (!fits) {
            s->profile_path[0] = '\0';
        } else if (kc_cache_mode(cache) == KC_CACHE_READONLY) { /* read-only: read the profile, never write it */
            s->persist = 1;
            profile_load(s, 0);
            s->persist = 0;
        } else {
            profile_load(s, s->persist);
        }
    }
    /* [Note: profiles in the remote]: start from the fleet's profile too, in one read. */
    if (have_dir && kc_site_profile_remote_ok_(cache, 0)) {
        uint32_t m[KC_SITE_MAX_INPUTS] = {0};
        int more = 0;
        kc_site_profile_from_remote_(cache, s->name, m);
        for (int i = 0; i < KC_SITE_MAX_INPUTS; i++)
            more |= (s->profile[i] | m[i]) != s->profile[i], s->profile[i] |= m[i];
        if (s->persist && kc_site_profile_remote_ok_(cache, 1)) s->remote = cache;
        if (more && s->persist && profile_merge_file(s->profile_path, s->name, s->profile, 0, NULL, NULL) != KC_OK) {
            kc_log(KC_LOG_GUARD, "site %s: the remote's profile not kept locally: %s", s->name,
                   kc_error_last()->message);
            kc_error_clear();
        }
    }
}

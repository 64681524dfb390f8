/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/local_profiles.c — the site profiles' folder (<dir>/v1/profiles) as the local store
 * sees it: files that take room, counted toward the size limit and collected by gc like
 * entries.  What a profile says is the guard part's business ([Note: profile format] in
 * src/guard/profile_format.c); the store only knows their names, sizes and times.
 *
 * [Note: profiles in the size] A profile "<16 hex>.profile" is counted in the bytes (KC_STAT_BYTES)
 * of the shard its name's first two hex digits name — not in the entries (KC_STAT_ENTRIES): it
 * takes room under the limit, and stats shows profiles apart (kc_site_profile_usage).  A merge
 * that writes one (a bundle's import, a remote's profile) adds the change of size at once and
 * may start the automatic cleanup, as a put does; a site's own save is counted by the next gc's
 * recount, the truth the counts approximate.  gc treats a profile as an LRU item by its file
 * time (a site that loads its profile refreshes that time, at most once an hour), evicted with
 * the entries under --max-size; nothing refers to a profile, so the sweep never removes one.
 * A profile merge locks one of 256 stripes (".lock.<2 hex>" of the folder, by the profile's
 * first two hex digits), not a lock file per profile: 65,536 profiles are 65,536 files, not
 * twice that; gc removes the per-profile lock files of older versions when stale and unheld.
 *
 * Callers: local_gc.c (the walk), the cache (kc_local_profile_written_ after a merge).
 * Must not: follow a symbolic link (the folder is checked by kc_local_profile_dir).
 */
#include "local_impl.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>

#include "../common/fs.h"
#include "../common/internal.h"

int kc_local_profile_shard_(const char *file) {
    static const char hex[] = "0123456789abcdef";
    if (strlen(file) != 24 || strcmp(file + 16, ".profile") != 0 || strspn(file, hex) != 16) return -1;
    return (int)((strchr(hex, file[0]) - hex) * 16 + (strchr(hex, file[1]) - hex));
}

int kc_local_walk_profiles_(kc_local *l, kc_local_file_cb cb, void *ctx) {
    char dir[PATH_MAX], path[PATH_MAX + 256];
    if (kc_local_profile_dir(l, dir, sizeof dir) != KC_OK) { /* a link in its place: never followed */
        kc_log(KC_LOG_STORE, "skipping the profiles: %s", kc_error_last()->message);
        kc_error_clear();
        return 0;
    }
    DIR *d = kc_fs_opendir_nofollow(dir);
    if (!d)
        return errno == ENOENT || errno == ELOOP || errno == ENOTDIR
                   ? 0
                   : kc_local_err_errno_(errno, 0, "reading directory '%s'", dir);
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d)) != NULL;) {
        struct stat st;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        rc = cb(kc_local_profile_shard_(de->d_name), dir, de->d_name, &st, ctx);
    }
    closedir(d);
    return rc;
}

void kc_local_profile_written_(kc_local *l, const char *path, int64_t added) {
    const char *file = strrchr(path, '/');
    int shard = kc_local_profile_shard_(file ? file + 1 : path);
    if (!l || shard < 0 || added == 0 || l->readonly) return;
    kc_local_count(l, shard, KC_STAT_BYTES, added);
    kc_local_maybe_cleanup_(l, added);
    kc_local_maybe_flush_(l);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guard/profile_format.c — a site profile's grammar, its writer and its readers, and its file
 * with the locked merge: the grammar, the writer and the reader of a format in one file.
 *
 * The one idea: there is one written form of each profile ([Note: profile format]); it is the
 * only one accepted from outside (a bundle, a remote), so what two processes or two caches say
 * about a site can always be compared byte for byte.  A local file is read leniently, as it
 * always was, and merged under a stripe lock so that no process's dimension is lost.
 *
 * Callers: site.c (a site's own profile), profile.c (the profile directory), profile_remote.c,
 * bundle/records.c (parse: a bundle's profiles are checked before anything is written).
 * Must not: know the cache (its directory is a path given in), or accept bytes from outside in
 * any but the one written form.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include <xxhash.h>

#include "../common/fs.h"
#include "../common/internal.h"
#include "internal.h"

/*
 * [Note: profile format] A profile is the text
 *
 *   kcache-profile 1\n  site <name>\n  { input <i> <mask>\n }
 *
 * (i decimal, in increasing order; mask lowercase hex, non-zero, below 1 << KC_MAX_RANK), filed
 * as "<profile dir>/<XXH3-64 of the name, 16 hex>.profile".  The one written form is also the
 * only one accepted from outside (a bundle, a remote): the bytes must equal what profile_format
 * makes of what they say, so there is one spelling of each profile and nothing else gets in.
 * A local file is read leniently (profile_read), as it always was.
 */

/* The canonical bytes of a profile into buf (KC_SITE_PROFILE_MAX + 1); their length. */
size_t kc_site_profile_format_(const char *name, const uint32_t *masks, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "kcache-profile 1\nsite %s\n", name);
    for (int i = 0; i < KC_SITE_MAX_INPUTS && n > 0 && (size_t)n < cap; i++)
        if (masks[i]) n += snprintf(buf + n, cap - (size_t)n, "input %d %x\n", i, masks[i]);
    return n > 0 && (size_t)n < cap ? (size_t)n : cap;
}

/* Parse untrusted profile bytes strictly ([Note: profile format]): the site's name into site
 * (KC_SITE_NAME_MAX + 1), its masks ORed into masks (may be NULL).  KC_ECORRUPT with the reason. */
int kc_site_profile_parse_(const void *data, size_t len, char *site, uint32_t *masks) {
    static const char head[] = "kcache-profile 1\nsite ";
    char buf[KC_SITE_PROFILE_MAX + 1], canon[KC_SITE_PROFILE_MAX + 1];
    if (!data || len > KC_SITE_PROFILE_MAX)
        return kc_err(KC_ECORRUPT, "profile: %zu bytes, over the %d-byte cap", len, KC_SITE_PROFILE_MAX);
    if (memchr(data, 0, len)) return kc_err(KC_ECORRUPT, "profile: a NUL byte");
    memcpy(buf, data, len);
    buf[len] = '\0';
    if (strncmp(buf, head, sizeof head - 1) != 0)
        return kc_err(KC_ECORRUPT, "profile: not a kcache profile (version 1)");
    char *p = buf + sizeof head - 1, *nl = strchr(p, '\n');
    if (!nl || nl == p || nl - p > KC_SITE_NAME_MAX)
        return kc_err(KC_ECORRUPT, "profile: its site name (1..%d bytes)", KC_SITE_NAME_MAX);
    memcpy(site, p, (size_t)(nl - p));
    site[nl - p] = '\0';
    uint32_t m[KC_SITE_MAX_INPUTS] = {0};
    for (p = nl + 1; *p; p = nl + 1) {
        unsigned i, mask;
        char extra;
        if (!(nl = strchr(p, '\n'))) return kc_err(KC_ECORRUPT, "profile: its last line does not end");
        *nl = '\0';
        if (sscanf(p, "input %u %x%c", &i, &mask, &extra) != 2 || i >= KC_SITE_MAX_INPUTS || !mask ||
            mask >> KC_MAX_RANK)
            return kc_err(KC_ECORRUPT, "profile: line '%.40s' is not 'input <0..%d> <mask of %d bits>'", p,
                          KC_SITE_MAX_INPUTS - 1, KC_MAX_RANK);
        m[i] |= mask;
    }
    size_t n = kc_site_profile_format_(site, m, canon, sizeof canon);
    if (n != len || memcmp(canon, data, len) != 0)
        return kc_err(KC_ECORRUPT, "profile: not in its one written form (order, spelling, an input twice)");
    for (int i = 0; masks && i < KC_SITE_MAX_INPUTS; i++) masks[i] |= m[i];
    return KC_OK;
}

/* OR the masks a profile's text says into masks[], read leniently (as a local file always was):
 * every "input <i> <mask>" line after a "kcache-profile 1" line. */
static void profile_masks_of(const char *p, size_t len, uint32_t *masks) {
    int ok = 0;
    for (const char *end = p + len, *nl; p < end; p = nl + 1) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) nl = end;
        char line[128];
        size_t n = (size_t)(nl - p);
        if (n == 0 || n >= sizeof line) continue;
        memcpy(line, p, n);
        line[n] = '\0';
        unsigned i, mask;
        if (strcmp(line, "kcache-profile 1") == 0) ok = 1;
        else if (ok && sscanf(line, "input %u %x", &i, &mask) == 2 && i < KC_SITE_MAX_INPUTS) masks[i] |= mask;
    }
}

/* OR the masks of the profile file at `path` into masks[]; 0 when read (or absent: nothing). */
void kc_site_profile_read_(const char *path, uint32_t *masks) {
    void *data;
    size_t len;
    if (kc_fs_read_file(path, 65536, &data, &len, NULL) != KC_OK) {
        kc_error_clear(); /* absent or unreadable: nothing learned */
        return;
    }
    profile_masks_of(data, len, masks);
    free(data);
}

/* Where the profile of site `name` lives in a profile directory; 0 when the path does not fit. */
int kc_site_profile_path_of_(const char *pdir, const char *name, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/%016llx.profile", pdir, (unsigned long long)XXH3_64bits(name, strlen(name)));
    return n > 0 && (size_t)n < cap;
}

/*
 * Merge on write: under an flock of "<path>.lock", read what other processes wrote, join it to
 * masks[] (which gets the union) and, when that changes the file (or there is none), replace it
 * atomically — so no process's dimension is lost to another's write (a plain write is
 * last-writer-wins).  The site's save, a bundle's import and a remote's profile all come here.
 * *changed (may be NULL): 1 when the file was (dry_run: would be) written.
 */
int kc_site_profile_merge_file_(const char *path, const char *name, uint32_t *masks, int flags, int *changed,
                                kc_local *counted) {
    int dry_run = flags & KC_SITE_PROFILE_DRY;
    char dir[PATH_MAX], lock[PATH_MAX + 8];
    if (changed) *changed = 0;
    snprintf(dir, sizeof dir, "%s", path);
    char *base = strrchr(dir, '/');
    *base++ = '\0';
    int rc = KC_OK, fd = -1;
    if (!dry_run) {
        /* One of 256 stripe locks, by the file's first two hex digits ([Note: profiles in the size]
         * in src/store/local_profiles.c): no lock file per profile.  The folder is made when missing. */
        snprintf(lock, sizeof lock, "%s/.lock.%.2s", dir, base);
        fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno == ENOENT) {
            if ((rc = kc_fs_mkdirs(dir, 0700)) != KC_OK) return rc;
            fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        }
        if (fd < 0) return kc_err_errno(errno, "profile: opening '%s'", lock);
        while (flock(fd, LOCK_EX) != 0)
            if (errno != EINTR) {
                rc = kc_err_errno(errno, "profile: locking '%s'", lock);
                close(fd);
                return rc;
            }
    }
    void *old = NULL;
    size_t olen = 0;
    if (kc_fs_read_file(path, 65536, &old, &olen, NULL) != KC_OK) old = NULL, olen = 0, kc_error_clear();
    if (old) profile_masks_of(old, olen, masks);
    char buf[KC_SITE_PROFILE_MAX + 1];
    size_t n = kc_site_profile_format_(name, masks, buf, sizeof buf);
    int differs = !old || olen != n || memcmp(old, buf, n) != 0;
    free(old);
    if (differs && !dry_run)
        rc = flags & KC_SITE_PROFILE_LAZY ? kc_fs_write_replace(path, buf, n) : kc_fs_write_atomic(path, buf, n);
    if (changed) *changed = differs && !rc;
    if (fd >= 0) {
        flock(fd, LOCK_UN);
        close(fd);
    }
    if (differs && !dry_run && !rc) kc_local_profile_written_(counted, path, (int64_t)n - (int64_t)olen);
    return rc;
}

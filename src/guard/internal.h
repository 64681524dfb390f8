/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guard/internal.h — the guard part's private functions that cross files or parts: the site
 * profile's format and its files (profile_format.c), the profile directory's merge (profile.c),
 * and a profile's exchange with a remote tier (profile_remote.c).
 *
 * The one idea: a site profile has one owner, this part; the bundle part carries profiles and
 * calls the few functions marked "Callers: bundle/..." here, nothing else of this part.  Each
 * declaration names the files that may call it (SQLite's "only pcache.c calls this").
 * Must not: grow a function a caller outside the named files needs: those go in kcache/guard.h.
 */
#ifndef KC_GUARD_INTERNAL_H
#define KC_GUARD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kcache/guard.h"
#include "../store/local.h"

/* ---- the format ([Note: profile format] in profile_format.c) ---- */

/** The one written form of a profile into buf (cap > KC_SITE_PROFILE_MAX); its length.
 *  Callers: site.c, profile_remote.c, profile_format.c. */
size_t kc_site_profile_format_(const char *site, const uint32_t *masks, char *buf, size_t cap);
/** Parse untrusted bytes strictly: the site's name into site (KC_SITE_NAME_MAX + 1), masks ORed in (may be
 *  NULL); KC_ECORRUPT with the reason.  Callers: profile.c, profile_remote.c, bundle/records.c. */
int kc_site_profile_parse_(const void *data, size_t len, char *site, uint32_t *masks);
/** OR the masks of a local profile file into masks (read leniently; absent: nothing).  Callers: site.c. */
void kc_site_profile_read_(const char *path, uint32_t *masks);
/** The path of site's profile in profile directory pdir; 0 when it does not fit.  Callers: site.c, profile.c. */
int kc_site_profile_path_of_(const char *pdir, const char *site, char *out, size_t cap);

/** Flags of a profile merge: write nothing (say what would change); write without an fsync per file
 *  (many at once: the caller makes them durable with one kc_fs_sync_dir of the profile directory). */
#define KC_SITE_PROFILE_DRY 1
#define KC_SITE_PROFILE_LAZY 2
/** Under the file's (stripe) lock: union masks with the file's (masks gets it) and write it atomically when that
 *  changes it; the change of size is counted in `counted` (may be NULL: the next gc counts it).
 *  Callers: site.c, profile.c. */
int kc_site_profile_merge_file_(const char *path, const char *site, uint32_t *masks, int flags, int *changed,
                                struct kc_local *counted);

/* ---- the profile directory (profile.c) ---- */

/** kc_site_profile_merge into the profile directory `pdir` (kc_cache_profile_dir, found once for many merges),
 *  with KC_SITE_PROFILE_* flags.  Callers: bundle/bundle.c (an import's profiles), profile.c. */
int kc_site_profile_merge_at_(kc_cache *c, const char *pdir, const void *data, size_t len, int flags, int *changed);

/* ---- a site's profile in the remote tier ([Note: profiles in the remote] in profile_remote.c) ---- */

/** Whether the cache has a remote to read profiles from (`writable`: and to write them to).  Callers: site.c. */
int kc_site_profile_remote_ok_(kc_cache *c, int writable);
/** OR the masks of the remote's profile of site `name` into masks (refused or absent: nothing, logged).
 *  Callers: site.c. */
void kc_site_profile_from_remote_(kc_cache *c, const char *name, uint32_t *masks);
/** Publish the union of masks and the remote's profile of `name` (which masks learns too); a failure is logged,
 *  never an error.  Callers: site.c. */
void kc_site_profile_to_remote_(kc_cache *c, const char *name, uint32_t *masks);

/* ---- Called by other parts (tests/arch/check_internal.py --write; CTest test_internal) ----
 *   kc_site_profile_merge_at_  internal.h  Callers: bundle
 *   kc_site_profile_parse_     internal.h  Callers: bundle
 * ---- end of the index ---- */

#endif

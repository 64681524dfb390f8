/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/refusal.c — [Note: refusals are said] An entry found and refused — a signature or MAC that
 * does not vouch for it, corrupt bytes, another key's or variant's — is a miss that says so.  The
 * tiers record here, per thread, the last refusal they met: its status (KC_EUNTRUSTED: trust; KC_ECORRUPT:
 * bytes) and a reason naming the object, where it was found and why ("entry for sm_90 from
 * redis://host:6379/0 refused: signed by key …, which the keyring does not trust").  A lookup takes
 * it (kc_tiers_take_refusal, after forgetting any left from before it): its miss reason names it, and
 * a strict lookup (KCACHE_STRICT) fails with it instead of compiling.
 *
 * Callers: tiers.c records (remote reads, local reads); src/graph/lookup.c takes.  Must not: keep
 * anything but the one last refusal of the calling thread (one fixed buffer: recording never fails).
 */
#include <stdio.h>
#include <string.h>

#include "../common/internal.h"
#include "name.h"
#include "tiers.h"

static _Thread_local int tl_refused_rc;
static _Thread_local char tl_refused[400];

int kc_tiers_take_refusal(char *why, size_t cap) {
    int rc = tl_refused_rc;
    if (rc && why && cap) snprintf(why, cap, "%s", tl_refused);
    tl_refused_rc = KC_OK;
    tl_refused[0] = '\0';
    return rc;
}

/* What `name` (<key hex>.<variant>) is, as a refusal names it. */
static void object_words(const char *name, char *out, size_t cap) {
    const char *dot = strrchr(name, '.');
    const char *v = dot ? dot + 1 : "";
    int n = dot ? (int)(dot - name) : (int)strlen(name);
    if (strcmp(v, KC_VARIANT_UNIT) == 0) snprintf(out, cap, "compile unit record %.*s", n, name);
    else if (strcmp(v, KC_VARIANT_IMAGE) == 0) snprintf(out, cap, "image %.*s", n, name);
    else snprintf(out, cap, "entry for %s", v); /* the lookup that reads it names its key */
}

void kc_tiers_refused_(const char *name, const char *where, int rc) {
    char what[KC_NAME_MAX + 48];
    object_words(name, what, sizeof what);
    tl_refused_rc = rc ? rc : KC_ECORRUPT;
    snprintf(tl_refused, sizeof tl_refused, "%s %s refused: %s", what, where, kc_error_last()->message);
}

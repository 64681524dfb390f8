/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compile/targets.c — which targets a toolchain compiles, and the checks of the targets named to
 * kcache against them ([Note: target check] in include/kcache/target.h).
 *
 * The one idea: two lists, one rule.  This host's NVRTC says what it compiles
 * (nvrtcGetSupportedArchs, through compile/nvrtc.c, which loads exactly the library the key
 * names); kcache's table (target.c) says what any toolkit has made.  A lookup that may only
 * read accepts either, and asks NVRTC only for a name the table lacks; a compile needs NVRTC's;
 * a tool checks against the list of the toolchain its cache's keys use.
 *
 * Callers: the public kc_target_supported (cache/targets.c's kc_cache_targets, the tools), and
 * targets.h's callers.  The table and the names are the target part's (target.c).
 * Must not: load NVRTC for a target the table knows when only a lookup asks; leave an error
 * behind when it falls back to the table (a host without NVRTC is not a failure).
 */
#include <stdio.h>

#include "../common/internal.h"
#include "kcache/compile.h"
#include "nvrtc.h"
#include "targets.h"

/* out (a table already) from this host's NVRTC when it lists its targets; left the table else. */
static void from_nvrtc(kc_target_list *out, int load) {
    int cc[KC_NVRTC_ARCHS_MAX], major = 0, minor = 0;
    size_t n = 0;
    if (kc_nvrtc_archs_(load, cc, KC_NVRTC_ARCHS_MAX, &n, &major, &minor) != KC_OK) return;
    out->from = KC_TARGETS_NVRTC;
    out->nvrtc_major = major, out->nvrtc_minor = minor;
    out->family = major > 12 || (major == 12 && minor >= 9);
    out->n = 0;
    for (size_t i = 0; i < n; i++) { /* ascending, each once (as NVRTC gives them, but not trusted to) */
        size_t j = 0;
        while (j < out->n && out->cc[j] < cc[i]) j++;
        if ((j < out->n && out->cc[j] == cc[i]) || out->n >= KC_TARGET_LIST_MAX) continue;
        memmove(&out->cc[j + 1], &out->cc[j], (out->n - j) * sizeof out->cc[0]);
        out->cc[j] = cc[i];
        out->n++;
    }
}

int kc_target_supported(const char *toolchain, kc_target_list *out) {
    int rc = kc_target_table(out);
    if (rc) return rc;
    kc_err_saved keep; /* no NVRTC, or another toolchain: the table, and no error */
    kc_err_save(&keep);
    static __thread kc_toolchain local; /* 4 KB: not on the caller's stack */
    if (!toolchain || (kc_toolchain_local(&local) == KC_OK && strcmp(local.id, toolchain) == 0)) from_nvrtc(out, 1);
    kc_err_restore(&keep);
    return KC_OK;
}

int kc_target_known_(const char *name, const char *where, kc_target *out) {
    /* The last name the table knew, per thread: the table is built once per process and never
     * changes, so a name it knew it knows (a lookup asks on every call, mostly for one name). */
    static __thread struct {
        char name[16];
        kc_target t;
    } last;
    if (name && last.name[0] && strncmp(name, last.name, sizeof last.name) == 0) {
        *out = last.t;
        return KC_OK;
    }
    kc_target_list table = KC_TARGET_LIST_INIT;
    kc_target t;
    kc_target_table(&table);
    kc_err_saved keep;
    kc_err_save(&keep);
    int parsed = name && kc_target_parse(name, &t) == KC_OK;
    kc_err_restore(&keep);
    if (parsed && kc_target_list_has(&table, &t)) {
        if (strlen(name) < sizeof last.name) snprintf(last.name, sizeof last.name, "%s", name), last.t = t;
        *out = t;
        return KC_OK;
    }
    /* Not in the table: a newer NVRTC may know it (and its list is the one to show). */
    kc_target_list nv = KC_TARGET_LIST_INIT;
    kc_target_supported(NULL, &nv);
    return kc_target_check(&nv, name, where, out);
}

int kc_target_compilable_(const kc_target *t) {
    kc_target_list nv = KC_TARGET_LIST_INIT;
    kc_target_supported(NULL, &nv);
    if (nv.from != KC_TARGETS_NVRTC || kc_target_list_has(&nv, t)) return KC_OK; /* no list: NVRTC says */
    char name[16];
    kc_target_name(t, name);
    return kc_target_check(&nv, name, "to compile", NULL);
}

int kc_target_manifest_check_(const char *origin, const char *where, const char *name) {
    if (!name)
        return kc_err(KC_EINVAL, "%s: %s is not a target (a string: sm_XY, sm_XYa, sm_XYf or compute_XY)", origin,
                      where);
    char w[400];
    if (strcmp(origin, where) == 0 || strcmp(where, name ? name : "") == 0) snprintf(w, sizeof w, "%s", origin);
    else snprintf(w, sizeof w, "manifest %s, %s", origin, where);
    kc_target t;
    int rc = kc_target_known_(name, w, &t);
    if (rc != KC_EARCH) return rc;
    static __thread char msg[KC_ERRMSG_MAX]; /* the message, under the manifest's status: bad input */
    snprintf(msg, sizeof msg, "%s", kc_error_last()->message);
    return kc_err(KC_EINVAL, "%s", msg);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * graph/info.c — the public doors of a lookup: the caller's kc_graph_info checked, then filled.
 *
 * The one idea ([Note: versioned structs] in common/api.h): the lookup (lookup.c) fills a
 * kc_graph_info of this build's own version; the caller's is checked first — a version this build
 * does not know, 0 included, is KC_EVERSION before anything is looked up — and receives only the
 * bytes of its version.  A field added to kc_graph_info adds its version's size to info_size and
 * nothing else here.
 */
#include <stddef.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "graph_internal.h"

/* The size of a kc_graph_info at each version this build knows. */
static size_t info_size(unsigned version) {
    (void)version; /* version 1 is the only one yet */
    return sizeof(kc_graph_info);
}

static int info_check(const char *func, const kc_graph_info *info) {
    return info ? kc_api_version(func, "kc_graph_info", "KC_GRAPH_INFO_INIT", info->version, KC_GRAPH_INFO_VERSION)
                : KC_OK;
}

int kc_graph_compile(kc_cache *c, const kc_graph_desc *d, const char *target, kc_graph_info *info) {
    int rc = info_check("kc_graph_compile", info);
    if (rc) return rc;
    kc_graph_info full = KC_GRAPH_INFO_INIT;
    rc = kc_graph_compile_(c, d, target, &full);
    if (info) kc_api_copy_out(info, &full, info_size(info->version), info->version);
    return rc;
}

int kc_graph_get(kc_cache *c, const kc_graph_desc *d, int device, kc_graph **out, kc_graph_info *info) {
    int rc = info_check("kc_graph_get", info);
    if (rc) {
        if (out) *out = NULL;
        return rc;
    }
    kc_graph_info full = KC_GRAPH_INFO_INIT;
    rc = kc_graph_get_(c, d, device, out, &full);
    if (info) kc_api_copy_out(info, &full, info_size(info->version), info->version);
    return rc;
}

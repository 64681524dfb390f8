/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bundle/report.c — the public doors of export and import: the caller's kc_bundle_report checked,
 * then filled ([Note: versioned structs] in common/api.h).
 *
 * The one idea: bundle.c fills a report of this build's version; the caller's is checked first — a
 * version this build does not know, 0 included, is KC_EVERSION before any file is read or written —
 * and receives only the bytes of its version.  A field added to kc_bundle_report adds its version's
 * size to report_size and nothing else here.
 */
#include "kcache/bundle.h"

#include "../common/api.h"
#include "../common/internal.h"

/* bundle.c */
int kc_bundle_export_(kc_cache *c, const char *path, const kc_bundle_filter *filter, const kc_bundle_covers *covers,
                      kc_bundle_report *out);
int kc_bundle_import_(kc_cache *c, const char *path, int dry_run, kc_bundle_report *out);

/* The size of a kc_bundle_report at each version this build knows. */
static size_t report_size(unsigned version) {
    (void)version; /* version 1 is the only one yet */
    return sizeof(kc_bundle_report);
}

static int report_check(const char *func, const kc_bundle_report *out) {
    return out ? kc_api_version(func, "kc_bundle_report", "KC_BUNDLE_REPORT_INIT", out->version,
                                KC_BUNDLE_REPORT_VERSION)
               : KC_OK;
}

int kc_bundle_export_covering(kc_cache *c, const char *path, const kc_bundle_filter *filter,
                              const kc_bundle_covers *covers, kc_bundle_report *out) {
    int rc = report_check("kc_bundle_export", out);
    if (rc) return rc;
    kc_bundle_report full = KC_BUNDLE_REPORT_INIT;
    rc = kc_bundle_export_(c, path, filter, covers, &full);
    if (out) kc_api_copy_out(out, &full, report_size(out->version), out->version);
    return rc;
}

int kc_bundle_export(kc_cache *c, const char *path, const kc_bundle_filter *filter, kc_bundle_report *out) {
    return kc_bundle_export_covering(c, path, filter, NULL, out);
}

int kc_bundle_import(kc_cache *c, const char *path, int dry_run, kc_bundle_report *out) {
    int rc = report_check("kc_bundle_import", out);
    if (rc) return rc;
    kc_bundle_report full = KC_BUNDLE_REPORT_INIT;
    rc = kc_bundle_import_(c, path, dry_run, &full);
    if (out) kc_api_copy_out(out, &full, report_size(out->version), out->version);
    return rc;
}

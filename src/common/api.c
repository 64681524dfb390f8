/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common/api.c — checking the version of a caller's struct and copying out only what fits it
 * ([Note: versioned structs] in api.h).  Nothing here knows a particular struct.
 */
#include "common/api.h"

#include <string.h>

#include "internal.h"

int kc_api_version(const char *func, const char *type, const char *init, unsigned version, unsigned current) {
    if (version >= 1 && version <= current) return KC_OK;
    if (version == 0)
        return kc_err(KC_EVERSION, "%s: %s.version is 0 (never initialised?): initialise it with %s", func, type, init);
    return kc_err(KC_EVERSION,
                  "%s: %s version %u is newer than this kcache knows (%u): built against newer headers "
                  "than the library it runs with (%s)",
                  func, type, version, current, kc_version());
}

void kc_api_copy_out(void *out, const void *full, size_t size, unsigned version) {
    memcpy(out, full, size);
    memcpy(out, &version, sizeof version); /* the first field of every versioned struct */
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/name.c — store names (store/name.h): compose, check, shard.
 *
 * The one idea: one grammar for every tier — 32 lowercase hex digits of the key, a dot, a
 * valid variant — checked here and nowhere else.
 *
 * Must not: touch any store; these are pure functions on strings.
 */
#include "name.h"

#include <stdio.h>
#include <string.h>

#include "../common/internal.h"

int kc_store_name_check(const char *name) {
    if (!name) return kc_err(KC_EINVAL, "store name is NULL");
    size_t n = strlen(name);
    if (n < KC_KEY_HEX_LEN + 2 || n > KC_NAME_MAX || name[KC_KEY_HEX_LEN] != '.')
        return kc_err(KC_EINVAL, "invalid store name '%.80s'", name);
    for (int i = 0; i < KC_KEY_HEX_LEN; i++) {
        char c = name[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return kc_err(KC_EINVAL, "invalid store name '%.80s': key is not lowercase hex", name);
    }
    if (kc_variant_check(name + KC_KEY_HEX_LEN + 1) != KC_OK)
        return kc_err(KC_EINVAL, "invalid store name '%.80s': bad variant", name);
    return KC_OK;
}

void kc_store_name(const kc_key *key, const char *variant, char out[KC_NAME_MAX + 1]) {
    kc_key_to_hex(key, out);
    size_t n = strnlen(variant,
                       KC_NAME_MAX - KC_KEY_HEX_LEN - 1); /* copies, not snprintf: every lookup names two objects */
    out[KC_KEY_HEX_LEN] = '.';
    memcpy(out + KC_KEY_HEX_LEN + 1, variant, n);
    out[KC_KEY_HEX_LEN + 1 + n] = '\0';
}

int kc_store_name_shard(const char *name) {
    uint8_t b;
    return kc_unhex(name, 1, &b) == KC_OK ? b : 0;
}

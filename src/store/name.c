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
    size_t i = 0;
    for (; i < KC_KEY_HEX_LEN && kc_lowerhex(name[i]) >= 0; i++) {} /* a key's hex digits: a table lookup each */
    if (i < KC_KEY_HEX_LEN) {
        size_t n = strnlen(name, KC_NAME_MAX + 1);
        if (n < KC_KEY_HEX_LEN + 2 || n > KC_NAME_MAX || name[KC_KEY_HEX_LEN] != '.')
            return kc_err(KC_EINVAL, "invalid store name '%.80s'", name);
        return kc_err(KC_EINVAL, "invalid store name '%.80s': key is not lowercase hex", name);
    }
    if (name[i] != '.') return kc_err(KC_EINVAL, "invalid store name '%.80s'", name);
    const char *v = name + i + 1;
    size_t n = strnlen(v, KC_VARIANT_MAX + 1); /* the length first, then the bytes: as the messages say */
    if (n == 0 || n > KC_VARIANT_MAX) return kc_err(KC_EINVAL, "invalid store name '%.80s'", name);
    for (size_t k = 0; k < n; k++)
        if (!kc_name_char((unsigned char)v[k]))
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

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

/* One pass over a name that every read and write checks: a class per byte from one table. */
enum { HEX = 1, VARIANT = 2 };
#define H (HEX | VARIANT)
#define V VARIANT
static const unsigned char name_class[256] = {
    ['0'] = H, ['1'] = H, ['2'] = H, ['3'] = H, ['4'] = H, ['5'] = H, ['6'] = H, ['7'] = H, ['8'] = H, ['9'] = H,
    ['a'] = H, ['b'] = H, ['c'] = H, ['d'] = H, ['e'] = H, ['f'] = H, ['g'] = V, ['h'] = V, ['i'] = V, ['j'] = V,
    ['k'] = V, ['l'] = V, ['m'] = V, ['n'] = V, ['o'] = V, ['p'] = V, ['q'] = V, ['r'] = V, ['s'] = V, ['t'] = V,
    ['u'] = V, ['v'] = V, ['w'] = V, ['x'] = V, ['y'] = V, ['z'] = V, ['_'] = V};
#undef H
#undef V

int kc_store_name_check(const char *name) {
    if (!name) return kc_err(KC_EINVAL, "store name is NULL");
    size_t i = 0;
    for (; i < KC_KEY_HEX_LEN && (name_class[(unsigned char)name[i]] & HEX); i++) {}
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
        if (!(name_class[(unsigned char)v[k]] & VARIANT))
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

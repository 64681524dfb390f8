/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store/name.h — store names, "<32 lowercase hex key>.<variant>": how every tier and backend
 * names an entry (internal to the library; the store's parts, the front door and bundles use it).
 *
 * The one idea: a name is checked before it reaches any backend, so a backend can use it as
 * a file name or a Redis key as it is — no "..", no "/", no surprise.
 *
 * Must not: know any backend's layout (the local store makes a path of a name, redis a key).
 */
#ifndef KC_STORE_NAME_H
#define KC_STORE_NAME_H

#include "kcache/entry.h" /* KC_VARIANT_MAX */
#include "kcache/key.h"

/** Longest store name: 32 hex + '.' + variant. */
#define KC_NAME_MAX (KC_KEY_HEX_LEN + 1 + KC_VARIANT_MAX)

/** Validate a store name "<32 lowercase hex>.<variant>"; KC_EINVAL otherwise. */
int kc_store_name_check(const char *name);
/** Compose a store name from a key and variant (buffer of KC_NAME_MAX + 1). */
void kc_store_name(const kc_key *key, const char *variant, char out[KC_NAME_MAX + 1]);
/** The shard of a store name (its first byte, the key's first byte). */
int kc_store_name_shard(const char *name);

#endif

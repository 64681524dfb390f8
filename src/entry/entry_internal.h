/* SPDX-License-Identifier: Apache-2.0 */
/*
 * entry_internal.h — what the graph part needs of entry.c and image.c beyond the public API:
 * an image checked inside its image entry, attached to the graph entry without a copy (resolve.c);
 * every name a unit record holds (unitstore.c: [Note: recorded names]).
 *
 * Callers: src/graph/resolve.c and src/graph/unitstore.c only.
 */
#ifndef KC_ENTRY_INTERNAL_H
#define KC_ENTRY_INTERNAL_H

#include <stddef.h>

#include "kcache/entry.h"

/**
 * Attach image `index` of graph entry `e` as bytes[0, len), which lie inside image entry img's
 * IMAGE section (kc_image_entry_read gave them, checked): the section's buffer moves to `e`, no
 * copy ([Note: attached, not copied] in entry.c), and img keeps no IMAGE section.  Bytes that are
 * not inside it are copied, as kc_entry_attach_image does.
 */
int kc_entry_attach_image_from_(kc_entry *e, size_t index, kc_entry *img, const void *bytes, size_t len);

/**
 * Every name of unit record `e`, read as strictly as kc_unit_entry_read reads it: its image
 * reference, and each name expression with its lowered name, in record order (*n of each;
 * *exprs, *lowered and their strings malloc'd, the caller's; all NULL/0 unless KC_OK).
 */
int kc_unit_entry_names_(const kc_entry *e, kc_image_ref *ref_out, char ***exprs, char ***lowered, size_t *n);

#endif

/*
 * entry_internal.h — what the graph part's resolve.c needs of entry.c beyond the public API:
 * an image checked inside its image entry, attached to the graph entry without a copy.
 *
 * Callers: src/graph/resolve.c only.
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

#endif

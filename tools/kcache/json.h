/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.h — the few JSON writers the kcache tool needs (objects of numbers, strings, booleans,
 * and the name of a nested value the caller writes itself).
 * Strings are escaped per RFC 8259; nothing here parses.
 */
#ifndef KC_TOOL_JSON_H
#define KC_TOOL_JSON_H

#include <stdint.h>
#include <stdio.h>

/** Write `s` as a JSON string literal: valid UTF-8 passes through; control characters (C0, DEL,
 *  C1) are \u-escaped, and so is each byte that is not part of valid UTF-8 (as the code point
 *  of its number), so the output is valid JSON and carries no raw terminal control byte. */
void json_str(FILE *f, const char *s);
/** Write `"name": value` with a leading comma unless *first. */
void json_kv_u64(FILE *f, int *first, const char *name, uint64_t v);
void json_kv_str(FILE *f, int *first, const char *name, const char *v);
void json_kv_f64(FILE *f, int *first, const char *name, double v);
/** Write `"name": true` or `false`. */
void json_kv_bool(FILE *f, int *first, const char *name, int v);
/** Write `"name": ` (with the comma rule above); the caller writes the value (an array, an object, null). */
void json_key(FILE *f, int *first, const char *name);

#endif

/*
 * json.h — the few JSON writers the kcache tool needs (objects of numbers and strings).
 * Strings are escaped per RFC 8259; nothing here parses.
 */
#ifndef KC_TOOL_JSON_H
#define KC_TOOL_JSON_H

#include <stdint.h>
#include <stdio.h>

/** Write `s` as a JSON string literal. */
void json_str(FILE *f, const char *s);
/** Write `"name": value` with a leading comma unless *first. */
void json_kv_u64(FILE *f, int *first, const char *name, uint64_t v);
void json_kv_str(FILE *f, int *first, const char *name, const char *v);
void json_kv_f64(FILE *f, int *first, const char *name, double v);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* json.c — JSON string escaping and key/value writers for the kcache tool (see json.h). */
#include "json.h"

/* The length of the well-formed UTF-8 sequence at p (2..4), or 0 (RFC 3629: no overlongs, no surrogates, ≤ U+10FFFF). */
static int utf8_len(const unsigned char *p) {
    unsigned c = p[0];
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
    if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) || (c == 0xf0 && p[1] < 0x90) ||
        (c == 0xf4 && p[1] > 0x8f))
        return 0;
    return n;
}

void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); continue;
        case '\\': fputs("\\\\", f); continue;
        case '\n': fputs("\\n", f); continue;
        case '\r': fputs("\\r", f); continue;
        case '\t': fputs("\\t", f); continue;
        default: break;
        }
        if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, "\\u%04x", *p);
            continue;
        }
        if (*p < 0x80) {
            fputc(*p, f);
            continue;
        }
        int n = utf8_len(p);
        if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) { /* U+0080..U+009F: the C1 controls (CSI is U+009B) */
            fprintf(f, "\\u%04x", p[1]);
            p++;
        } else if (n) {
            fwrite(p, 1, (size_t)n, f);
            p += n - 1;
        } else { /* a byte that is not UTF-8 (a raw C1 byte, say): the code point of its number */
            fprintf(f, "\\u%04x", *p);
        }
    }
    fputc('"', f);
}

static void sep(FILE *f, int *first, const char *name) {
    if (!*first) fputs(", ", f);
    *first = 0;
    json_str(f, name);
    fputs(": ", f);
}

void json_kv_u64(FILE *f, int *first, const char *name, uint64_t v) {
    sep(f, first, name);
    fprintf(f, "%llu", (unsigned long long)v);
}

void json_kv_str(FILE *f, int *first, const char *name, const char *v) {
    sep(f, first, name);
    json_str(f, v);
}

void json_kv_f64(FILE *f, int *first, const char *name, double v) {
    sep(f, first, name);
    fprintf(f, "%.6g", v);
}

void json_kv_bool(FILE *f, int *first, const char *name, int v) {
    sep(f, first, name);
    fputs(v ? "true" : "false", f);
}

void json_key(FILE *f, int *first, const char *name) { sep(f, first, name); }

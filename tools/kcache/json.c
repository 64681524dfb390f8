/* json.c — JSON string escaping and key/value writers for the kcache tool. */
#include "json.h"

void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20) fprintf(f, "\\u%04x", *p);
            else fputc(*p, f);
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

/*
 * options.c — what NVRTC is asked to do, as far as the key is concerned: a kernel's options
 * (checked, and their form in the key) and whether a kernel may be cached at all.
 *
 * The one idea: the key must capture everything that can change the machine code, and an
 * option that reads from disk or picks the target behind kcache's back is refused here,
 * when a kernel is added to a description, with the reason.
 *
 * Callers: graph/desc.c (checks options as a kernel is added), graph/graph_key.c (the
 * options' key form), graph/lookup.c (cacheability), the public compile.h API.
 * Must not: load NVRTC (a hit never does).
 */
#include <stdio.h>
#include <stdlib.h>

#include "../common/internal.h"
#include "kcache/compile.h"

/* ---- cacheability ---- */

static int is_ident(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The first of __DATE__/__TIME__/__TIMESTAMP__ used as a token in code, else NULL. */
static const char *find_time_macro(const char *s) {
    static const char *const macros[] = {"__TIMESTAMP__", "__DATE__", "__TIME__"};
    /* Most sources name none of them: rule that out at strstr's speed (this runs on every lookup). */
    if (!strstr(s, "__DATE__") && !strstr(s, "__TIME")) return NULL;
    enum { CODE, LINE, BLOCK, STR, CHR } st = CODE;
    for (const char *p = s; *p; p++) {
        switch (st) {
        case CODE:
            if (p[0] == '/' && p[1] == '/') st = LINE, p++;
            else if (p[0] == '/' && p[1] == '*') st = BLOCK, p++;
            else if (*p == '"') st = STR;
            else if (*p == '\'') st = CHR;
            else if (*p == '_' && (p == s || !is_ident(p[-1])))
                for (size_t m = 0; m < KC_ARRAY_LEN(macros); m++) {
                    size_t n = strlen(macros[m]);
                    if (strncmp(p, macros[m], n) == 0 && !is_ident(p[n])) return macros[m];
                }
            break;
        case LINE: if (*p == '\n') st = CODE; break;
        case BLOCK: if (p[0] == '*' && p[1] == '/') st = CODE, p++; break;
        case STR: if (*p == '\\' && p[1]) p++; else if (*p == '"' || *p == '\n') st = CODE; break;
        case CHR: if (*p == '\\' && p[1]) p++; else if (*p == '\'' || *p == '\n') st = CODE; break;
        }
    }
    return NULL;
}

int kc_kernel_cacheable(const kc_kernel_src *k, const char **reason) {
    static const char *const reasons[] = {
        "the source uses __TIMESTAMP__", "the source uses __DATE__", "the source uses __TIME__"};
    const char *m = k && k->source ? find_time_macro(k->source) : NULL;
    for (size_t i = 0; !m && k && i < k->nheaders; i++)
        if (k->headers[i].source) m = find_time_macro(k->headers[i].source);
    if (!m) return 1;
    if (reason) *reason = strcmp(m, "__TIMESTAMP__") == 0 ? reasons[0] : strcmp(m, "__DATE__") == 0 ? reasons[1] : reasons[2];
    return 0;
}

/* ---- options ---- */

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* Options that take their value as the next word when written without '='. */
static int takes_value(const char *o) {
    static const char *const with_value[] = {"-I", "-include-path", "-D", "-define-macro", "-U",
                                             "-undefine-macro", "-std", "-maxrregcount", "-include",
                                             "-pre-include", "-ftz", "-prec-div", "-prec-sqrt",
                                             "-fmad", "-Xptxas", "-split-compile"};
    for (size_t i = 0; i < KC_ARRAY_LEN(with_value); i++)
        if (strcmp(o, with_value[i]) == 0) return 1;
    return 0;
}

int kc_options_normalize(const kc_kernel_src *k, char **out) {
    if (!k || !out) return kc_err(KC_EINVAL, "kc_options_normalize: NULL argument");
    *out = NULL;
    kc_buf b = {0};
    char one[1024];
    for (size_t i = 0; i < k->noptions; i++) {
        const char *o = k->options[i];
        if (!o) return kc_buf_free(&b), kc_err(KC_EINVAL, "option %zu is NULL", i);
        while (*o == ' ' || *o == '\t') o++;
        size_t n = strlen(o);
        while (n && (o[n - 1] == ' ' || o[n - 1] == '\t')) n--;
        if (n == 0) continue;
        if (n >= sizeof one - 2) return kc_buf_free(&b), kc_err(KC_EINVAL, "option %zu is too long", i);
        if (o[0] == '-' && o[1] == '-') o++, n--; /* --opt → -opt */
        memcpy(one, o, n);
        one[n] = '\0';
        if (strchr(one, '\n')) return kc_buf_free(&b), kc_err(KC_EINVAL, "option %zu holds a newline", i);
        if (takes_value(one) && i + 1 < k->noptions) { /* "-std" "c++17" → "-std=c++17" */
            const char *v = k->options[++i];
            size_t vl = v ? strlen(v) : 0;
            if (!v || n + 1 + vl >= sizeof one) return kc_buf_free(&b), kc_err(KC_EINVAL, "option '%s' has a bad value", one);
            one[n] = '=';
            memcpy(one + n + 1, v, vl + 1);
        }
        if (starts(one, "-arch") || starts(one, "-gpu-architecture") || starts(one, "-code")) {
            kc_buf_free(&b);
            return kc_err(KC_EINVAL, "option '%s': the target is chosen by kcache (it is the variant)", one);
        }
        if ((starts(one, "-I") || starts(one, "-include-path")) && !(k->include_digest && *k->include_digest)) {
            kc_buf_free(&b);
            return kc_err(KC_EINVAL, "option '%s' names an include folder on disk, whose contents kcache "
                          "cannot see: pass the headers in memory, or give include_digest", one);
        }
        /* Drop exact duplicates. */
        int dup = 0;
        for (size_t off = 0; off < b.len;) {
            const char *line = (const char *)b.data + off;
            size_t ll = strcspn(line, "\n");
            if (ll == strlen(one) && memcmp(line, one, ll) == 0) dup = 1;
            off += ll + 1;
        }
        if (!dup) kc_buf_printf(&b, "%s\n", one);
    }
    *out = kc_buf_take_str(&b);
    return *out ? KC_OK : kc_err(KC_ENOMEM, "options: out of memory");
}


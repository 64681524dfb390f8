/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common/env.c — the one strict parser of KCACHE_* environment values.
 *
 * The one idea: a value is what its grammar says or it is an error that names the variable
 * and the value — never a guess.  A boolean is exactly one of 1/true/yes/on or 0/false/no/off
 * (case-insensitive, no spaces: "0 ", "N" and "fasle" are errors, not "on"); a count is
 * decimal digits within a stated maximum; a duration is a finite, non-negative decimal number
 * of seconds within a stated maximum ("inf", "1e300", "abc", "-5" are errors), so no caller
 * ever casts an out-of-range double to an integer.  Unset and empty both mean "not given":
 * the caller's default stays (variables that name a path treat empty as an error themselves,
 * config/).  A size is digits with at most one fraction and an optional K/M/G/T suffix
 * (with "i" and "B" allowed after it): 5G, 1.5M, 64KiB, 1024.
 *
 * Who calls it: config/ (every setting, from the environment or a configuration file, parsed
 * there once; `name` is what the error names: the variable, or "FILE:LINE: key") and
 * cache/cache.c (kc_parse_size).  It records errors with kc_err() (KC_EINVAL) and must not log,
 * warn-and-continue or read anything itself: the value is handed in (no getenv: config/ alone
 * reads the environment).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "internal.h"

int kc_env_flag(const char *name, const char *v, bool *out) {
    if (!v || !*v) return KC_OK;
    static const char *const on[] = {"1", "true", "yes", "on"}, *const off[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < KC_ARRAY_LEN(on); i++) {
        if (strcasecmp(v, on[i]) == 0) return *out = true, KC_OK;
        if (strcasecmp(v, off[i]) == 0) return *out = false, KC_OK;
    }
    return kc_err(KC_EINVAL, "%s='%s' is not a boolean: use 1/true/yes/on or 0/false/no/off", name, v);
}

int kc_env_uint(const char *name, const char *v, unsigned long long max, unsigned long long *out) {
    if (!v || !*v) return KC_OK;
    unsigned long long n = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9')
            return kc_err(KC_EINVAL, "%s='%s' is not a whole number (decimal digits, at most %llu)", name, v, max);
        unsigned d = (unsigned)(*p - '0');
        if (n > (max - d) / 10) return kc_err(KC_EINVAL, "%s='%s' is too large (at most %llu)", name, v, max);
        n = n * 10 + d;
    }
    *out = n;
    return KC_OK;
}

int kc_env_seconds(const char *name, const char *v, double max, double *out) {
    if (!v || !*v) return KC_OK;
    /* Digits with at most one '.', nothing else: no sign, no exponent, no "inf"/"nan"/hex. */
    int digits = 0, dots = 0;
    for (const char *p = v; *p; p++) {
        if (*p >= '0' && *p <= '9') digits++;
        else if (*p == '.' && !dots) dots++;
        else digits = -1000000;
    }
    if (digits <= 0)
        return kc_err(KC_EINVAL, "%s='%s' is not a number of seconds (e.g. 600 or 0.5, at most %.0f)", name, v, max);
    errno = 0;
    double s = strtod(v, NULL);
    if (errno || !isfinite(s) || s < 0 || s > max)
        return kc_err(KC_EINVAL, "%s='%s' is out of range (0 to %.0f seconds)", name, v, max);
    *out = s;
    return KC_OK;
}

int kc_env_size(const char *name, const char *s, uint64_t *out) {
    if (!s || !*s) return KC_OK;
    const char *p = s;
    if (*p < '0' || *p > '9')
        return kc_err(KC_EINVAL, "%s%snot a size: '%s' (e.g. 5G, 500M, 64K)", name, *name ? ": " : "", s);
    /* Digits with at most one fraction, nothing strtod would also take (spaces, an exponent,
     * hex, inf): the grammar is strict. */
    size_t n = strspn(p, "0123456789");
    if (p[n] == '.') n += 1 + strspn(p + n + 1, "0123456789");
    errno = 0;
    char *end;
    double v = strtod(p, &end);
    if (errno || end != p + n || v < 0)
        return kc_err(KC_EINVAL, "%s%snot a size: '%s' (e.g. 5G, 500M, 64K)", name, *name ? ": " : "", s);
    static const char units[] = "kmgt";
    double mult = 1;
    const char *u = *end ? strchr(units, *end | 0x20) : NULL;
    if (u) {
        for (const char *q = units; q <= u; q++) mult *= 1024.0;
        end++;
    }
    if (mult > 1 && *end == 'i') end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') return kc_err(KC_EINVAL, "%s%snot a size: '%s' (e.g. 5G, 500M, 64K)", name, *name ? ": " : "", s);
    double bytes = v * mult;
    if (bytes > 9.2e18) return kc_err(KC_EINVAL, "%s%ssize '%s' is too large", name, *name ? ": " : "", s);
    *out = (uint64_t)bytes;
    return KC_OK;
}

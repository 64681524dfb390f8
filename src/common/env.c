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
 * cache.c).
 *
 * Who calls it: cache/cache.c (every variable kc_cache_open reads, checked there once so a bad
 * value fails the open) and graph/lookup.c (KCACHE_LOCK_WAIT at its use).  It records errors
 * with kc_err() (KC_EINVAL) and must not log, warn-and-continue or read anything but getenv.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>

#include "internal.h"

int kc_env_flag(const char *name, bool *out) {
    const char *v = getenv(name);
    if (!v || !*v) return KC_OK;
    static const char *const on[] = {"1", "true", "yes", "on"}, *const off[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < KC_ARRAY_LEN(on); i++) {
        if (strcasecmp(v, on[i]) == 0) return *out = true, KC_OK;
        if (strcasecmp(v, off[i]) == 0) return *out = false, KC_OK;
    }
    return kc_err(KC_EINVAL, "%s='%s' is not a boolean: use 1/true/yes/on or 0/false/no/off", name, v);
}

int kc_env_uint(const char *name, unsigned long long max, unsigned long long *out) {
    const char *v = getenv(name);
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

int kc_env_seconds(const char *name, double max, double *out) {
    const char *v = getenv(name);
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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache/common.h — status codes, the per-thread last error, and memory ownership.
 *
 * Every kcache function that can fail returns an int: KC_OK (0) on success, a negative
 * kc_status otherwise.  A few outcomes are expected rather than exceptional and have codes
 * of their own (KC_MISS, KC_BYPASS, KC_ENODRIVER, KC_EARCH, KC_ECORRUPT), so a caller can
 * branch on them without parsing text.  The human-readable message, with the call and the
 * context that failed, is kept in a record per thread that the library owns:
 * kc_error_last() (as libgit2's git_error_last).  Nothing in kcache aborts on input a
 * caller can get wrong.
 */
#ifndef KCACHE_COMMON_H
#define KCACHE_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(KC_NO_VISIBILITY)
#define KC_API __attribute__((visibility("default")))
#else
#define KC_API
#endif

/** Status codes returned (negated where errors) by every fallible kcache function. */
typedef enum kc_status {
    KC_OK = 0,              /**< Success. */
    KC_ERROR = -1,          /**< A generic error; see kc_error_last(). */
    KC_ENOMEM = -2,         /**< An allocation failed. */
    KC_EINVAL = -3,         /**< An argument is invalid (NULL, out of range, malformed). */
    KC_EIO = -4,            /**< A file-system or network operation failed. */
    KC_MISS = -5,           /**< Expected: the cache has no such entry (or it was unusable). */
    KC_BYPASS = -6,         /**< Expected: the request is not cacheable; it was not stored. */
    KC_ECORRUPT = -7,       /**< Data failed validation (bad magic, checksum, length, …). */
    KC_ENODRIVER = -8,      /**< No CUDA driver on this host (compile-only still works). */
    KC_EARCH = -9,          /**< The GPU architecture is unsupported or unknown. */
    KC_ECOMPILE = -10,      /**< NVRTC rejected a source; its log is in kc_error_last(). */
    KC_ENONVRTC = -11,      /**< NVRTC could not be loaded. */
    KC_EVERSION = -12,      /**< An options struct or file has a version this build lacks. */
    KC_EREADONLY = -13,     /**< The cache is read-only (KCACHE_READONLY) or disabled. */
    KC_EDRIVER = -14,       /**< The CUDA driver returned an error. */
    KC_EUNREGISTERED = -15, /**< A recorded post-compile wrapper is not registered. */
    KC_EBUSY = -16,         /**< A lock is held by someone else and waiting timed out. */
    KC_EEXPR = -17,         /**< A launch expression failed (division by zero, overflow). */
    KC_EPERM = -18,         /**< Refused for safety: an unsafe directory, a path escape, a key file others can read. */
    KC_ETIMEOUT = -19,      /**< A remote did not answer within its deadline. */
    KC_EUNAVAILABLE = -20,  /**< A remote is being skipped (its circuit breaker is open). */
    KC_EREFUSED = -21,      /**< The CUDA driver refused an image (too new a toolkit, an invalid image, no kernel
                             image for the device, a kernel missing from it): a lookup treats it as a miss. */
    KC_ENOTCACHED = -22,    /**< A lookup missed and would have compiled, but compiling is forbidden
                             (KCACHE_REQUIRE_HIT, KC_OPEN_REQUIRE_HIT): nothing was compiled. */
    KC_ELIMIT = -23,        /**< A limit refused the request (a site's entry or compile limits at insert): run
                             uncompiled; the reason names the limit. */
    KC_EUNTRUSTED = -24     /**< Refused for trust: bytes from outside (a remote, a bundle) without the MAC or
                             signature this configuration requires, a MAC that does not match, a signature by
                             no trusted key or that does not match, or an object this cache cannot vouch for
                             (not published).  The reason names the key or what is missing. */
} kc_status;

/** The last error recorded on the calling thread. */
typedef struct kc_error {
    int code;            /**< A kc_status value (KC_OK when nothing was recorded). */
    const char *message; /**< Never NULL; "" when nothing was recorded. */
} kc_error;

/**
 * The last error recorded on this thread by a kcache function that returned an error.
 * The record is owned by the library and lives until the next kcache call on this
 * thread that records or clears an error.  Never returns NULL.
 */
KC_API const kc_error *kc_error_last(void);

/** Forget this thread's last error. */
KC_API void kc_error_clear(void);

/** A short constant name for a status code ("KC_MISS"), never NULL. */
KC_API const char *kc_status_str(int status);

/**
 * Free memory that kcache returned to the caller as a plain buffer (encoded entries,
 * debug strings, JSON).  Accepts NULL.
 */
KC_API void kc_free(void *ptr);

/** The version of the library running, as "MAJOR.MINOR.PATCH"; the string is static.  The headers a
 *  program was compiled with say theirs in KC_VERSION_STRING (kcache/version.h). */
KC_API const char *kc_version(void);

/** The version of the library running as one number, as KC_VERSION_NUMBER computes it
 *  (MAJOR * 10000 + MINOR * 100 + PATCH): compare it with KC_VERSION_NUMBER, what the program was
 *  built against. */
KC_API unsigned kc_version_number(void);

#ifdef __cplusplus
}
#endif
#endif

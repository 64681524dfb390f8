/* SPDX-License-Identifier: Apache-2.0 */
/*
 * error.c — the per-thread last-error record (libgit2's git_error_last).
 *
 * One fixed buffer per thread, no allocation, so recording an error can never fail and
 * never needs freeing.  Messages longer than the buffer are cut, not lost.
 *
 * Callers: every part, through kc_err / kc_err_prefix (common/internal.h); callers of the
 * API read it with kc_error_last().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static _Thread_local char tl_msg[KC_ERRMSG_MAX];
static _Thread_local kc_error tl_err = {KC_OK, ""};

const kc_error *kc_error_last(void) {
    if (tl_err.message == NULL) tl_err.message = "";
    return &tl_err;
}

void kc_error_clear(void) {
    tl_msg[0] = '\0';
    tl_err.code = KC_OK;
    tl_err.message = tl_msg;
}

static int record(int code, const char *fmt, va_list ap) {
    /* Format aside first: the arguments may point into tl_msg itself (adding context to
     * the last message). */
    char tmp[KC_ERRMSG_MAX];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    memcpy(tl_msg, tmp, sizeof tmp);
    tl_err.code = code;
    tl_err.message = tl_msg;
    return code;
}

int kc_err(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    record(code, fmt, ap);
    va_end(ap);
    return code;
}

int kc_err_prefix(int code, const char *fmt, ...) {
    char old[KC_ERRMSG_MAX];
    snprintf(old, sizeof old, "%s", tl_err.code != KC_OK ? tl_msg : kc_status_str(code));
    char pre[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    /* Longer messages are cut: the return value says by how much, and we accept it. */
    int n = snprintf(tl_msg, sizeof tl_msg, "%s: %s", pre, old);
    (void)n;
    tl_err.code = code;
    tl_err.message = tl_msg;
    return code;
}

void kc_err_save(kc_err_saved *s) {
    s->code = tl_err.code;
    s->message[0] = '\0';
    if (tl_err.code != KC_OK) memcpy(s->message, tl_msg, sizeof s->message); /* nothing to keep otherwise */
}

void kc_err_restore(const kc_err_saved *s) {
    if (s->code != KC_OK) memcpy(tl_msg, s->message, sizeof tl_msg);
    else tl_msg[0] = '\0';
    tl_msg[sizeof tl_msg - 1] = '\0';
    tl_err.code = s->code;
    tl_err.message = tl_msg;
}

int kc_err_returning(int rc, const char *what) {
    if (rc == KC_OK || tl_err.code == rc) return rc;
    if (tl_err.code == KC_OK || !tl_msg[0]) { /* the reason was lost on the way out: say at least what failed */
        kc_log(KC_LOG_GRAPH, "%s: failed with %s and no reason recorded (the record was cleared on the way out)", what,
               kc_status_str(rc));
        return kc_err(rc, "%s failed (%s); its reason was not recorded", what, kc_status_str(rc));
    }
    tl_err.code = rc; /* the message recorded last is the failure's; the status is the one returned */
    return rc;
}

int kc_status_from_errno(int err) {
    switch (err) {
    case ENOMEM: return KC_ENOMEM;
    case EINVAL: return KC_EINVAL;
    case ENOENT: return KC_MISS;
    case EROFS: return KC_EREADONLY; /* KC_EPERM is kept for safety refusals, never an errno */
    default: return KC_EIO;
    }
}

int kc_err_errno(int err, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int code = kc_status_from_errno(err);
    if (code == KC_MISS) code = KC_EIO;
    return kc_err(code, "%s: %s", what, strerror(err));
}

const char *kc_status_str(int status) {
    switch (status) {
    case KC_OK: return "KC_OK";
    case KC_ERROR: return "KC_ERROR";
    case KC_ENOMEM: return "KC_ENOMEM";
    case KC_EINVAL: return "KC_EINVAL";
    case KC_EIO: return "KC_EIO";
    case KC_MISS: return "KC_MISS";
    case KC_BYPASS: return "KC_BYPASS";
    case KC_ECORRUPT: return "KC_ECORRUPT";
    case KC_ENODRIVER: return "KC_ENODRIVER";
    case KC_EARCH: return "KC_EARCH";
    case KC_ECOMPILE: return "KC_ECOMPILE";
    case KC_ENONVRTC: return "KC_ENONVRTC";
    case KC_EVERSION: return "KC_EVERSION";
    case KC_EREADONLY: return "KC_EREADONLY";
    case KC_EDRIVER: return "KC_EDRIVER";
    case KC_EUNREGISTERED: return "KC_EUNREGISTERED";
    case KC_EBUSY: return "KC_EBUSY";
    case KC_EEXPR: return "KC_EEXPR";
    case KC_EPERM: return "KC_EPERM";
    case KC_ETIMEOUT: return "KC_ETIMEOUT";
    case KC_EUNAVAILABLE: return "KC_EUNAVAILABLE";
    case KC_EREFUSED: return "KC_EREFUSED";
    case KC_ENOTCACHED: return "KC_ENOTCACHED";
    case KC_ELIMIT: return "KC_ELIMIT";
    case KC_EUNTRUSTED: return "KC_EUNTRUSTED";
    default: return "KC_UNKNOWN";
    }
}

void kc_free(void *ptr) { free(ptr); }

const char *kc_version(void) { return KC_VERSION_STRING; }

unsigned kc_version_number(void) { return KC_VERSION_NUMBER; }

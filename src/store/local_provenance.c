/* SPDX-License-Identifier: Apache-2.0 */
/*
 * local_provenance.c — where a local file's bytes came from: its mode ([Note: provenance] in
 * local.c) and its record, the extended attribute user.kcache.origin ([Note: provenance record]):
 * its one line of text made, set on a temporary file, and read back strictly.
 *
 * The one idea: the record is written atomically with the bytes (on the temporary, before its
 * fsync and rename) and trusted only as far as the mode agrees with it.
 * Callers: local.c and local_batch.c (kc_local_origin_set_), the tiers and bundles
 * (kc_provenance_format), `kcache show` (kc_provenance_read), the tiers' publish (kc_local_is_own).
 * Must not: fail a write because a file system keeps no extended attributes.
 */
#include "local_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../common/internal.h"
#include "kcache/sign.h" /* KC_SIGN_KEY_ID_LEN */

/*
 * [Note: provenance record] Beside the mode, each file records where its bytes came from and
 * what verified them, in the extended attribute user.kcache.origin, set on the temporary file
 * before its fsync and rename — atomic with the bytes, as the mode is.  One line of text:
 *     compiled t=<seconds>
 *     fetched <url> verified=<verifier> t=<seconds>
 *     imported <bundle file name> verified=<verifier> t=<seconds>
 * <url> is the remote's URL as kc_remote_state shows it (a password is "***"); the source is
 * printable ASCII without spaces (others are written '_'), at most KC_PROV_SOURCE_MAX bytes;
 * <verifier> is "ed25519:<key id>" (the signing key, as kc_entry_signer names it), "mac:<key id>"
 * (the first 8 bytes of the SHA-256 of the HMAC key, in hex — never the key) or "none" (nothing
 * was checked: no key configured).  It is parsed strictly (kc_provenance_read): anything else is
 * "unknown", never trusted.  The mode stays the authority for "compiled here" (it works where
 * extended attributes do not): a record claiming "compiled" on a 0400 file is ignored.  And the
 * record is only what this host saw when it stored the bytes: publishing and signing re-check
 * the bytes themselves ([Note: provenance] above).  A file system that refuses user extended
 * attributes (ENOTSUP) stores the bytes all the same, with the mode as the only record.
 */
#define ORIGIN_XATTR "user.kcache.origin"
#define ORIGIN_MAX 300 /* "imported " + a source + " verified=" + a verifier + " t=" + 19 digits */

static int xattr_fault; /* tests: the errno every xattr call fails with (0: none) */

void kc_local_xattr_fault_(int err) { __atomic_store_n(&xattr_fault, err, __ATOMIC_RELAXED); }

static int fault(void) {
    int e = __atomic_load_n(&xattr_fault, __ATOMIC_RELAXED);
    if (e) errno = e;
    return e;
}

const char *kc_provenance_kind_name(kc_provenance_kind k) {
    switch (k) {
    case KC_PROV_COMPILED: return "compiled";
    case KC_PROV_FETCHED: return "fetched";
    case KC_PROV_IMPORTED: return "imported";
    default: return "unknown";
    }
}

void kc_provenance_format(char *out, size_t cap, kc_provenance_kind kind, const char *source, const char *verifier) {
    char src[KC_PROV_SOURCE_MAX + 1];
    size_t n = 0;
    for (const char *p = source ? source : ""; *p && n < KC_PROV_SOURCE_MAX; p++)
        src[n++] = *p > 0x20 && *p < 0x7f ? *p : '_';
    if (!n) src[n++] = '-';
    src[n] = '\0';
    snprintf(out, cap, "%s %s verified=%s", kc_provenance_kind_name(kind), src,
             verifier && *verifier ? verifier : "none");
}

static bool verifier_ok(const char *v) {
    if (strcmp(v, "none") == 0) return true;
    if (strncmp(v, "ed25519:", 8) == 0) return kc_hex_is(v + 8, 2 * KC_SIGN_KEY_ID_LEN);
    if (strncmp(v, "mac:", 4) == 0) return kc_hex_is(v + 4, 2 * KC_SIGN_KEY_ID_LEN);
    return false;
}

/* Parse a record's text strictly: KC_OK with kind, source, verifier, created; KC_EINVAL for
 * anything but the forms of [Note: provenance record] (`t=` optional: what a writer passes). */
static int origin_parse(const char *text, kc_provenance *p) {
    char buf[ORIGIN_MAX + 1], *tok[5], *save = NULL;
    size_t n = strlen(text), nt = 0;
    if (n == 0 || n > ORIGIN_MAX || strstr(text, "  ") || text[0] == ' ' || text[n - 1] == ' ') return KC_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (text[i] < 0x20 || text[i] > 0x7e) return KC_EINVAL;
    memcpy(buf, text, n + 1);
    for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        if (nt == 5) return KC_EINVAL;
        tok[nt++] = t;
    }
    size_t at = 1;
    if (nt >= 1 && strcmp(tok[0], "compiled") == 0) {
        p->kind = KC_PROV_COMPILED;
    } else if (nt >= 3 && (strcmp(tok[0], "fetched") == 0 || strcmp(tok[0], "imported") == 0)) {
        p->kind = tok[0][0] == 'f' ? KC_PROV_FETCHED : KC_PROV_IMPORTED;
        if (strlen(tok[1]) > KC_PROV_SOURCE_MAX || strncmp(tok[2], "verified=", 9) != 0 || !verifier_ok(tok[2] + 9))
            return KC_EINVAL;
        snprintf(p->source, sizeof p->source, "%s", tok[1]);
        snprintf(p->verifier, sizeof p->verifier, "%s", tok[2] + 9);
        at = 3;
    } else {
        return KC_EINVAL;
    }
    if (at < nt) {
        const char *t = tok[at++];
        if (strncmp(t, "t=", 2) != 0 || !t[2] || strlen(t + 2) > 18 || strspn(t + 2, "0123456789") != strlen(t + 2))
            return KC_EINVAL;
        p->created = strtoll(t + 2, NULL, 10);
    }
    return at == nt ? KC_OK : KC_EINVAL;
}

/* Set the record on the temporary file: false (logged) when it could not be; the write goes on. */
void kc_local_origin_set_(int fd, const char *tmp, const char *origin) {
    kc_provenance p;
    memset(&p, 0, sizeof p);
    char text[ORIGIN_MAX + 32];
    if (origin_parse(origin, &p) != KC_OK ||
        snprintf(text, sizeof text, "%s t=%lld", origin, (long long)(kc_now_ns() / 1000000000ull)) > ORIGIN_MAX) {
        kc_log(KC_LOG_STORE, "%s: provenance record '%s' is malformed: not recorded", tmp, origin);
        return;
    }
    if (fault() || fsetxattr(fd, ORIGIN_XATTR, text, strlen(text), 0) != 0) {
        int e = errno;
        if (e != ENOTSUP && e != EOPNOTSUPP)
            kc_log(KC_LOG_STORE, "%s: provenance record not kept: %s", tmp, strerror(e));
    }
}

int kc_provenance_read(const char *path, kc_provenance *out) {
    memset(out, 0, sizeof *out);
    /* One descriptor for the mode and the record: a rename between two path lookups cannot pair
     * one file's mode with another's record.  O_NONBLOCK: a FIFO planted there does not wait. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT  ? kc_err(KC_MISS, "no '%s'", path)
               : errno == ELOOP ? kc_err(KC_EINVAL, "'%s' is not a regular file", path)
                                : kc_err_errno(errno, "opening '%s'", path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return kc_err_errno(e, "stat '%s'", path);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return kc_err(KC_EINVAL, "'%s' is not a regular file", path);
    }
    bool own = (st.st_mode & S_IWUSR) != 0; /* the mode decides ([Note: provenance]) */
    out->kind = own ? KC_PROV_COMPILED : KC_PROV_UNKNOWN;
    char text[ORIGIN_MAX + 1];
    ssize_t n = fault() ? -1 : fgetxattr(fd, ORIGIN_XATTR, text, ORIGIN_MAX);
    int e = errno;
    close(fd);
    if (n < 0) {
        if (e == ENOTSUP || e == EOPNOTSUPP) out->unavailable = 1;
        else if (e != ENODATA && e != ERANGE) return kc_err_errno(e, "reading the provenance of '%s'", path);
        return KC_OK;
    }
    text[n] = '\0';
    kc_provenance p;
    memset(&p, 0, sizeof p);
    if (strlen(text) != (size_t)n || origin_parse(text, &p) != KC_OK) return KC_OK; /* malformed: unknown */
    if ((p.kind == KC_PROV_COMPILED) != own) return KC_OK; /* a record the mode denies is ignored */
    *out = p;
    out->recorded = 1;
    return KC_OK;
}

int kc_local_is_own(kc_local *l, const char *name) {
    int rc = kc_store_name_check(name);
    if (rc) return rc;
    char path[PATH_MAX];
    kc_local_path(l, name, path, sizeof path);
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? kc_err(KC_MISS, "no %s", name) : kc_local_err_errno_(errno, 0, "stat %s", name);
    return S_ISREG(st.st_mode) && (st.st_mode & S_IWUSR) ? 1 : 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_crash.c — crash consistency: a child process putting entries, importing bundles and
 * running gc is SIGKILLed 200 times, each at a fault point: its nth file-system call after its
 * first commit (kc_fs_crash_at: every open, read, write, sync, rename and unlink), n drawn from a
 * fixed seed — never after a timer, so a loaded machine kills at the same steps.
 *
 * The child announces each put and import on a pipe before it starts it and again once it
 * has returned, so after each kill the parent knows, per key, the last committed version
 * and the one in flight.  Then: verify finds nothing corrupt; every key ever committed is
 * present (nothing committed is lost); each holds its last committed bytes or the bytes of
 * the operation in flight at the kill — the old state or the new, never a mix or a torn
 * entry; a bundle key holds one bundle's bytes or the other's.  The child's gc evicts for
 * real: before each round the parent plants old filler entries that it must evict down to
 * a limit every kept entry fits under.  At the end, the temporary files the kills left are
 * collected by a gc once they are stale.
 */
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <xxhash.h>

#include "kcache.h"
#include "helpers.h"

#include "common/fs.h"

#define KILLS 200
#define KEYS 40       /* keys the child puts */
#define MAX_PUT 20000 /* bytes of a put's payload, at most */
#define BKEYS 8       /* keys in each bundle */
#define BPAYLOAD 6000
#define FILLERS 4 /* old entries the child's gc must evict */
#define FILLER_BYTES 200000
#define LIMIT (1u << 20) /* gc target: above every kept entry together (KEYS × MAX_PUT + bundle) */

/* One record on the pipe: what the child is about to do, or has done. */
typedef struct rec {
    char type; /* 'P' put begins, 'p' put committed, 'I' import begins, 'i' import committed, 'g' gc done */
    uint8_t k; /* the key index (put), or the bundle (import: 0 or 1) */
    uint8_t pad[6];
    uint64_t digest;
} rec;

static kc_key put_key(int i) { return kct_key("crash", i); }
static kc_key bundle_key(int i) { return kct_key("bundled", i); }
static kc_key filler_key(int i) { return kct_key("filler", i); }

/* payload := digest:u64 (XXH3-64 of the rest) bytes; returns the digest. */
static uint64_t make_payload(uint8_t *buf, size_t n, unsigned *seed) {
    for (size_t i = 8; i < n; i++) buf[i] = (uint8_t)rand_r(seed);
    uint64_t d = XXH3_64bits(buf + 8, n - 8);
    memcpy(buf, &d, 8);
    return d;
}

static int put_payload(kc_cache *c, const kc_key *key, const uint8_t *buf, size_t n) {
    kc_entry *e;
    int rc = kc_entry_new(&e, key, "sm_90");
    if (rc == KC_OK) rc = kc_entry_set_section(e, KC_SECTION_KERNELS, buf, n);
    if (rc == KC_OK) rc = kc_cache_put(c, e);
    kc_entry_free(e);
    return rc;
}

/* The digest of a stored entry whose payload is whole; 0 if absent, 1 if damaged. */
static uint64_t stored_digest(kc_cache *c, const kc_key *key) {
    kc_entry *e;
    int rc = kc_cache_peek(c, key, "sm_90", &e);
    if (rc == KC_MISS) return 0;
    if (rc != KC_OK) return 1;
    const void *p;
    size_t n;
    uint64_t d = 1;
    if (kc_entry_section(e, KC_SECTION_KERNELS, &p, &n) == KC_OK && n >= 16) {
        memcpy(&d, p, 8);
        if (d != XXH3_64bits((const uint8_t *)p + 8, n - 8) || d <= 1) d = 1;
    }
    kc_entry_free(e);
    return d;
}

static kc_cache *open_dir(const char *dir) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c = NULL;
    if (kc_cache_open(&c, &o) != KC_OK) _exit(100);
    return c;
}

static long crash_nth; /* the child's: armed at its first commit */

static void say(int fd, char type, int k, uint64_t digest) {
    rec r = {type, (uint8_t)k, {0}, digest};
    if (write(fd, &r, sizeof r) != (ssize_t)sizeof r) _exit(101);
    if (crash_nth && type != 'P' && type != 'I') kc_fs_crash_at(crash_nth), crash_nth = 0; /* after its first commit */
}

/* The child: puts (80%), imports of bundle A or B (10%), gc (10%), until it is killed — at its nth file-system call
 * after its first commit (armed then: every child does something before it dies). */
static void child(const char *dir, int fd, unsigned seed, char bundles[2][4096], long nth) {
    kc_cache *c = open_dir(dir);
    static uint8_t buf[MAX_PUT];
    crash_nth = nth;
    for (;;) {
        int what = (int)(rand_r(&seed) % 10);
        if (what < 8) {
            int k = (int)(rand_r(&seed) % KEYS);
            size_t n = 16 + (size_t)(rand_r(&seed) % (MAX_PUT - 16));
            uint64_t d = make_payload(buf, n, &seed);
            kc_key key = put_key(k);
            say(fd, 'P', k, d);
            if (put_payload(c, &key, buf, n) == KC_OK) say(fd, 'p', k, d);
        } else if (what == 8) {
            int b = (int)(rand_r(&seed) % 2);
            say(fd, 'I', b, 0);
            if (kc_bundle_import(c, bundles[b], 0, NULL) == KC_OK) say(fd, 'i', b, 0);
        } else {
            kc_gc_report r = KC_GC_REPORT_INIT;
            if (kc_cache_gc(c, LIMIT, &r) == KC_OK) say(fd, 'g', (int)(r.evicted > 255 ? 255 : r.evicted), 0);
        }
    }
}

/* Two bundles with the same keys and different bytes; their digests per key. */
static void make_bundles(char out[2][4096], uint64_t digests[2][BKEYS]) {
    for (int b = 0; b < 2; b++) {
        char *d;
        kc_cache *c;
        assert_int_equal(kct_open_cache("crash-bundle", &d, &c), KC_OK);
        unsigned seed = 777u + (unsigned)b;
        static uint8_t buf[BPAYLOAD];
        for (int i = 0; i < BKEYS; i++) {
            digests[b][i] = make_payload(buf, sizeof buf, &seed);
            kc_key key = bundle_key(i);
            assert_int_equal(put_payload(c, &key, buf, sizeof buf), KC_OK);
        }
        snprintf(out[b], 4096, "/tmp/kctest-crash-bundle-%d-%d.kcb", (int)getpid(), b);
        assert_int_equal(kc_bundle_export(c, out[b], NULL, NULL), KC_OK);
        kct_close_cache(d, c);
    }
}

static void entry_path(const char *dir, const kc_key *k, char *out, size_t cap) {
    char hex[KC_KEY_HEX_LEN + 1];
    kc_key_to_hex(k, hex);
    snprintf(out, cap, "%s/v1/%.2s/%s.sm_90.kce", dir, hex, hex);
}

/* Old entries, least recently used of all, that the child's gc has to evict. */
static void plant_fillers(kc_cache *c, const char *dir) {
    static uint8_t buf[FILLER_BYTES];
    unsigned seed = 99;
    time_t old = time(NULL) - 86400;
    for (int i = 0; i < FILLERS; i++) {
        kc_key key = filler_key(i);
        if (stored_digest(c, &key) > 1) continue;
        make_payload(buf, sizeof buf, &seed);
        assert_int_equal(put_payload(c, &key, buf, sizeof buf), KC_OK);
        char p[4096];
        entry_path(dir, &key, p, sizeof p);
        struct timespec ts[2] = {{old, 0}, {old, 0}};
        assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
    }
}

/* Backdate every temporary file under dir by two hours (so a gc counts them stale). */
static int backdate_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    if (flag == FTW_F && strstr(p + ftw->base, ".tmp.")) {
        time_t old = time(NULL) - 7200;
        struct timespec ts[2] = {{old, 0}, {old, 0}};
        utimensat(AT_FDCWD, p, ts, 0);
    }
    return 0;
}

/* What the parent knows from the records. */
static uint64_t committed[KEYS], inflight[KEYS]; /* per put key: last committed digest, one in flight */
static uint64_t bcommitted[BKEYS];               /* per bundle key: the digest it holds once committed */
static uint64_t bdig[2][BKEYS];                  /* each bundle's digest per key */
static int binflight = -1;                       /* the bundle being imported at the kill */
static long nputs, nimports, ngcs, evicted;

/* Take one record into account; 1 if it says something was done. */
static int take(const rec *r) {
    switch (r->type) {
    case 'P': inflight[r->k] = r->digest; return 0;
    case 'p': committed[r->k] = r->digest, inflight[r->k] = 0, nputs++; return 1;
    case 'I': binflight = r->k; return 0;
    case 'i':
        for (int i = 0; i < BKEYS; i++) bcommitted[i] = bdig[r->k][i];
        binflight = -1, nimports++;
        return 1;
    case 'g': ngcs++, evicted += r->k; return 1;
    default: fail_msg("unknown record '%c'", r->type);
    }
    return 0;
}

static void test_kill_at_random_points(void **state) {
    (void)state;
    char *dir = kct_tmpdir("crash");
    char bundles[2][4096];
    make_bundles(bundles, bdig);
    unsigned seed = 12345;
    long checks = 0;
    for (int round = 0; round < KILLS; round++) {
        kc_cache *c = open_dir(dir);
        plant_fillers(c, dir);
        kc_cache_close(c);
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        long nth = 1 + (long)(rand_r(&seed) % 400); /* drawn here: the child's draws do not reach this process */
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            child(dir, fds[1], seed + (unsigned)round, bundles, nth);
        }
        close(fds[1]);
        /* The child kills itself at its nth file-system call after its first commit: read what it said until then. */
        rec r;
        while (read(fds[0], &r, sizeof r) == (ssize_t)sizeof r) take(&r);
        int st;
        waitpid(pid, &st, 0);
        assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        close(fds[0]);

        c = open_dir(dir);
        kc_verify_report vr = KC_VERIFY_REPORT_INIT;
        assert_int_equal(kc_cache_verify(c, &vr), KC_OK);
        if (vr.corrupt) fail_msg("after kill %d: %llu corrupt entries", round, (unsigned long long)vr.corrupt);
        for (int k = 0; k < KEYS; k++) {
            kc_key key = put_key(k);
            uint64_t d = stored_digest(c, &key);
            if (d == 1) fail_msg("after kill %d: key %d is damaged", round, k);
            if (d == 0 && committed[k]) fail_msg("after kill %d: committed key %d is lost", round, k);
            if (d && d != committed[k] && d != inflight[k])
                fail_msg("after kill %d: key %d holds neither its committed bytes nor those in flight", round, k);
            if (d) committed[k] = d, checks++; /* what is on disk now is the committed state */
            inflight[k] = 0;
        }
        for (int i = 0; i < BKEYS; i++) {
            kc_key key = bundle_key(i);
            uint64_t d = stored_digest(c, &key);
            if (d == 1) fail_msg("after kill %d: bundle key %d is damaged", round, i);
            if (d == 0 && bcommitted[i]) fail_msg("after kill %d: imported key %d is lost", round, i);
            if (d && d != bcommitted[i] && !(binflight >= 0 && d == bdig[binflight][i]))
                fail_msg("after kill %d: bundle key %d holds bytes of no import", round, i);
            if (d) bcommitted[i] = d, checks++;
        }
        binflight = -1;
        kc_cache_close(c);
    }
    /* The kills left temporary files; once stale, a gc collects every one. */
    size_t temps = kct_count_files(dir, ".tmp.");
    nftw(dir, backdate_cb, 16, FTW_PHYS);
    kc_cache *c = open_dir(dir);
    kc_gc_report gr = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(c, LIMIT, &gr), KC_OK);
    kc_cache_close(c);
    assert_int_equal(kct_count_files(dir, ".tmp."), 0);
    fprintf(stderr,
            "%d kills during %ld committed puts, %ld committed imports and %ld gcs (%ld fillers evicted); "
            "%ld checks of committed entries after the kills, 0 lost, 0 torn, 0 corrupt; "
            "%zu temporary files left by kills, all collected\n",
            KILLS, nputs, nimports, ngcs, evicted, checks, temps);
    assert_true(nputs + nimports + ngcs >= KILLS); /* every child did something before it died */
    assert_true(nimports > 0 && ngcs > 0 && evicted > 0);
    kct_rmtree(dir);
    free(dir);
    unlink(bundles[0]);
    unlink(bundles[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kill_at_random_points)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

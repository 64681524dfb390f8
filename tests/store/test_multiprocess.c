/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_multiprocess.c — many processes, one directory: 8 processes × 200 rounds, and 16
 * processes × 50 rounds started together on a barrier, putting and getting the same 20
 * keys with random payloads, while another process runs gc with a small limit over and
 * over.  Every get must be a miss or a payload that matches the digest embedded in it —
 * never a torn or mixed entry; no error but a miss.  While running, the store (as each gc
 * scans it) never overshoots the limit by more than one entry per writer; once idle (after
 * the cleaner's last run) it is at or under the limit with no gc of the test's own.
 */
#include <sys/mman.h>

#include <signal.h>
#include <sys/wait.h>
#include <xxhash.h>

#include "kcache.h"
#include "helpers.h"

#define MAXPROCS 16
#define KEYS 20
#define MAX_ENTRY 8192 /* a payload is at most 6016 bytes; with the entry's framing, under this */

static int ROUNDS = 200;
static uint64_t *max_seen; /* shared with the cleaner: the largest store a gc scanned */
#define LIMIT (64 * 1024)

static kc_key key_of(int i) { return kct_key("shared key", i); }

static kc_cache *open_dir(const char *dir) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.max_size = LIMIT;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c = NULL;
    if (kc_cache_open(&c, &o) != KC_OK) {
        fprintf(stderr, "open: %s\n", kc_error_last()->message);
        _exit(100);
    }
    return c;
}

/* payload := digest:u64 (XXH3-64 of the rest) writer:u32 round:u32 random bytes */
static int worker(const char *dir, int id, int start_fd) {
    char go;
    if (read(start_fd, &go, 1) < 0) return 101; /* barrier: the parent closes the pipe */
    kc_cache *c = open_dir(dir);
    srand((unsigned)(id * 7919 + 1));
    int hits = 0, misses = 0, bad = 0;
    uint8_t buf[8192];
    for (int r = 0; r < ROUNDS; r++) {
        int k = rand() % KEYS;
        kc_key key = key_of(k);
        if (rand() % 2) {
            size_t n = 16 + (size_t)(rand() % 6000);
            memcpy(buf + 8, &id, 4);
            memcpy(buf + 12, &r, 4);
            for (size_t i = 16; i < n; i++) buf[i] = (uint8_t)rand();
            uint64_t d = XXH3_64bits(buf + 8, n - 8);
            memcpy(buf, &d, 8);
            kc_entry *e;
            if (kc_entry_new(&e, &key, "sm_90") != KC_OK ||
                kc_entry_set_section(e, KC_SECTION_KERNELS, buf, n) != KC_OK) {
                bad++;
                kc_entry_free(e);
                continue;
            }
            int rc = kc_cache_put(c, e);
            if (rc != KC_OK) {
                fprintf(stderr, "worker %d: put failed: %s\n", id, kc_error_last()->message);
                bad++;
            }
            kc_entry_free(e);
        } else {
            kc_entry *e;
            int rc = kc_cache_get(c, &key, "sm_90", &e);
            if (rc == KC_MISS) {
                misses++;
                continue;
            }
            const void *p;
            size_t n;
            if (rc != KC_OK || kc_entry_section(e, KC_SECTION_KERNELS, &p, &n) != KC_OK || n < 16) {
                fprintf(stderr, "worker %d: get returned %s\n", id, kc_status_str(rc));
                bad++;
            } else {
                uint64_t d;
                memcpy(&d, p, 8);
                if (d != XXH3_64bits((const uint8_t *)p + 8, n - 8)) {
                    fprintf(stderr, "worker %d: payload does not match its digest\n", id);
                    bad++;
                }
                if (memcmp(kc_entry_key(e)->bytes, key.bytes, 16) != 0) bad++;
                hits++;
            }
            kc_entry_free(e);
        }
    }
    kc_stats s;
    kc_cache_stats(c, &s);
    kc_cache_close(c);
    fprintf(stderr, "worker %d: %d hits, %d misses, %d bad\n", id, hits, misses, bad);
    return bad ? 1 : 0;
}

static int cleaner(const char *dir, int start_fd, int stop_fd) {
    char go;
    if (read(start_fd, &go, 1) < 0) return 101;
    kc_cache *c = open_dir(dir);
    int runs = 0, busy = 0, errors = 0;
    for (;;) {
        kc_gc_report r = KC_GC_REPORT_INIT;
        int rc = kc_cache_gc(c, LIMIT / 4, &r);
        if (rc == KC_OK && r.bytes_before > *max_seen) *max_seen = r.bytes_before;
        if (rc == KC_OK) runs++;
        else if (rc == KC_EBUSY) busy++;
        else {
            fprintf(stderr, "cleaner: %s: %s\n", kc_status_str(rc), kc_error_last()->message);
            errors++;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        char x;
        if (read(stop_fd, &x, 1) == 0) break; /* stop pipe closed: the workers are done */
    }
    /* One last run once idle (a run may have started while the workers still wrote). */
    kc_gc_report last = KC_GC_REPORT_INIT;
    int lrc;
    while ((lrc = kc_cache_gc(c, LIMIT / 4, &last)) == KC_EBUSY) usleep(1000);
    if (lrc != KC_OK) errors++;
    else runs++;
    kc_cache_close(c);
    fprintf(stderr, "cleaner: %d runs, %d busy, %d errors\n", runs, busy, errors);
    return errors ? 1 : 0;
}

static void run_processes(int PROCS, int rounds) {
    ROUNDS = rounds;
    *max_seen = 0;
    char *dir = kct_tmpdir("multiproc");
    assert_non_null(dir);
    int start[2], stop[2];
    assert_int_equal(pipe(start), 0);
    assert_int_equal(pipe(stop), 0);
    fcntl(stop[0], F_SETFL, O_NONBLOCK);
    pid_t pids[MAXPROCS + 1];
    for (int i = 0; i <= PROCS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            close(start[1]);
            close(stop[1]);
            _exit(i < PROCS ? worker(dir, i, start[0]) : cleaner(dir, start[0], stop[0]));
        }
    }
    close(start[0]);
    close(start[1]); /* go */
    int failed = 0;
    for (int i = 0; i < PROCS; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
    }
    close(stop[1]);
    int st;
    waitpid(pids[PROCS], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed++;
    close(stop[0]);
    assert_int_equal(failed, 0);

    /* Idle: the cleaner's last run came after every worker had finished; no gc of ours. */
    assert_true(kct_dir_bytes(dir, ".kce") <= LIMIT);
    fprintf(stderr, "%d processes x %d rounds: largest store a gc saw %llu bytes (limit %d)\n", PROCS, rounds,
            (unsigned long long)*max_seen, LIMIT);
    assert_true(*max_seen <= (uint64_t)LIMIT + (uint64_t)PROCS * MAX_ENTRY);
    /* Afterwards: everything verifies; a gc brings the store under its limit. */
    kc_cache *c = open_dir(dir);
    kc_verify_report r = KC_VERIFY_REPORT_INIT;
    assert_int_equal(kc_cache_verify(c, &r), KC_OK);
    assert_int_equal(r.corrupt, 0);
    kc_gc_report g = KC_GC_REPORT_INIT;
    assert_int_equal(kc_cache_gc(c, 0, &g), KC_OK);
    assert_true(g.bytes_after <= LIMIT);
    assert_int_equal(kct_count_files(dir, ".tmp."), 0);
    kc_stats s;
    kc_cache_stats(c, &s);
    assert_int_equal(s.v[KC_STAT_CORRUPT], 0);
    assert_true(s.v[KC_STAT_PUTS] > (uint64_t)(PROCS * ROUNDS / 4));
    assert_true(s.v[KC_STAT_HITS] > 0);
    assert_int_equal(s.v[KC_STAT_BYTES], g.bytes_after);
    kc_cache_close(c);
    kct_rmtree(dir);
    free(dir);
}

static void test_many_processes_share_one_directory(void **state) {
    (void)state;
    run_processes(8, 200);
}

static void test_sixteen_processes_on_a_barrier(void **state) {
    (void)state;
    run_processes(16, 50);
}

int main(void) {
    max_seen = mmap(NULL, sizeof *max_seen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (max_seen == MAP_FAILED) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_processes_share_one_directory),
        cmocka_unit_test(test_sixteen_processes_on_a_barrier),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_crash.c — crash consistency: a child process putting entries (and running gc) is
 * SIGKILLed at 200 random moments.  After each kill: verify finds nothing corrupt, and every
 * entry the child reported as committed (its put had returned) is readable and matches the
 * digest embedded in it.
 */
#include <signal.h>
#include <sys/wait.h>
#include <xxhash.h>

#include "kcache.h"
#include "helpers.h"

#define KILLS 200
#define KEYS 40

static kc_key key_of(int i) { return kct_key("crash", i); }

static kc_cache *open_dir(const char *dir) {
    kc_options o = KC_OPTIONS_INIT;
    o.dir = dir;
    o.flags = KC_OPEN_NO_ENV;
    kc_cache *c = NULL;
    if (kc_cache_open(&c, &o) != KC_OK) _exit(100);
    return c;
}

/* The child: put forever, reporting each committed key index on the pipe. */
static void child(const char *dir, int fd, unsigned seed) {
    kc_cache *c = open_dir(dir);
    uint8_t buf[20000];
    for (unsigned r = 0;; r++) {
        int k = (int)(rand_r(&seed) % KEYS);
        size_t n = 16 + (size_t)(rand_r(&seed) % (sizeof buf - 16));
        for (size_t i = 8; i < n; i++) buf[i] = (uint8_t)rand_r(&seed);
        uint64_t d = XXH3_64bits(buf + 8, n - 8);
        memcpy(buf, &d, 8);
        kc_key key = key_of(k);
        kc_entry *e;
        kc_entry_new(&e, &key, "sm_90");
        kc_entry_set_section(e, KC_SECTION_KERNELS, buf, n);
        if (kc_cache_put(c, e) == KC_OK) {
            unsigned char b = (unsigned char)k;
            if (write(fd, &b, 1) != 1) _exit(101);
        }
        kc_entry_free(e);
        if (r % 50 == 49) kc_cache_gc(c, 0, NULL);
    }
}

static int intact(kc_cache *c, int k) {
    kc_key key = key_of(k);
    kc_entry *e;
    if (kc_cache_get(c, &key, "sm_90", &e) != KC_OK) return 0;
    const void *p;
    size_t n;
    uint64_t d;
    int ok = kc_entry_section(e, KC_SECTION_KERNELS, &p, &n) == KC_OK && n >= 16 &&
             (memcpy(&d, p, 8), d == XXH3_64bits((const uint8_t *)p + 8, n - 8));
    kc_entry_free(e);
    return ok;
}

static void test_kill_at_random_points(void **state) {
    (void)state;
    char *dir = kct_tmpdir("crash");
    unsigned seed = 12345;
    int committed_total = 0, verified_total = 0;
    static int committed[KEYS];
    for (int round = 0; round < KILLS; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            child(dir, fds[1], seed + (unsigned)round);
        }
        close(fds[1]);
        /* Wait for the child's first commit (a slow start under sanitizers must not make the
         * kill land before any work), then kill it at a random moment of what follows. */
        unsigned char first;
        if (read(fds[0], &first, 1) == 1) committed[first] = 1, committed_total++;
        struct timespec ts = {0, (long)(rand_r(&seed) % 15) * 1000000L + 100000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        assert_true(WIFSIGNALED(st));
        unsigned char b;
        while (read(fds[0], &b, 1) == 1) committed[b] = 1, committed_total++;
        close(fds[0]);
        kc_cache *c = open_dir(dir);
        kc_verify_report r;
        assert_int_equal(kc_cache_verify(c, &r), KC_OK);
        if (r.corrupt) fail_msg("after kill %d: %llu corrupt entries", round, (unsigned long long)r.corrupt);
        for (int k = 0; k < KEYS; k++)
            if (committed[k]) {
                if (!intact(c, k)) fail_msg("after kill %d: committed entry %d is lost or wrong", round, k);
                verified_total++;
            }
        kc_cache_close(c);
    }
    fprintf(stderr, "%d kills, %d puts committed before them, %d checks of committed entries, 0 corrupt\n", KILLS,
            committed_total, verified_total);
    assert_true(committed_total >= KILLS); /* every child committed before it died */
    kct_rmtree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kill_at_random_points)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

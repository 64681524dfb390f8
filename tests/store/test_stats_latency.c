/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_stats_latency.c — the lookup latency histograms (kcache/stats.h) kept in the shard stats
 * files' latency section ([Note: stats file sections] in src/store/local_stats.c): what another
 * process observed is read here, bucket by bucket and its sum to the nanosecond, with its outcome
 * counters; `--zero` resets them; a file of the counters alone (every earlier version's) reads
 * with an empty histogram, and an older writer's rewrite of the counters leaves the section; a
 * hostile file (cut anywhere, bytes flipped, other dimensions, values at the edges) never crashes
 * and reads as zeros or saturated sums.  Then kc_cache_metrics' buffer contract: *needed, a short
 * buffer cut and NUL-terminated with an error, a whole one KC_OK; a count through kc_cache_count
 * under an outcome's id is an observation of 0 s, so the two still agree.
 */
#include "helpers.h"

#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/internal.h"
#include "kcache.h"
#include "store/local.h"

static char *dir;

static int setup(void **state) {
    (void)state;
    dir = kct_tmpdir("statslat");
    return dir ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    kct_rmtree(dir);
    free(dir);
    return 0;
}

enum { HEAD = 8 + 4 + 4 + 8 * 32 + 8, PER = KC_LATENCY_BUCKETS + 2, TAIL = 8 + 4 + 4 + 8 * 5 * PER + 8 };

/* What a child process observes: 3 disk hits of 50 µs, 2 compiles of 2 s, 1 memory hit of 5 µs, a
 * bypass of 20 s (past the last bound). */
static void observe_some(kc_local *l) {
    for (int i = 0; i < 3; i++) kc_local_observe(l, 7, KC_LOOKUP_DISK, 50000, 1);
    for (int i = 0; i < 2; i++) kc_local_observe(l, 9, KC_LOOKUP_COMPILE, 2000000000ull, 1);
    kc_local_observe(l, 7, KC_LOOKUP_MEMORY, 5000, 1);
    kc_local_observe(l, 200, KC_LOOKUP_BYPASS, 20000000000ull, 1);
}

static void test_another_process_sees_the_histogram(void **state) {
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        kc_local *l;
        if (kc_local_open(&l, dir, 0, 0) != KC_OK) _exit(1);
        observe_some(l);
        kc_local_free(l); /* flushes */
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    kc_local *l;
    assert_int_equal(kc_local_open(&l, dir, 0, 0), KC_OK);
    kc_latency lat = KC_LATENCY_INIT;
    kc_local_latency(l, &lat);
    kc_stats s;
    assert_int_equal(kc_local_stats(l, &s), KC_OK);
    assert_int_equal(lat.count[KC_LOOKUP_DISK], 3);
    assert_int_equal(lat.buckets[KC_LOOKUP_DISK][2], 3); /* (25 µs, 100 µs] */
    assert_int_equal(lat.sum_ns[KC_LOOKUP_DISK], 150000);
    assert_int_equal(lat.buckets[KC_LOOKUP_COMPILE][11], 2); /* (1 s, 2.5 s] */
    assert_int_equal(lat.sum_ns[KC_LOOKUP_COMPILE], 4000000000ull);
    assert_int_equal(lat.buckets[KC_LOOKUP_MEMORY][0], 1);                  /* <= 10 µs */
    assert_int_equal(lat.buckets[KC_LOOKUP_BYPASS][KC_LATENCY_BUCKETS], 1); /* +Inf */
    assert_int_equal(lat.count[KC_LOOKUP_REMOTE], 0);
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++)
        assert_int_equal(lat.count[o], s.v[kc_lookup_outcome_stat((kc_lookup_outcome)o)]);
    /* And this process's, not yet written, shows with them. */
    kc_local_observe(l, 1, KC_LOOKUP_REMOTE, 300000, 1);
    kc_local_latency(l, &lat);
    assert_int_equal(lat.buckets[KC_LOOKUP_REMOTE][4], 1); /* (250 µs, 1 ms] */
    kc_local_free(l);
}

static void test_zero_resets_the_histogram(void **state) {
    (void)state;
    kc_local *l;
    assert_int_equal(kc_local_open(&l, dir, 0, 0), KC_OK);
    observe_some(l);
    kc_local_flush(l);
    assert_int_equal(kc_local_stats_zero(l), KC_OK);
    kc_latency lat = KC_LATENCY_INIT;
    kc_local_latency(l, &lat);
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++) {
        assert_int_equal(lat.count[o], 0);
        assert_int_equal(lat.sum_ns[o], 0);
    }
    kc_local_free(l);
}

static void stats_file(char *p, size_t cap, const char *shard) {
    snprintf(p, cap, "%s/v1/%s", dir, shard);
    mkdir(p, 0700);
    snprintf(p, cap, "%s/v1/%s/stats", dir, shard);
}

/* The counters section alone, as every version before the histogram wrote it. */
static void head_bytes(uint8_t b[HEAD], uint64_t hits) {
    memset(b, 0, HEAD);
    memcpy(b, "KCSTATS1", 8);
    kc_wr_u32(b + 8, 32);
    kc_wr_u64(b + 16 + 8 * KC_STAT_HITS, hits);
    kc_wr_u64(b + HEAD - 8, XXH3_64bits(b, HEAD - 8));
}

static void test_old_file_reads_and_an_old_writer_keeps_the_section(void **state) {
    (void)state;
    kc_local *l;
    assert_int_equal(kc_local_open(&l, dir, 0, 0), KC_OK);
    char p[600];
    stats_file(p, sizeof p, "00");
    uint8_t b[HEAD];
    head_bytes(b, 41);
    assert_int_equal(kct_write(p, b, sizeof b), 0);
    kc_latency lat = KC_LATENCY_INIT;
    kc_local_latency(l, &lat);
    assert_int_equal(lat.count[KC_LOOKUP_DISK], 0);
    kc_stats s;
    assert_int_equal(kc_local_stats(l, &s), KC_OK);
    assert_int_equal(s.v[KC_STAT_HITS], 41);
    /* This version adds its observation: the file grows its section, the old counters kept. */
    kc_local_observe(l, 0, KC_LOOKUP_DISK, 1000, 1);
    kc_local_flush(l);
    size_t len;
    uint8_t *got = kct_read(p, &len);
    assert_non_null(got);
    assert_int_equal(len, HEAD + TAIL);
    free(got);
    /* An older version rewrites the counters in place (its write: the first HEAD bytes at 0, no truncation). */
    head_bytes(b, 99);
    int fd = open(p, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, b, sizeof b, 0), (ssize_t)sizeof b);
    close(fd);
    kc_local_latency(l, &lat);
    assert_int_equal(lat.count[KC_LOOKUP_DISK], 1);
    assert_int_equal(kc_local_stats(l, &s), KC_OK);
    assert_int_equal(s.v[KC_STAT_HITS], 99);
    kc_local_free(l);
}

/* A file with a valid counters section and the latency section `t` (its checksum recomputed when `sum`). */
static void write_with_tail(const char *shard, uint8_t *t, size_t tlen, int sum) {
    uint8_t b[HEAD + TAIL];
    head_bytes(b, 1);
    if (sum && tlen == TAIL) kc_wr_u64(t + TAIL - 8, XXH3_64bits(t, TAIL - 8));
    memcpy(b + HEAD, t, tlen);
    char p[600];
    stats_file(p, sizeof p, shard);
    assert_int_equal(kct_write(p, b, HEAD + tlen), 0);
}

static void valid_tail(uint8_t t[TAIL], uint64_t fill) {
    memset(t, 0, TAIL);
    memcpy(t, "KCSTATL1", 8);
    kc_wr_u32(t + 8, 5);
    kc_wr_u32(t + 12, PER);
    for (int i = 0; i < 5 * PER; i++) kc_wr_u64(t + 16 + 8 * i, fill);
    kc_wr_u64(t + TAIL - 8, XXH3_64bits(t, TAIL - 8));
}

static void read_all_ways(kc_local *l) {
    kc_latency lat = KC_LATENCY_INIT;
    kc_stats s;
    kc_local_latency(l, &lat);
    assert_int_equal(kc_local_stats(l, &s), KC_OK);
    for (int o = 0; o < KC_LOOKUP_OUTCOMES; o++) {
        uint64_t b = 0; /* the count is the buckets' saturating sum: it never wraps below a bucket */
        for (int i = 0; i <= KC_LATENCY_BUCKETS; i++) {
            uint64_t x = lat.buckets[o][i];
            b = b > UINT64_MAX - x ? UINT64_MAX : b + x;
            assert_true(lat.count[o] >= x);
        }
        assert_true(b == lat.count[o]);
    }
}

static void test_hostile_files_never_crash(void **state) {
    (void)state;
    kc_local *l;
    assert_int_equal(kc_local_open(&l, dir, 0, 0), KC_OK);
    uint8_t t[TAIL];
    /* Cut at every length: the section is all or nothing. */
    for (size_t n = 0; n <= TAIL; n += 7) {
        valid_tail(t, 3);
        write_with_tail("10", t, n, 0);
        kc_latency lat = KC_LATENCY_INIT;
        kc_local_latency(l, &lat);
        assert_int_equal(lat.count[KC_LOOKUP_DISK], n == TAIL ? 3 * (KC_LATENCY_BUCKETS + 1) : 0);
    }
    /* Other dimensions, with a valid checksum: zeros. */
    valid_tail(t, 3);
    kc_wr_u32(t + 12, PER + 1);
    write_with_tail("10", t, TAIL, 1);
    kc_latency lat = KC_LATENCY_INIT;
    kc_local_latency(l, &lat);
    assert_int_equal(lat.count[KC_LOOKUP_DISK], 0);
    /* Every byte flipped in turn (checksum not fixed): zeros, never a crash. */
    for (size_t i = 0; i < TAIL; i += 13) {
        valid_tail(t, 3);
        t[i] ^= 0x5a;
        write_with_tail("10", t, TAIL, 0);
        read_all_ways(l);
    }
    /* The edges of the values, checksum fixed, in two shards: negative reads as 0, the rest saturate. */
    const uint64_t edges[] = {UINT64_MAX, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX - 1, 1ull << 63};
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
        valid_tail(t, edges[e]);
        write_with_tail("10", t, TAIL, 1);
        write_with_tail("11", t, TAIL, 1);
        read_all_ways(l);
        kc_local_observe(l, 0x10, KC_LOOKUP_DISK, 1, 1);
        kc_local_flush(l); /* the add saturates too */
        read_all_ways(l);
    }
    kc_local_free(l);
    /* And the metrics text over such a directory: buckets at the largest value, whose sum is past 2^64. */
    valid_tail(t, (uint64_t)INT64_MAX);
    write_with_tail("10", t, TAIL, 1);
    kc_options o;
    assert_int_equal(kc_options_init(&o, KC_OPTIONS_VERSION), KC_OK);
    o.dir = dir;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    size_t need = 0;
    assert_int_equal(kc_cache_metrics(c, KC_METRICS_OPENMETRICS, NULL, 0, &need), KC_ERROR);
    char *buf = malloc(need);
    assert_int_equal(kc_cache_metrics(c, KC_METRICS_OPENMETRICS, buf, need, &need), KC_OK);
    /* Each outcome's cumulative buckets never decrease (a wrapped sum would), and every number is C's. */
    char last_outcome[32] = "";
    unsigned long long prev = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char oc[32], le[32];
        unsigned long long v;
        if (sscanf(line, "kcache_lookup_duration_seconds_bucket{outcome=\"%31[a-z]\",le=\"%31[^\"]\"} %llu", oc, le,
                   &v) != 3)
            continue;
        if (strcmp(oc, last_outcome) != 0) snprintf(last_outcome, sizeof last_outcome, "%s", oc), prev = 0;
        assert_true(v >= prev);
        assert_null(strchr(le, ','));
        prev = v;
    }
    free(buf);
    kc_cache_close(c);
}

static void test_metrics_buffer_contract(void **state) {
    (void)state;
    kc_options o;
    assert_int_equal(kc_options_init(&o, KC_OPTIONS_VERSION), KC_OK);
    o.dir = dir;
    kc_cache *c;
    assert_int_equal(kc_cache_open(&c, &o), KC_OK);
    kc_cache_count(c, NULL, KC_STAT_MEMORY_HITS, 4); /* a lookup of unmeasured time: observed as 0 s */
    kc_latency lat = KC_LATENCY_INIT;
    assert_int_equal(kc_cache_latency(c, &lat), KC_OK);
    assert_int_equal(lat.buckets[KC_LOOKUP_MEMORY][0], 4);
    lat.version = 99;
    assert_int_equal(kc_cache_latency(c, &lat), KC_EVERSION);
    size_t need = 0;
    assert_int_equal(kc_cache_metrics(c, KC_METRICS_OPENMETRICS, NULL, 0, &need), KC_ERROR);
    assert_true(need > 1000);
    char *buf = malloc(need);
    memset(buf, 'x', need);
    assert_int_equal(kc_cache_metrics(c, KC_METRICS_OPENMETRICS, buf, need - 1, NULL), KC_ERROR);
    assert_int_equal(strlen(buf), need - 2); /* cut, NUL-terminated */
    size_t again = 0;
    assert_int_equal(kc_cache_metrics(c, KC_METRICS_OPENMETRICS, buf, need, &again), KC_OK);
    assert_int_equal(again, need);
    assert_int_equal(strlen(buf), need - 1);
    assert_non_null(strstr(buf, "kcache_lookups_total{outcome=\"memory\"} 4\n"));
    assert_non_null(strstr(buf, "kcache_lookup_duration_seconds_count{outcome=\"memory\"} 4\n"));
    assert_string_equal(buf + need - 7, "# EOF\n");
    assert_int_equal(kc_cache_metrics(c, KC_METRICS_PROMETHEUS, NULL, 0, &need), KC_ERROR); /* its own length */
    buf = realloc(buf, need);
    assert_int_equal(kc_cache_metrics(c, KC_METRICS_PROMETHEUS, buf, need, &again), KC_OK);
    assert_null(strstr(buf, "# EOF"));
    assert_non_null(strstr(buf, "# TYPE kcache_lookups_total counter\n"));
    assert_int_equal(kc_cache_metrics(c, 0x80, buf, need, NULL), KC_EINVAL);
    assert_int_equal(kc_cache_metrics(NULL, 0, buf, need, NULL), KC_EINVAL);
    assert_int_equal(kc_cache_metrics(c, 0, NULL, 5, NULL), KC_EINVAL);
    free(buf);
    assert_string_equal(kc_lookup_outcome_name(KC_LOOKUP_COMPILE), "compile");
    assert_null(kc_lookup_outcome_name(KC_LOOKUP_OUTCOMES));
    assert_int_equal(kc_lookup_outcome_stat(KC_LOOKUP_DISK), KC_STAT_HITS);
    assert_true(kc_latency_bound(0) == 1e-5 && kc_latency_bound(KC_LATENCY_BUCKETS - 1) == 10.0);
    assert_true(kc_latency_bound(KC_LATENCY_BUCKETS) > 1e300);
    kc_cache_close(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_another_process_sees_the_histogram, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_resets_the_histogram, setup, teardown),
        cmocka_unit_test_setup_teardown(test_old_file_reads_and_an_old_writer_keeps_the_section, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_files_never_crash, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_buffer_contract, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_target.c — the target part: parsing target names, and [Note: variant selection]
 * as THE TABLE (devices 7.0 … 12.0 × each kind of stored variant: exact, older minor of
 * the same major, arch-specific 'a', family 'f', PTX at or below the device, PTX above
 * it), the full preference order on each device, and the candidate lists themselves
 * (ordered, free of duplicates, every name a target).  kc_variant_select and
 * kc_target_candidates must agree everywhere: they are one selection.  No GPU, no NVRTC.
 */
#include "helpers.h"

#include "kcache.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *pick(const char *const *v, size_t n, int major, int minor) {
    int i = kc_variant_select(v, n, major, minor);
    return i >= 0 ? v[i] : "MISS";
}

/* Whether `name` is among the device's candidates. */
static int is_candidate(const char *name, int major, int minor) {
    char cand[KC_TARGET_CANDIDATES_MAX][16];
    size_t n = kc_target_candidates(major, minor, cand, KC_TARGET_CANDIDATES_MAX);
    for (size_t i = 0; i < n; i++)
        if (strcmp(cand[i], name) == 0) return 1;
    return 0;
}

/* ---- target names (moved from tests/compile/test_nvrtc.c) ---- */

static void test_targets(void **state) {
    (void)state;
    kc_target t;
    char n[16];
    const char *good[] = {"sm_80", "sm_90", "sm_90a", "compute_80", "sm_100f", "sm_120"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(kc_target_parse(good[i], &t), KC_OK);
        kc_target_name(&t, n);
        assert_string_equal(n, good[i]);
    }
    assert_int_equal(kc_target_parse("sm_90", &t), KC_OK);
    assert_int_equal(t.major, 9);
    assert_int_equal(t.minor, 0);
    assert_int_equal(t.ptx, 0);
    const char *bad[] = {"sm90", "sm_9", "sm_90b", "compute_", "gfx90a", "", "sm_20", "sm_9000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_int_equal(kc_target_parse(bad[i], &t), KC_EARCH);
}

/* The value type: every name kc_target_parse accepts — each prefix, every compute capability
 * 3.0 … 99.9, each suffix — gives back its value, and its name gives back the name; so a target
 * parsed once at the boundary and named again inward (store names, NVRTC's -arch) is the same. */
static void test_every_target_round_trips(void **state) {
    (void)state;
    const char *prefix[] = {"sm", "compute"}, *suffix[] = {"", "a", "f"};
    size_t count = 0;
    for (size_t p = 0; p < LEN(prefix); p++)
        for (int major = 3; major <= 99; major++)
            for (int minor = 0; minor <= 9; minor++)
                for (size_t x = 0; x < LEN(suffix); x++) {
                    char name[32], back[16];
                    snprintf(name, sizeof name, "%s_%d%d%s", prefix[p], major, minor, suffix[x]);
                    kc_target t = KC_TARGET_INIT;
                    if (kc_target_parse(name, &t) != KC_OK)
                        fail_msg("'%s' does not parse: %s", name, kc_error_last()->message);
                    assert_int_equal(t.major, major);
                    assert_int_equal(t.minor, minor);
                    assert_int_equal(t.ptx, p == 1 ? KC_TARGET_PTX : KC_TARGET_CUBIN);
                    assert_int_equal(t.suffix, suffix[x][0]);
                    kc_target_name(&t, back);
                    assert_string_equal(back, name);
                    kc_target again = KC_TARGET_INIT;
                    assert_int_equal(kc_target_parse(back, &again), KC_OK);
                    assert_true(again.major == t.major && again.minor == t.minor && again.ptx == t.ptx &&
                                again.suffix == t.suffix); /* field by field: the padding is nobody's */
                    count++;
                }
    assert_int_equal(count, 2 * 97 * 10 * 3);
    kc_target d;
    char n[16];
    kc_target_for_device(12, 1, &d); /* what a miss compiles: the plain cubin, named as kc_variant_for_device */
    kc_target_name(&d, n);
    assert_string_equal(n, "sm_121");
    kc_variant_for_device(12, 1, n);
    assert_string_equal(n, "sm_121");
}

/* Names that are not targets are refused with KC_EARCH and a message naming them and what is
 * wrong; *out is untouched.  A leading zero ("sm_080") would be a second name for sm_80 (it parsed
 * before targets were passed parsed): refused, so each target has one name. */
static void test_invalid_targets_are_refused_clearly(void **state) {
    (void)state;
    static const struct {
        const char *name, *says;
    } bad[] = {
        {"sm_080", "leading zero"},
        {"compute_090", "leading zero"},
        {"sm_0900", "2 or 3 digits"},
        {"sm_9", "2 or 3 digits"},
        {"sm_9000", "2 or 3 digits"},
        {"sm_90b", "suffix"},
        {"sm_90af", "suffix"},
        {"sm_90 ", "suffix"},
        {"SM_90", "want sm_XY"},
        {"sm90", "want sm_XY"},
        {"", "want sm_XY"},
        {"gfx90a", "want sm_XY"},
        {"compute_", "2 or 3 digits"},
        {"sm_20", "too old"},
        {"sm_-90", "2 or 3 digits"},
    };
    for (size_t i = 0; i < LEN(bad); i++) {
        kc_target t = {7, 7, 7, 'z'};
        int rc = kc_target_parse(bad[i].name, &t);
        if (rc != KC_EARCH) fail_msg("'%s': %d, want KC_EARCH", bad[i].name, rc);
        const char *m = kc_error_last()->message;
        if (!strstr(m, bad[i].says)) fail_msg("'%s': message '%s' does not say '%s'", bad[i].name, m, bad[i].says);
        if (bad[i].name[0] && !strstr(m, bad[i].name)) fail_msg("'%s': message '%s' does not name it", bad[i].name, m);
        assert_int_equal(t.major, 7);
        assert_int_equal(t.suffix, 'z');
    }
    kc_target t;
    assert_int_equal(kc_target_parse(NULL, &t), KC_EINVAL);
    assert_int_equal(kc_target_parse("sm_90", NULL), KC_EINVAL);
}

/* ---- selection (moved from tests/cuda/test_driver.c) ---- */

static void test_variant_selection(void **state) {
    (void)state;
    const char *all[] = {"compute_80", "sm_80", "sm_86", "sm_90", "sm_90a", "compute_90", "bogus"};
    assert_string_equal(pick(all, 7, 9, 0), "sm_90a"); /* arch-specific on its own device */
    assert_string_equal(pick(all, 4, 9, 0), "sm_90");  /* exact cubin */
    assert_string_equal(pick(all, 7, 8, 9), "sm_86");  /* X.y, y < Y, highest */
    assert_string_equal(pick(all, 7, 8, 0), "sm_80");
    assert_string_equal(pick(all, 7, 10, 0), "compute_90"); /* no cubin of major 10: newest PTX ≤ */
    const char *ptx_only[] = {"compute_80"};
    assert_string_equal(pick(ptx_only, 1, 9, 0), "compute_80");
    assert_string_equal(pick(ptx_only, 1, 7, 5), "MISS"); /* PTX newer than the device */
    const char *a_only[] = {"sm_90a"};
    assert_string_equal(pick(a_only, 1, 9, 0), "sm_90a");
    const char *a_other[] = {"sm_90a", "sm_80"};
    assert_string_equal(pick(a_other, 2, 10, 0), "MISS"); /* sm_90a never runs elsewhere; sm_80 is another major */
    const char *newer[] = {"sm_89"};
    assert_string_equal(pick(newer, 1, 8, 6), "MISS"); /* a newer minor is not compatible */
    const char *fam[] = {"sm_100f"};
    assert_string_equal(pick(fam, 1, 10, 3), "sm_100f");
    assert_string_equal(pick(fam, 1, 11, 0), "MISS");
    assert_string_equal(pick(NULL, 0, 9, 0), "MISS");
    char v[16];
    kc_variant_for_device(9, 0, v);
    assert_string_equal(v, "sm_90");
}

/* ---- THE TABLE ---- */

/* One device × one stored variant: does the device load it when it is all there is? */
typedef struct cell {
    int major, minor;
    const char *stored;
    int runs;
} cell;

#define RUNS 1  /* selected */
#define NEVER 0 /* KC_MISS */

static const cell TABLE[] = {
    /* device 7.0 (V100) */
    {7, 0, "sm_70", RUNS},       /* exact */
    {7, 0, "sm_72", NEVER},      /* a newer minor of the same major */
    {7, 0, "sm_70a", NEVER},     /* 'a' targets start with 9.0 */
    {7, 0, "sm_70f", NEVER},     /* 'f' targets start with 10.0 */
    {7, 0, "compute_70", RUNS},  /* PTX ≤ device */
    {7, 0, "compute_72", NEVER}, /* PTX > device */
    /* device 7.5 (T4) */
    {7, 5, "sm_75", RUNS},
    {7, 5, "sm_72", RUNS}, /* older minor, same major */
    {7, 5, "sm_70", RUNS},
    {7, 5, "sm_75a", NEVER},
    {7, 5, "sm_75f", NEVER},
    {7, 5, "compute_72", RUNS},
    {7, 5, "compute_80", NEVER},
    /* device 8.0 (A100) */
    {8, 0, "sm_80", RUNS},
    {8, 0, "sm_75", NEVER}, /* older, but another major */
    {8, 0, "sm_86", NEVER},
    {8, 0, "sm_80a", NEVER},
    {8, 0, "sm_80f", NEVER},
    {8, 0, "compute_75", RUNS},
    {8, 0, "compute_86", NEVER},
    /* device 8.6 (A10) */
    {8, 6, "sm_86", RUNS},
    {8, 6, "sm_80", RUNS},
    {8, 6, "sm_89", NEVER}, /* a newer minor is never binary compatible */
    {8, 6, "sm_86a", NEVER},
    {8, 6, "sm_86f", NEVER},
    {8, 6, "compute_80", RUNS},
    {8, 6, "compute_89", NEVER},
    /* device 8.9 (L4) */
    {8, 9, "sm_89", RUNS},
    {8, 9, "sm_86", RUNS}, /* binary compatible within the major */
    {8, 9, "sm_88", RUNS},
    {8, 9, "sm_80", RUNS},
    {8, 9, "sm_89a", NEVER},
    {8, 9, "sm_89f", NEVER},
    {8, 9, "compute_89", RUNS},
    {8, 9, "compute_86", RUNS},
    {8, 9, "compute_90", NEVER},
    /* device 9.0 (H100) */
    {9, 0, "sm_90", RUNS},
    {9, 0, "sm_89", NEVER},
    {9, 0, "sm_90a", RUNS}, /* arch-specific, on its own device */
    {9, 0, "sm_90f", NEVER},
    {9, 0, "compute_90", RUNS},
    {9, 0, "compute_80", RUNS},
    {9, 0, "compute_90a", NEVER}, /* arch-specific PTX is never chosen */
    {9, 0, "compute_100", NEVER},
    /* device 10.0 (B200) */
    {10, 0, "sm_100", RUNS},
    {10, 0, "sm_90", NEVER}, /* another major */
    {10, 0, "sm_100a", RUNS},
    {10, 0, "sm_90a", NEVER}, /* sm_90a never leaves 9.0 */
    {10, 0, "sm_100f", RUNS},
    {10, 0, "sm_103f", NEVER}, /* a family cubin runs on its minor and later ones only */
    {10, 0, "sm_103", NEVER},
    {10, 0, "compute_100", RUNS},
    {10, 0, "compute_90", RUNS},
    {10, 0, "compute_103", NEVER},
    /* device 10.3 (B300) */
    {10, 3, "sm_103", RUNS},
    {10, 3, "sm_101", RUNS},
    {10, 3, "sm_100", RUNS},
    {10, 3, "sm_103a", RUNS},
    {10, 3, "sm_100a", NEVER}, /* 'a' is for 10.0 alone */
    {10, 3, "sm_103f", RUNS},
    {10, 3, "sm_100f", RUNS}, /* a prewarmed family cubin is found on the later minor */
    {10, 3, "compute_103", RUNS},
    {10, 3, "compute_100", RUNS},
    {10, 3, "compute_110", NEVER},
    /* device 12.0 (RTX 5090) */
    {12, 0, "sm_120", RUNS},
    {12, 0, "sm_103", NEVER},
    {12, 0, "sm_121", NEVER},
    {12, 0, "sm_120a", RUNS},
    {12, 0, "sm_100a", NEVER},
    {12, 0, "sm_120f", RUNS},
    {12, 0, "sm_100f", NEVER}, /* a family is one major: 10.x's never runs on 12.0 */
    {12, 0, "sm_121f", NEVER},
    {12, 0, "compute_120", RUNS},
    {12, 0, "compute_100", RUNS},
    {12, 0, "compute_121", NEVER},
};

static void test_the_table(void **state) {
    (void)state;
    for (size_t i = 0; i < LEN(TABLE); i++) {
        const cell *c = &TABLE[i];
        const char *alone[] = {c->stored};
        const char *want = c->runs ? c->stored : "MISS";
        const char *got = pick(alone, 1, c->major, c->minor);
        if (strcmp(got, want) != 0)
            fail_msg("device %d.%d, stored %s: selected %s, want %s", c->major, c->minor, c->stored, got, want);
        if (is_candidate(c->stored, c->major, c->minor) != c->runs)
            fail_msg("device %d.%d: %s is%s a candidate", c->major, c->minor, c->stored, c->runs ? " not" : "");
        /* Beside names that are not targets, and one that never runs here: the same answer. */
        const char *noisy[] = {"bogus", NULL, "sm_30a", c->stored, "sm_090"};
        assert_string_equal(pick(noisy, 5, c->major, c->minor), want);
    }
}

/* The cases the note promises, spelled out. */
static void test_the_promises(void **state) {
    (void)state;
    const char *f100[] = {"sm_100f"}, *a90[] = {"sm_90a"}, *s86[] = {"sm_86"}, *s89[] = {"sm_89"};
    assert_string_equal(pick(f100, 1, 10, 3), "sm_100f"); /* prewarmed family cubin found on 10.3 */
    assert_true(is_candidate("sm_100f", 10, 3));
    assert_string_equal(pick(a90, 1, 9, 0), "sm_90a");
    assert_string_equal(pick(a90, 1, 10, 0), "MISS");
    assert_false(is_candidate("sm_90a", 10, 0));
    assert_string_equal(pick(f100, 1, 12, 0), "MISS"); /* different major */
    assert_false(is_candidate("sm_100f", 12, 0));
    assert_string_equal(pick(s86, 1, 8, 9), "sm_86"); /* binary compatible, same major */
    assert_string_equal(pick(s89, 1, 8, 6), "MISS");
    char v[16];
    kc_variant_for_device(9, 0, v); /* compile the plain cubin */
    assert_string_equal(v, "sm_90");
    kc_variant_for_device(10, 3, v);
    assert_string_equal(v, "sm_103");
}

/* Every name of THE TABLE stored at once: the order in which each device takes them. */
static const char *const STORED[] = {
    "compute_70",  "compute_72",  "compute_75",  "compute_80",  "compute_86",  "compute_89",  "compute_90",
    "compute_90a", "compute_100", "compute_103", "compute_110", "compute_120", "compute_121", "sm_70",
    "sm_70a",      "sm_70f",      "sm_72",       "sm_75",       "sm_75a",      "sm_75f",      "sm_80",
    "sm_80a",      "sm_80f",      "sm_86",       "sm_86a",      "sm_86f",      "sm_88",       "sm_89",
    "sm_89a",      "sm_89f",      "sm_90",       "sm_90a",      "sm_90f",      "sm_100",      "sm_100a",
    "sm_100f",     "sm_101",      "sm_103",      "sm_103a",     "sm_103f",     "sm_120",      "sm_120a",
    "sm_120f",     "sm_121",      "sm_121f",
};

typedef struct order {
    int major, minor;
    const char *want[20]; /* most preferred first, NULL-terminated */
} order;

static const order ORDERS[] = {
    {7, 0, {"sm_70", "compute_70"}},
    {7, 5, {"sm_75", "sm_72", "sm_70", "compute_75", "compute_72", "compute_70"}},
    {8, 0, {"sm_80", "compute_80", "compute_75", "compute_72", "compute_70"}},
    {8, 6, {"sm_86", "sm_80", "compute_86", "compute_80", "compute_75", "compute_72", "compute_70"}},
    {8,
     9,
     {"sm_89", "sm_88", "sm_86", "sm_80", "compute_89", "compute_86", "compute_80", "compute_75", "compute_72",
      "compute_70"}},
    {9,
     0,
     {"sm_90a", "sm_90", "compute_90", "compute_89", "compute_86", "compute_80", "compute_75", "compute_72",
      "compute_70"}},
    {10,
     0,
     {"sm_100a", "sm_100f", "sm_100", "compute_100", "compute_90", "compute_89", "compute_86", "compute_80",
      "compute_75", "compute_72", "compute_70"}},
    {10,
     3,
     {"sm_103a", "sm_103f", "sm_103", "sm_101", "sm_100f", "sm_100", "compute_103", "compute_100", "compute_90",
      "compute_89", "compute_86", "compute_80", "compute_75", "compute_72", "compute_70"}},
    {12,
     0,
     {"sm_120a", "sm_120f", "sm_120", "compute_120", "compute_110", "compute_103", "compute_100", "compute_90",
      "compute_89", "compute_86", "compute_80", "compute_75", "compute_72", "compute_70"}},
};

static void test_preference_order(void **state) {
    (void)state;
    for (size_t o = 0; o < LEN(ORDERS); o++) {
        const order *d = &ORDERS[o];
        /* kc_variant_select, again and again, each time without the one it took. */
        const char *left[LEN(STORED)];
        size_t n = LEN(STORED);
        memcpy(left, STORED, sizeof STORED);
        size_t k = 0;
        for (;; k++) {
            int i = kc_variant_select(left, n, d->major, d->minor);
            if (i == KC_MISS) break;
            assert_true(i >= 0 && (size_t)i < n);
            if (!d->want[k] || strcmp(left[i], d->want[k]) != 0)
                fail_msg("device %d.%d, choice %zu: %s, want %s", d->major, d->minor, k, left[i],
                         d->want[k] ? d->want[k] : "MISS");
            left[i] = left[--n];
        }
        assert_null(d->want[k]);
        /* kc_target_candidates, filtered to what is stored: the same list. */
        char cand[KC_TARGET_CANDIDATES_MAX][16];
        size_t nc = kc_target_candidates(d->major, d->minor, cand, KC_TARGET_CANDIDATES_MAX), j = 0;
        for (size_t c = 0; c < nc; c++)
            for (size_t s = 0; s < LEN(STORED); s++)
                if (strcmp(cand[c], STORED[s]) == 0) {
                    assert_non_null(d->want[j]);
                    assert_string_equal(cand[c], d->want[j]);
                    j++;
                }
        assert_int_equal(j, k);
    }
}

/* ---- the candidate lists ---- */

static void assert_list(int major, int minor, const char *const *want, size_t nwant) {
    char cand[KC_TARGET_CANDIDATES_MAX][16];
    size_t n = kc_target_candidates(major, minor, cand, KC_TARGET_CANDIDATES_MAX);
    for (size_t i = 0; i < n && i < nwant; i++)
        if (strcmp(cand[i], want[i]) != 0) fail_msg("%d.%d [%zu]: %s, want %s", major, minor, i, cand[i], want[i]);
    assert_int_equal(n, nwant);
}

static void test_candidate_lists(void **state) {
    (void)state;
    const char *d70[] = {"sm_70",      "compute_70", "compute_62", "compute_61",
                         "compute_60", "compute_53", "compute_52", "compute_50"};
    assert_list(7, 0, d70, LEN(d70));
    const char *d89[] = {"sm_89",      "sm_88",      "sm_87",      "sm_86",      "sm_80",
                         "compute_89", "compute_88", "compute_87", "compute_86", "compute_80",
                         "compute_75", "compute_72", "compute_70", "compute_62", "compute_61",
                         "compute_60", "compute_53", "compute_52", "compute_50"};
    assert_list(8, 9, d89, LEN(d89));
    const char *d90[] = {"sm_90a",     "sm_90",      "compute_90", "compute_89", "compute_88", "compute_87",
                         "compute_86", "compute_80", "compute_75", "compute_72", "compute_70", "compute_62",
                         "compute_61", "compute_60", "compute_53", "compute_52", "compute_50"};
    assert_list(9, 0, d90, LEN(d90));
    const char *d103[] = {"sm_103a",    "sm_103f",    "sm_103",      "sm_101f",     "sm_101",
                          "sm_100f",    "sm_100",     "compute_103", "compute_101", "compute_100",
                          "compute_90", "compute_89", "compute_88",  "compute_87",  "compute_86",
                          "compute_80", "compute_75", "compute_72",  "compute_70",  "compute_62",
                          "compute_61", "compute_60", "compute_53",  "compute_52",  "compute_50"};
    assert_list(10, 3, d103, LEN(d103));
    const char *d121[] = {"sm_121a",     "sm_121f",     "sm_121",      "sm_120f",     "sm_120",      "compute_121",
                          "compute_120", "compute_110", "compute_103", "compute_101", "compute_100", "compute_90",
                          "compute_89",  "compute_88",  "compute_87",  "compute_86",  "compute_80",  "compute_75",
                          "compute_72",  "compute_70",  "compute_62",  "compute_61",  "compute_60",  "compute_53",
                          "compute_52",  "compute_50"};
    assert_list(12, 1, d121, LEN(d121));
    /* A device newer than every table: its own cubins first, then every PTX. */
    const char *d135[] = {"sm_135a",     "sm_135f",     "sm_135",      "compute_121", "compute_120", "compute_110",
                          "compute_103", "compute_101", "compute_100", "compute_90",  "compute_89",  "compute_88",
                          "compute_87",  "compute_86",  "compute_80",  "compute_75",  "compute_72",  "compute_70",
                          "compute_62",  "compute_61",  "compute_60",  "compute_53",  "compute_52",  "compute_50"};
    assert_list(13, 5, d135, LEN(d135));
}

static void test_candidates_are_targets_without_duplicates(void **state) {
    (void)state;
    for (int major = 3; major <= 15; major++)
        for (int minor = 0; minor <= 9; minor++) {
            char cand[KC_TARGET_CANDIDATES_MAX + 1][16];
            size_t n = kc_target_candidates(major, minor, cand, KC_TARGET_CANDIDATES_MAX + 1);
            int last_ptx = 0;
            assert_true(n >= 1 && n <= KC_TARGET_CANDIDATES_MAX);
            for (size_t i = 0; i < n; i++) {
                kc_target t;
                if (kc_target_parse(cand[i], &t) != KC_OK)
                    fail_msg("%d.%d: '%s' does not parse", major, minor, cand[i]);
                char back[16];
                kc_target_name(&t, back);
                assert_string_equal(back, cand[i]); /* canonical names only */
                for (size_t j = 0; j < i; j++)
                    if (strcmp(cand[i], cand[j]) == 0) fail_msg("%d.%d: '%s' twice", major, minor, cand[i]);
                if (t.ptx) { /* plain PTX at or below the device */
                    assert_int_equal(t.suffix, '\0');
                    assert_true(t.major * 10 + t.minor <= major * 10 + minor);
                } else { /* a cubin of this major, minor ≤ device */
                    assert_int_equal(t.major, major);
                    assert_true(t.minor <= minor);
                    if (t.suffix == 'a') assert_true(major >= 9 && t.minor == minor);
                    if (t.suffix == 'f') assert_true(major >= 10);
                }
                int cc = t.major * 10 + t.minor;
                if (!t.ptx) assert_int_equal(last_ptx, 0); /* every cubin before every PTX */
                else {                                     /* PTX newest first */
                    if (last_ptx) assert_true(cc < last_ptx);
                    last_ptx = cc;
                }
            }
            /* The device's own plain cubin is always there: what kc_variant_for_device compiles. */
            char own[16];
            kc_variant_for_device(major, minor, own);
            assert_true(is_candidate(own, major, minor));
            /* A smaller cap cuts the list and keeps its head. */
            char few[3][16];
            size_t nf = kc_target_candidates(major, minor, few, 3);
            assert_int_equal(nf, n < 3 ? n : 3);
            for (size_t i = 0; i < nf; i++) assert_string_equal(few[i], cand[i]);
        }
}

static void test_candidates_of_impossible_devices(void **state) {
    (void)state;
    char cand[KC_TARGET_CANDIDATES_MAX][16];
    assert_int_equal(kc_target_candidates(2, 1, cand, KC_TARGET_CANDIDATES_MAX), 0);
    assert_int_equal(kc_target_candidates(9, 10, cand, KC_TARGET_CANDIDATES_MAX), 0);
    assert_int_equal(kc_target_candidates(9, -1, cand, KC_TARGET_CANDIDATES_MAX), 0);
    assert_int_equal(kc_target_candidates(100, 0, cand, KC_TARGET_CANDIDATES_MAX), 0);
    assert_int_equal(kc_target_candidates(9, 0, cand, 0), 0);
    const char *v[] = {"sm_20"};
    assert_int_equal(kc_variant_select(v, 1, 2, 0), KC_MISS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_every_target_round_trips),
        cmocka_unit_test(test_invalid_targets_are_refused_clearly),
        cmocka_unit_test(test_variant_selection),
        cmocka_unit_test(test_the_table),
        cmocka_unit_test(test_the_promises),
        cmocka_unit_test(test_preference_order),
        cmocka_unit_test(test_candidate_lists),
        cmocka_unit_test(test_candidates_are_targets_without_duplicates),
        cmocka_unit_test(test_candidates_of_impossible_devices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log_json.c — KCACHE_LOG_FORMAT=json: every log line is one JSON object that a strict reader
 * takes (this tree's src/common/json.c here; Python's json.loads in test_log_json.py, through
 * --emit), valid UTF-8 whatever bytes were logged, with ts, level, pid, tid, part and msg; the
 * message — quotes, a newline, ESC, a backslash, DEL, bytes >= 0x80 valid and not — comes back
 * exactly, each invalid byte as U+FFFD; lines of four threads never interleave; an unknown format
 * is refused with a warning and leaves the text format, whose lines are unchanged; errno is kept.
 *
 * Each case runs in a fresh child (forked before this process logged or read its settings), its
 * stderr in a file read back here: the settings are read once per process.
 *
 *   test_log_json            the cmocka cases
 *   test_log_json --emit     log the hostile messages to stderr (under the caller's environment)
 */
#include <pthread.h>
#include <sys/wait.h>

#include "common/internal.h"
#include "common/json.h"
#include "helpers.h"
#include "kcache.h"

/* Quotes, a newline, ESC (a colour), a tab, a backslash, é, a lone 0xff, a cut sequence (0xc3 then a
 * space), a surrogate's encoding (invalid in UTF-8), an emoji, DEL. */
static const char hostile[] = "say \"hi\"\n\x1b[31mred\x1b[0m tab\t back\\ \xc3\xa9 \xff \xc3 ok \xed\xa0\x80 "
                              "\xf0\x9f\x98\x80 del\x7f";
/* What a JSON reader must give back: each invalid byte is one U+FFFD (EF BF BD). */
static const char hostile_read[] = "say \"hi\"\n\x1b[31mred\x1b[0m tab\t back\\ \xc3\xa9 \xef\xbf\xbd \xef\xbf\xbd "
                                   "ok \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xf0\x9f\x98\x80 del\x7f";

#define THREADS 4
#define PER_THREAD 100

static void *thread_lines(void *arg) {
    char msg[1200];
    memset(msg, 'a' + (int)(intptr_t)arg, sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    for (int i = 0; i < PER_THREAD; i++) kc_log_write(KC_LOG_REMOTE, "%d %s", i, msg);
    return NULL;
}

static void emit(void) {
    kc_log_write(KC_LOG_STORE, "%s", hostile);
    kc_log_write(KC_LOG_COMPILE, "plain line");
    kc_log_write(KC_LOG_KEY, "%s", "");
}

/* In a child: stderr to `path`, KCACHE_LOG=all, KCACHE_LOG_FORMAT=`format` (NULL: unset), `configure`
 * first when not NULL; the hostile lines, and with `threads` the threads' lines. */
static int child(const char *path, const char *format, const char *configure, int threads) {
    int fd = open(path, O_WRONLY | O_TRUNC | O_APPEND);
    if (fd < 0 || dup2(fd, 2) < 0) return 2;
    close(fd);
    setenv("KCACHE_LOG", "all", 1);
    if (format) setenv("KCACHE_LOG_FORMAT", format, 1);
    else unsetenv("KCACHE_LOG_FORMAT");
    if (configure) kc_log_configure(configure);
    emit();
    pthread_t t[THREADS];
    for (int i = 0; threads && i < THREADS; i++)
        if (pthread_create(&t[i], NULL, thread_lines, (void *)(intptr_t)i) != 0) return 3;
    for (int i = 0; threads && i < THREADS; i++) pthread_join(t[i], NULL);
    fflush(stderr);
    return 0;
}

/* Run a child; its stderr's text (the caller frees it) and its pid in *pid. */
static char *run(const char *format, const char *configure, int threads, pid_t *pid_out) {
    char path[] = "/tmp/kctest-logjson-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(child(path, format, configure, threads));
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    size_t len;
    char *text = (char *)kct_read(path, &len);
    unlink(path);
    assert_non_null(text);
    text[len] = '\0';
    if (pid_out) *pid_out = pid;
    return text;
}

/* Whether s[0, n) is valid UTF-8 (no overlong form, surrogate or code point past U+10FFFF). */
static int valid_utf8(const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned c = s[i], cp;
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!len || i + len > n) return 0;
        cp = len == 1 ? c : c & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += len;
    }
    return 1;
}

/* Check one JSON line: its fields; *part and *msg point into doc. */
static void check_line(const char *line, size_t len, pid_t pid, kc_json_doc *doc, const char **part, const char **msg) {
    assert_true(valid_utf8((const unsigned char *)line, len));
    size_t at = 0;
    if (kc_json_parse(doc, line, len, &at) != KC_OK) fail_msg("not JSON at %zu: %.300s", at, line);
    const kc_json *o = doc->root;
    assert_true(kc_json_is(o, KC_JSON_OBJECT));
    const kc_json *ts = kc_json_get(o, "ts"), *lv = kc_json_get(o, "level"), *p = kc_json_get(o, "pid");
    const kc_json *tid = kc_json_get(o, "tid"), *pt = kc_json_get(o, "part"), *m = kc_json_get(o, "msg");
    assert_true(kc_json_is(ts, KC_JSON_STRING) && kc_json_is(lv, KC_JSON_STRING) && kc_json_is(p, KC_JSON_NUMBER));
    assert_true(kc_json_is(tid, KC_JSON_NUMBER) && kc_json_is(pt, KC_JSON_STRING) && kc_json_is(m, KC_JSON_STRING));
    int y, mo, d, h, mi, s, ms;
    char z, end;
    assert_int_equal(strlen(ts->str), 24); /* 2026-11-28T10:44:17.123Z */
    assert_int_equal(sscanf(ts->str, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c%c", &y, &mo, &d, &h, &mi, &s, &ms, &z, &end), 8);
    assert_true(z == 'Z' && y >= 2024 && mo >= 1 && mo <= 12 && ms >= 0 && ms <= 999);
    assert_string_equal(lv->str, "debug");
    assert_true(p->num == (double)pid);
    assert_true(tid->num > 0);
    *part = pt->str, *msg = m->str;
}

static void test_json_lines(void **state) {
    (void)state;
    pid_t pid;
    char *text = run("json", NULL, 1, &pid);
    size_t lines = 0, thread_lines_seen = 0;
    for (char *p = text, *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        assert_non_null(nl); /* every record ends its line */
        kc_json_doc doc;
        const char *part, *msg;
        check_line(p, (size_t)(nl - p), pid, &doc, &part, &msg);
        if (lines == 0) assert_string_equal(part, "store"), assert_string_equal(msg, hostile_read);
        if (lines == 1) assert_string_equal(part, "compile"), assert_string_equal(msg, "plain line");
        if (lines == 2) assert_string_equal(part, "key"), assert_string_equal(msg, "");
        if (lines >= 3) { /* one thread's line whole: "<i> " then 1199 of one letter */
            assert_string_equal(part, "remote");
            const char *sp = strchr(msg, ' ');
            assert_non_null(sp);
            assert_int_equal(strlen(sp + 1), 1199);
            assert_int_equal(strspn(sp + 1, (char[]){sp[1], 0}), 1199);
            thread_lines_seen++;
        }
        kc_json_free(&doc);
        lines++;
    }
    assert_int_equal(thread_lines_seen, THREADS * PER_THREAD);
    free(text);
}

/* kc_log_configure before any line, as a program does: the format is still the setting's. */
static void test_configure_first(void **state) {
    (void)state;
    pid_t pid;
    char *text = run("json", "store", 0, &pid);
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    assert_null(strchr(nl + 1, '\n')); /* store alone: one line */
    kc_json_doc doc;
    const char *part, *msg;
    check_line(text, (size_t)(nl - text), pid, &doc, &part, &msg);
    assert_string_equal(part, "store");
    assert_string_equal(msg, hostile_read);
    kc_json_free(&doc);
    free(text);
}

/* The text format, unset or named, is what it always was: the bytes as logged. */
static void test_text_unchanged(void **state) {
    (void)state;
    const char *want_fmt = "kcache[store] %s\nkcache[compile] plain line\nkcache[key] \n";
    char want[512];
    snprintf(want, sizeof want, want_fmt, hostile);
    char *text = run(NULL, NULL, 0, NULL);
    assert_string_equal(text, want);
    free(text);
    text = run("text", NULL, 0, NULL);
    assert_string_equal(text, want);
    free(text);
}

/* An unknown format: a warning naming the variable and the choices, then the text format. */
static void test_unknown_format(void **state) {
    (void)state;
    char *text = run("xml", NULL, 0, NULL);
    assert_non_null(strstr(text, "KCACHE_LOG_FORMAT is 'xml': give text or json"));
    assert_non_null(strstr(text, "kcache[compile] plain line\n"));
    free(text);
}

/* A log line leaves errno as it was, even when its write fails (stderr closed): a caller may log
 * between a failed call and reading its errno. */
static int errno_child(const char *format) {
    setenv("KCACHE_LOG", "all", 1);
    setenv("KCACHE_LOG_FORMAT", format, 1);
    close(2);
    errno = EACCES;
    kc_log_write(KC_LOG_STORE, "into a closed stderr");
    return errno == EACCES ? 0 : 1;
}

static void test_errno_kept(void **state) {
    (void)state;
    const char *formats[] = {"json", "text"};
    for (size_t i = 0; i < 2; i++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) _exit(errno_child(formats[i]));
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        if (WEXITSTATUS(st) != 0) fail_msg("errno changed by a log line in the %s format", formats[i]);
    }
}

int main(int argc, char **argv) {
    /* Links the configuration part in (its reader hands log.c the settings) without reading them. */
    if (kc_config_find("log_format") < 0) return 1;
    if (argc > 1 && strcmp(argv[1], "--emit") == 0) {
        emit();
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_lines),     cmocka_unit_test(test_configure_first),
        cmocka_unit_test(test_text_unchanged), cmocka_unit_test(test_unknown_format),
        cmocka_unit_test(test_errno_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

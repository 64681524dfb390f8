/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_toolkit_own.c — a compile's watch of the toolkit counts this process's opens only ([Note:
 * only our own reads] in src/compile/toolkit_fan.c): a file of the tree another process opens
 * while the watch runs is not in the direct manifest, a file this process opens (from any of its
 * threads, as NVRTC's on the compile pool) is; without
 * fanotify every open counts, as inotify sees them (the superset, still correct).  A small toolkit
 * of our own; each case in a child process (the toolkit's walk is per process).
 */
#include "helpers.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "compile/toolkit.h"
#include "compile/toolkit_fan.h"
#include "kcache.h"

static char *tmp;
KCT_TMPDIR_FIXTURE(tmp, "tkown")

enum { SKIPPED = 77 };

/* The toolkit (cuda_fp16.h marks one), past the window in which a file is too new to be vouched for. */
static void make_toolkit(void) {
    char tk[4096];
    snprintf(tk, sizeof tk, "%s/tk", tmp);
    assert_int_equal(mkdir(tk, 0700), 0);
    assert_int_equal(kct_put(tk, "cuda_fp16.h", "// fp16\n"), 0);
    assert_int_equal(kct_put(tk, "crt/host_defines.h", "#define X 1\n"), 0);
    assert_int_equal(kct_put(tk, "unread.h", "// another process opens this\n"), 0);
    assert_int_equal(kct_put(tk, "cccl/thread.h", "// another thread of this process opens this\n"), 0);
    struct timespec t = {2, 200000000};
    nanosleep(&t, NULL);
}

/* Open and close tk/rel. */
static int touch_read(const char *rel) {
    char p[4096];
    snprintf(p, sizeof p, "%s/tk/%s", tmp, rel);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

/* Whether the manifest lists `rel` as a file read ("f <sig> <rel>"). */
static int listed(const char *rel) {
    char p[4096], line[4096];
    snprintf(p, sizeof p, "%s/memo/direct-own.sm_80", tmp);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *sp = strrchr(line, ' ');
        if (line[0] == 'f' && sp && strcmp(sp + 1, rel) == 0) found = 1;
    }
    fclose(f);
    return found;
}

/* A thread of this process other than the watch's (as NVRTC's on the compile pool). */
static void *thread_read(void *arg) {
    (void)arg;
    return touch_read("cccl/thread.h") == 0 ? (void *)1 : NULL;
}

/* In the child: walk the toolkit, watch, open crt/host_defines.h here, cccl/thread.h on another
 * thread and unread.h in another process, record.  Its exit: 0, SKIPPED, or the number of the step that failed. */
/* In the child: the toolkit walked and a watch begun in *w, fanotify's filter on or off (`fan`), the
 * manifests' folder in memo[4096]: 0, or the child's exit (SKIPPED without NVRTC or fanotify). */
static int watch_begun(int fan, kc_toolkit_watch **w, char *memo) {
    char tk[4096], digest[33];
    snprintf(tk, sizeof tk, "%s/tk", tmp);
    snprintf(memo, 4096, "%s/memo", tmp);
    setenv("KCACHE_CUDA_INCLUDE", tk, 1);
    if (kc_toolkit_digest(NULL, 0, digest) != KC_OK) return SKIPPED; /* no NVRTC */
    kc_tk_fan_enable_(fan);
    kc_toolkit_watch_begin(w);
    if (!*w) return 1;
    if (kc_toolkit_watch_filtered_(*w) != fan) return fan ? SKIPPED : 2; /* fanotify unavailable here */
    return 0;
}

static int watched(int fan) {
    char memo[4096];
    kc_toolkit_watch *w = NULL;
    int rc = watch_begun(fan, &w, memo);
    if (rc) return rc;
    if (touch_read("crt/host_defines.h") != 0) return 3;
    pthread_t t;
    void *ok = NULL;
    if (pthread_create(&t, NULL, thread_read, NULL) != 0 || pthread_join(t, &ok) != 0 || !ok) return 6;
    pid_t pid = fork();
    if (pid == 0) _exit(touch_read("unread.h") == 0 ? 0 : 1);
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 4;
    char *reads = NULL;
    kc_toolkit_watch_end(w, memo, "direct-own.sm_80", 1, &reads);
    if (!reads) return 5;
    free(reads);
    return 0;
}
static int watched_fan(void) { return watched(1); }

/* In the child: a watch begun here and ended in a forked child of it, after that child opened
 * crt/host_defines.h (its opens are not the ones fanotify was told to keep: inotify's count). */
static int watched_then_forked(void) {
    char memo[4096];
    kc_toolkit_watch *w = NULL;
    int rc = watch_begun(1, &w, memo);
    if (rc) return rc;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (touch_read("crt/host_defines.h") != 0) _exit(2);
        char *reads = NULL;
        kc_toolkit_watch_end(w, memo, "direct-own.sm_80", 1, &reads);
        _exit(reads ? 0 : 3);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return 4;
    return WEXITSTATUS(st);
}
static int watched_inotify(void) { return watched(0); }

static void test_another_process_opens_are_not_reads(void **state) {
    (void)state;
    make_toolkit();
    int rc = kct_in_child(watched_fan);
    if (rc == SKIPPED) skip();
    assert_int_equal(rc, 0);
    assert_int_equal(listed("crt/host_defines.h"), 1); /* this process's open */
    assert_int_equal(listed("cccl/thread.h"), 1);      /* ... from another of its threads */
    assert_int_equal(listed("unread.h"), 0);           /* another's */
    assert_int_equal(listed("cuda_fp16.h"), 0);        /* no one's */
}

static void test_without_fanotify_every_open_counts(void **state) {
    (void)state;
    make_toolkit();
    int rc = kct_in_child(watched_inotify);
    if (rc == SKIPPED) skip();
    assert_int_equal(rc, 0);
    assert_int_equal(listed("crt/host_defines.h"), 1);
    assert_int_equal(listed("cccl/thread.h"), 1);
    assert_int_equal(listed("unread.h"), 1); /* the superset: correct, and what the filter removes */
    assert_int_equal(listed("cuda_fp16.h"), 0);
}

static void test_a_forked_child_keeps_every_open(void **state) {
    (void)state;
    make_toolkit();
    int rc = kct_in_child(watched_then_forked);
    if (rc == SKIPPED) skip();
    assert_int_equal(rc, 0);
    assert_int_equal(listed("crt/host_defines.h"), 1); /* the child's open: read, though not the watch's process */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_another_process_opens_are_not_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_without_fanotify_every_open_counts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_forked_child_keeps_every_open, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

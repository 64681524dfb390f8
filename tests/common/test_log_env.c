/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log_env.c — KCACHE_LOG takes effect without a kc_cache (issue 19): a process that never
 * opens a cache still logs the categories the environment names — a site's recompile reasons,
 * and a compile when NVRTC is here — while a kc_log_configure made first wins over the
 * environment, and no KCACHE_LOG logs nothing.
 *
 * Each case runs in a fresh child (fork before this process logged anything), with its stderr
 * in a file that the child reads back: the environment is read once per process.
 */
#include <sys/wait.h>

#include "kcache.h"
#include "helpers.h"

/* In a child: stderr to a file, `env` as KCACHE_LOG (NULL: unset), `configure` first when not
 * NULL, then a site's recompile on no cache (and a compile when `compile`); 0 when the stderr holds
 * `want` (or, with want NULL, holds no "kcache[" line). */
static int child(const char *env, const char *configure, int compile, const char *want) {
    char path[] = "/tmp/kctest-logenv-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || dup2(fd, 2) < 0) return 2;
    close(fd);
    if (env) setenv("KCACHE_LOG", env, 1);
    else unsetenv("KCACHE_LOG");
    if (configure) kc_log_configure(configure);
    kc_site *s = NULL;
    if (kc_site_new(&s, NULL, "logenv", NULL) != KC_OK) return 3;
    kc_tensor_meta t = {KC_DTYPE_F32, KC_DEVICE_CUDA, 1, {{4, NULL}}, {{1, NULL}}, 0};
    kc_call c = {&t, 1, NULL, 0, 0, NULL};
    kc_site_answer a;
    if (kc_site_lookup(s, &c, &a) != KC_OK) return 4;
    /* The first call is no recompile (issue 19): an entry for it, then another size — that is one. */
    if (kc_site_insert(s, &c, a.dynamic, NULL, NULL) != KC_OK) return 7;
    t.sizes[0].value = 8;
    if (kc_site_lookup(s, &c, &a) != KC_OK) return 4;
    kc_site_free(s);
    if (compile) {
        if (kc_nvrtc_available() != KC_OK) return KC_SKIP_CODE;
        kc_kernel_src k = KC_KERNEL_SRC_INIT;
        k.file = "logenv.cu";
        k.source = "extern \"C\" __global__ void logenv_k(float *p) { p[0] = 1.0f; }\n";
        k.name = "logenv_k";
        kc_compiled *out = NULL;
        if (kc_compile_kernel(&k, "sm_80", &out) != KC_OK) return 5;
        kc_compiled_free(out);
    }
    fflush(stderr);
    size_t len;
    char *text = (char *)kct_read(path, &len);
    unlink(path);
    if (!text) return 6;
    text[len] = '\0'; /* kct_read leaves room for it */
    int ok = want ? strstr(text, want) != NULL : strstr(text, "kcache[") == NULL;
    if (!ok) printf("child's stderr lacks \"%s\": %.400s\n", want ? want : "no kcache[ line", text), fflush(stdout);
    free(text);
    return ok ? 0 : 1;
}

static int run(const char *env, const char *configure, int compile, const char *want) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(child(env, configure, compile, want));
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

static void test_env_without_a_cache(void **state) {
    (void)state;
    assert_int_equal(run("recompiles", NULL, 0, "kcache[recompiles] site logenv: recompiling"), 0);
    assert_int_equal(run("all", NULL, 0, "kcache[recompiles]"), 0);
}

static void test_compile_alone_logs(void **state) {
    (void)state;
    /* NVRTC is looked for in the child: this process must not log (or read KCACHE_LOG) before a fork. */
    int rc = run("compile", NULL, 1, "kcache[compile] compiled logenv.cu");
    if (rc == KC_SKIP_CODE) {
        printf("skip: no NVRTC here, so no compile to log\n");
        skip();
    }
    assert_int_equal(rc, 0);
}

static void test_no_env_and_configure_first(void **state) {
    (void)state;
    assert_int_equal(run(NULL, NULL, 0, NULL), 0);       /* nothing asked, nothing logged */
    assert_int_equal(run("recompiles", "", 0, NULL), 0); /* the caller turned logging off first: it wins */
    assert_int_equal(run(NULL, "recompiles", 0, "kcache[recompiles]"), 0); /* and on, with no environment */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_without_a_cache),
        cmocka_unit_test(test_compile_alone_logs),
        cmocka_unit_test(test_no_env_and_configure_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

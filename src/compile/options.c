/* SPDX-License-Identifier: Apache-2.0 */
/*
 * options.c — what NVRTC is asked to do, as far as the key is concerned: a kernel's options
 * (checked, and their form in the key), whether a kernel may be cached at all, and which
 * files its source could make NVRTC read.
 *
 * The one idea: everything that can change the machine code is in the key, or refused here
 * with the reason.  Options reach NVRTC exactly as written (nvrtc.c passes k->options in
 * order, repeats kept); their key form is that list with only provably equivalent spellings
 * made one ([Note: option spellings]).  An option that picks the target, names an include
 * folder, pre-includes a file kcache does not hold in memory, or reads or writes files is
 * refused ([Note: what NVRTC may read]).  A kernel whose compile may differ from one run to
 * the next (__DATE__, __TIME__, __TIMESTAMP__, however spelled) or that may read a file
 * kcache cannot name is compiled but never stored ([Note: cacheability] in cacheable.c, whose
 * scanner also checks the includes: kc_options_check_includes).
 *
 * Callers: graph/desc.c (checks options as a kernel is added), graph/graph_key.c (the
 * options' key form), graph/lookup.c (cacheability), compile/nvrtc.c (the include check and
 * the missing-header message, through options.h), and the public compile.h API.
 * Must not: load NVRTC or read files (kc_options_normalize runs on every lookup, hits too).
 *
 * [Note: option spellings]  Checked against NVRTC 13.0:
 * - Each argument is trimmed of surrounding white space (" -DX", "-G\r" work), but a value
 *   after '=' is not ("-include= p.h" looks for " p.h"); an empty argument is an error.
 *   Key: each argument trimmed.
 * - "-opt" "value" means "-opt=value" only for some options: "-std" "c++17", "-opt-info"
 *   "inline", "-frandom-seed" "1" and "-time" "-" are errors.  Key: the two are joined as
 *   "-opt=value" for the options in split_value[] (each checked: the same PTX both ways, and
 *   a bad second argument is NVRTC's error about the value), unless the value starts with
 *   '-' (NVRTC might take it for an option), -Xptxas excepted (its values always do).
 *   "-D" "X" is not joined ("-D" "=X" is not proven to be "-D=X").
 * - Long and short names are not interchangeable ("--device-debug" and "-G" work,
 *   "-device-debug" does not; "-default-device" works, "--default-device" does not).  Key:
 *   the dashes as written, no alias made one (a miss, never a wrong hit).
 * - Order and repeats matter ("-DX -UX -DX" defines X, "-DX -DX -UX" does not).  Key: kept.
 *
 * [Note: what NVRTC may read]  Checked against NVRTC 13.0: without -no-source-include a
 * quoted #include searches the folder of the program's name — for "k.cu", the working
 * directory.  With it and no -I, #include finds only the headers given in memory ("could not
 * open source file "x" (no directories in search list)"; with an -I, "cannot open source
 * file "x"").  But NVRTC still opens
 * - an absolute path (#include "/a/x.h", <"/a/x.h">, __has_include("/a/x.h"), -include
 *   /a/x.h), unless a header given in memory has exactly that name (in memory wins);
 * - "-include NAME" from the working directory first (before any -I, even with
 *   -no-source-include), unless a header given in memory has that name;
 * - with an -I (the toolkit's headers), "../" out of that folder ("../../../../etc/hostname").
 * So -I and -include of anything but a listed header are refused here; a literal absolute
 * include (or, for a toolkit kernel, one with "..") is refused before compiling
 * (kc_options_check_includes); a computed one (#include MACRO, __has_include(MACRO)) cannot
 * be known without preprocessing and bypasses the store.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <xxhash.h>

#include "../common/api.h"
#include "../common/internal.h"
#include "kcache/compile.h"
#include "options.h"

static int is_space(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* ---- options ---- */

/* One argument as NVRTC reads it: "-opt", "--opt=value", or "-opt" joined with the next. */
typedef struct opt {
    const char *text; /* trimmed */
    size_t len;
    const char *name; /* after the dashes, up to '=' */
    size_t name_len;
    size_t dashes;
    const char *value; /* after '=' as written, or the joined argument (trimmed); NULL: none */
    size_t value_len;
    int joined;
} opt;

/* Options for which NVRTC reads "-opt" "value" as "-opt=value" ([Note: option spellings]). */
static const char *const split_value[] = {"maxrregcount",
                                          "ftz",
                                          "prec-div",
                                          "prec-sqrt",
                                          "fmad",
                                          "Xptxas",
                                          "ptxas-options",
                                          "include",
                                          "pre-include",
                                          "define-macro",
                                          "undefine-macro",
                                          "split-compile",
                                          "Ofc",
                                          "Ofast-compile",
                                          "jtd",
                                          "jump-table-density",
                                          "diag-suppress",
                                          "diag-error",
                                          "diag-warn",
                                          "brief-diag",
                                          "brief-diagnostics",
                                          "rdc",
                                          "relocatable-device-code",
                                          "dopt",
                                          "builtin-move-forward",
                                          "builtin-initializer-list",
                                          "modify-stack-limit",
                                          "device-stack-protector"};

static const char *trim(const char *s, size_t *n) {
    while (is_space(*s) || *s == '\n') s++;
    size_t l = strlen(s);
    while (l && (is_space(s[l - 1]) || s[l - 1] == '\n')) l--;
    *n = l;
    return s;
}

static void opt_parse(const char *text, size_t len, opt *o) {
    memset(o, 0, sizeof *o);
    o->text = text, o->len = len;
    while (o->dashes < len && o->dashes < 2 && text[o->dashes] == '-') o->dashes++;
    o->name = text + o->dashes;
    const char *eq = memchr(o->name, '=', len - o->dashes);
    o->name_len = eq ? (size_t)(eq - o->name) : len - o->dashes;
    if (eq) o->value = eq + 1, o->value_len = len - (size_t)(eq + 1 - text);
}

static int is(const opt *o, const char *name) {
    return o->name_len == strlen(name) && memcmp(o->name, name, o->name_len) == 0;
}
static int prefixed(const opt *o, const char *p) {
    return o->name_len >= strlen(p) && memcmp(o->name, p, strlen(p)) == 0;
}

static int refuse(const opt *o, const char *why) {
    return kc_err(KC_EINVAL, "option '%.*s%s%.*s': %s", (int)o->len, o->text, o->joined ? " " : "",
                  o->joined ? (int)o->value_len : 0, o->joined ? o->value : "", why);
}

#define HOW_TO_GIVE_HEADERS                                                                                    \
    "give the headers in memory (the spec's \"headers\", kc_kernel_src.headers), or set \"toolkit_headers\": " \
    "true (KC_KERNEL_TOOLKIT_HEADERS) for the CUDA toolkit's own"

/* A pre-included file must be a header the kernel gives in memory ([Note: what NVRTC may read]). */
static int check_pre_include(const kc_kernel_src *k, const opt *o) {
    if (!o->value) return refuse(o, "name the header with '=' (-include=NAME); it must be a header given in memory");
    for (size_t h = 0; h < k->nheaders; h++) {
        const char *n = k->headers[h].name;
        if (n && strlen(n) == o->value_len && memcmp(n, o->value, o->value_len) == 0) return KC_OK;
    }
    int toolkit = (k->flags & KC_KERNEL_TOOLKIT_HEADERS) != 0;
    return kc_err(KC_EINVAL,
                  "option '%.*s%s%.*s': a pre-included file must be a header given in memory with the kernel (list "
                  "\"%.*s\" in the spec's \"headers\", kc_kernel_src.headers): NVRTC would read it from the working "
                  "directory or the disk, whose files are in no key%s",
                  (int)o->len, o->text, o->joined ? " " : "", o->joined ? (int)o->value_len : 0,
                  o->joined ? o->value : "", (int)o->value_len, o->value,
                  toolkit ? "; a header of the CUDA toolkit cannot be pre-included (NVRTC looks for it in the "
                            "working directory first): #include it from the source"
                          : "");
}

/* -Xptxas passes one ptxas option: refuse those that read or write files or pick the target. */
static int check_ptxas(const opt *o) {
    if (!o->value) return KC_OK;
    size_t n;
    const char *v = trim(o->value, &n);
    while (n && *v == '-') v++, n--;
    size_t nl = 0;
    while (nl < n && v[nl] != '=' && !is_space(v[nl])) nl++;
#define PTXAS_IS(s) (nl == strlen(s) && memcmp(v, s, nl) == 0)
    if (PTXAS_IS("optf") || PTXAS_IS("options-file")) return refuse(o, "ptxas would read an options file from disk");
    if (PTXAS_IS("o") || PTXAS_IS("output-file")) return refuse(o, "ptxas would write its output to a file");
    if (PTXAS_IS("arch") || PTXAS_IS("gpu-name"))
        return refuse(o, "the target is chosen by kcache (it is the variant)");
#undef PTXAS_IS
    return KC_OK;
}

static int check_option(const kc_kernel_src *k, const opt *o) {
    if (o->dashes == 0) return KC_OK; /* not an option: NVRTC says so */
    if (prefixed(o, "arch") || prefixed(o, "gpu-architecture") || prefixed(o, "code") || prefixed(o, "gpu-code") ||
        prefixed(o, "gencode") || prefixed(o, "generate-code"))
        return refuse(o, "the target is chosen by kcache (it is the variant: sm_XX, compute_XX)");
    if (o->name[0] == 'I' || prefixed(o, "include-path"))
        return refuse(o, "it names an include folder on disk, whose files are in no key: " HOW_TO_GIVE_HEADERS);
    if (is(o, "include") || is(o, "pre-include")) return check_pre_include(k, o);
    if (is(o, "time") && o->value && !(o->value_len == 1 && o->value[0] == '-'))
        return refuse(o, "it writes a timing table to a file (-time=- writes it to the log, and is allowed)");
    if (is(o, "fdevice-time-trace")) return refuse(o, "it writes a trace file");
    if (is(o, "pch") || is(o, "create-pch") || is(o, "use-pch") || is(o, "pch-dir"))
        return refuse(o, "precompiled headers are files on disk, read and written behind the key");
    if (is(o, "dlink-time-opt") || is(o, "dlto") || is(o, "optix-ir"))
        return refuse(o, "it makes LTO or OptiX IR, neither a cubin nor PTX that kcache can store and load");
    if (is(o, "fdevice-syntax-only")) return refuse(o, "it makes no device code");
    if (is(o, "Xptxas") || is(o, "ptxas-options")) return check_ptxas(o);
    return KC_OK;
}

int kc_kernel_src_arrays_ok_(const char *func, const kc_kernel_src *k) {
    if (k->nheaders && !k->headers)
        return kc_err(KC_EINVAL, "%s: kc_kernel_src.headers is NULL and nheaders is %zu: give the array, or 0", func,
                      k->nheaders);
    for (size_t h = 0; h < k->nheaders; h++)
        if (!k->headers[h].name || !k->headers[h].source)
            return kc_err(KC_EINVAL, "%s: kc_kernel_src.headers[%zu].%s is NULL: give the header's name and text", func,
                          h, k->headers[h].name ? "source" : "name");
    if (k->noptions && !k->options)
        return kc_err(KC_EINVAL, "%s: kc_kernel_src.options is NULL and noptions is %zu: give the array, or 0", func,
                      k->noptions);
    for (size_t i = 0; i < k->noptions; i++)
        if (!k->options[i]) return kc_err(KC_EINVAL, "%s: kc_kernel_src.options[%zu] is NULL", func, i);
    return KC_OK;
}

int kc_options_normalize(const kc_kernel_src *k, char **out) {
    if (out) *out = NULL; /* on every failure too */
    if (!k || !out) return kc_err(KC_EINVAL, "kc_options_normalize: NULL argument");
    *out = NULL;
    int vrc = kc_api_version("kc_options_normalize", "kc_kernel_src", "KC_KERNEL_SRC_INIT", k->version,
                             KC_KERNEL_SRC_VERSION);
    if (!vrc) vrc = kc_kernel_src_arrays_ok_("kc_options_normalize", k);
    if (vrc) return vrc;
    if (k->include_digest)
        return kc_err(KC_EINVAL, "include_digest is no longer accepted: kcache does not trust a digest of a folder it "
                                 "cannot see (a header edited inside it would be a stale hit); " HOW_TO_GIVE_HEADERS);
    kc_buf b = {0};
    for (size_t i = 0; i < k->noptions; i++) {
        const char *a = k->options[i];
        size_t n, vn;
        if (!a) return kc_buf_free(&b), kc_err(KC_EINVAL, "option %zu is NULL", i);
        const char *t = trim(a, &n);
        if (memchr(t, '\n', n)) return kc_buf_free(&b), kc_err(KC_EINVAL, "option %zu holds a newline", i);
        opt o;
        opt_parse(t, n, &o);
        int splits = 0;
        for (size_t s = 0; s < KC_ARRAY_LEN(split_value) && !splits; s++) splits = is(&o, split_value[s]);
        if (splits && !o.value && o.dashes && i + 1 < k->noptions && k->options[i + 1]) {
            const char *v = trim(k->options[i + 1], &vn);
            int ptxas = is(&o, "Xptxas") || is(&o, "ptxas-options");
            if (vn && !memchr(v, '\n', vn) && (v[0] != '-' || ptxas)) o.value = v, o.value_len = vn, o.joined = 1, i++;
        }
        int rc = check_option(k, &o);
        if (rc) return kc_buf_free(&b), rc;
        kc_buf_put(&b, o.text, o.len);
        if (o.joined) kc_buf_put(&b, "=", 1), kc_buf_put(&b, o.value, o.value_len);
        kc_buf_put(&b, "\n", 1);
    }
    if (b.failed) return kc_buf_free(&b), kc_err(KC_ENOMEM, "options: out of memory");
    *out = kc_buf_take_str(&b);
    return *out ? KC_OK : kc_err(KC_ENOMEM, "options: out of memory");
}

/* ---- for nvrtc.c (options.h) ---- */

int kc_options_missing_header(const char *log, char *name, size_t name_size, char *from, size_t from_size) {
    static const char *const says[] = {"could not open source file \"", "cannot open source file \""};
    const char *hit = NULL, *after = NULL;
    for (size_t i = 0; log && i < KC_ARRAY_LEN(says); i++) {
        const char *h = strstr(log, says[i]);
        if (h && (!hit || h < hit)) hit = h, after = h + strlen(says[i]);
    }
    if (!hit) return 0;
    const char *end = strchr(after, '"');
    if (!end) return 0;
    snprintf(name, name_size, "%.*s", (int)(end - after), after);
    /* The place starts that line: "FILE(LINE): catastrophic error: ..." */
    if (from_size) from[0] = '\0';
    const char *line = hit;
    while (line > log && line[-1] != '\n') line--;
    const char *close = strstr(line, "): ");
    if (close && close < hit) {
        const char *open = close;
        while (open > line && *open != '(') open--;
        if (*open == '(' && open > line)
            snprintf(from, from_size, "%.*s:%.*s", (int)(open - line), line, (int)(close - open - 1), open + 1);
    }
    return 1;
}

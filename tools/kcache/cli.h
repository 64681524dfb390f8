/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h — what the commands of the `kcache` tool share: the command record, the global
 * settings, and the helpers more than one command uses (errors and usage, the option loop,
 * opening the cache, sizes and times for people, the lookup printer, manifests, bundle reports,
 * and the three kinds of stored object: graph entries, images, unit records).
 *
 * The one idea: a command is a record (name, usage, help, run) defined in its own
 * cmd_<name>.c; main.c parses the global options into a cli_settings and hands it to the
 * command, which opens the cache only through cli_open_cache().  So the command line reaches
 * the library as kc_options fields (KC_OPEN_OPTIONS_WIN), never through the environment.
 *
 * Only the files of tools/kcache/ include this.  Nothing here may change the process's
 * environment or read it: a setting is read from the library's settings (kc_cache_config,
 * kc_config_process; kcache/config.h), never with getenv (tests/arch/check_getenv.sh).
 */
#ifndef KC_TOOL_CLI_H
#define KC_TOOL_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kcache.h"

/** Exit codes: 1 the command failed or found a problem; 2 bad usage. */
#define EXIT_PROBLEM 1
#define EXIT_USAGE 2

/**
 * The global options, as given on the command line (borrowed from argv; NULL/0: not given).
 * They win over the environment (KCACHE_DIR, KCACHE_REMOTE); the environment fills the rest,
 * and --allow-unsafe-dir adds to KCACHE_ALLOW_UNSAFE_DIR.
 */
typedef struct cli_settings {
    const char *dir;      /**< --cache-dir DIR */
    const char *remote;   /**< --remote URL ("" turns a KCACHE_REMOTE off) */
    int allow_unsafe_dir; /**< --allow-unsafe-dir */
} cli_settings;

/**
 * One option of a command, or a global one: a row of the table that the parser (cli_parse),
 * --help, the man page (`kcache help --man`) and the shell completions are all made from.
 * A table ends with a row whose name is NULL.  -h/--help is every command's without a row.
 */
typedef struct cli_opt {
    const char *name; /**< the long name, without "--" */
    int letter;       /**< the short letter ('j' for -j), or 0 */
    const char *arg;  /**< the value's name (SIZE, FILE, DIR, ...), or NULL for a flag */
    const char *help; /**< one line */
} cli_opt;

/** What a command's operands are, for the completions. */
enum { CLI_OPERANDS_NONE, CLI_OPERANDS_FILES, CLI_OPERANDS_WORDS };

/** One command: its name, one-line usage, help text (for COMMAND --help), entry point, options
 *  (NULL: none but --help) and what its operands are (CLI_OPERANDS_*: files are completed as files). */
typedef struct cli_cmd {
    const char *name;
    const char *usage;
    const char *help;
    /** Run with argv[0] the command's name; returns the process's exit code. */
    int (*run)(const cli_settings *s, int argc, char **argv);
    const cli_opt *opts;
    int operands;
} cli_cmd;

/** The commands in the order --help lists them, NULL-terminated (main.c). */
extern const cli_cmd *const cli_commands[];
/** The global options (main.c): the rows before the command. */
extern const cli_opt cli_global_opts[];

/** The most options one command has (its table's rows). */
#define CLI_MAX_OPTS 24
/** The most operands cli_parse keeps. */
#define CLI_MAX_OPERANDS 8

/** What cli_parse found: per row of the command's table, the value given (the last one; "" for
 *  a flag given; NULL: not given), and the operands in their order (borrowed from argv). */
typedef struct cli_args {
    const cli_cmd *cmd;
    const char *val[CLI_MAX_OPTS];
    const char *pos[CLI_MAX_OPERANDS];
    int npos;
} cli_args;

/**
 * Parse a command's arguments (argv[0] its name) with getopt_long by its table: --opt=value and
 * --opt value, -xVALUE and -x VALUE, options anywhere, "--" ends them; at most `max_pos`
 * operands.  -h/--help prints the help and exits 0; a usage error is said (cli_usage_error) and
 * exits EXIT_USAGE.  Returns only when the arguments fit the table.
 */
void cli_parse(const cli_cmd *c, int argc, char **argv, int max_pos, cli_args *a);

/** The value of option `name` (a row of a->cmd's table) or NULL when not given; a flag's is "". */
const char *cli_arg(const cli_args *a, const char *name);

/** Whether option `name` was given. */
int cli_flag(const cli_args *a, const char *name);

/**
 * A duration for people into seconds: a whole number and one unit, s (seconds), m (minutes),
 * h (hours), d (days) or w (weeks): "30s", "90m", "12h", "7d", "2w".  0, or -1 for anything else
 * (no unit, 0, a sign, a fraction, spaces, a value past 100 years).
 */
int cli_parse_duration(const char *s, uint64_t *out);

/** Print a table's options, one per line ("  -j, --jobs N   help"), to f. */
void cli_print_opts(FILE *f, const cli_opt *t);

/** The main usage (the commands and the global options), the environment section with it. */
void cli_main_usage(FILE *f);

/** The man page kcache(1), in troff (-man), made from the tables (cli_man.c). */
void cli_print_man(FILE *f);

/** The completion script for `shell` ("bash" or "zsh"), from the tables (cli_complete.c); 0, or -1 for another shell. */
int cli_print_completion(FILE *f, const char *shell);

/** The commands, one per cmd_<name>.c; main.c lists them in the order --help shows. */
extern const cli_cmd cli_cmd_stats, cli_cmd_ls, cli_cmd_show, cli_cmd_verify, cli_cmd_gc, cli_cmd_clear, cli_cmd_get,
    cli_cmd_prewarm, cli_cmd_export, cli_cmd_import, cli_cmd_explain, cli_cmd_demo, cli_cmd_toolchain, cli_cmd_coverage,
    cli_cmd_keygen, cli_cmd_sign;

/** The environment section of `kcache --help`, generated from the settings table (cmd_config.c). */
void cli_config_env_help(FILE *f);

/** Whether the boolean setting `id` (KC_CONFIG_*) is on in `cfg` (a cache's or the process's). */
int cli_setting_on(const kc_config *cfg, int id);

/** Print "kcache: WHAT: <last error> (<status>)" to stderr; returns EXIT_PROBLEM. */
int cli_fail(const char *what);

/** Print "kcache NAME: MSG[: ARG]; try 'kcache help NAME'" and the command's usage to stderr;
 *  returns EXIT_USAGE.  Every usage error of every command is said through here. */
int cli_usage_error(const cli_cmd *c, const char *msg, const char *arg);

/** Print the command's usage and help to stdout (for --help). */
void cli_print_help(const cli_cmd *c);

/**
 * Open the cache the global settings name: kc_options{dir, remote, KC_OPEN_OPTIONS_WIN, and
 * KC_OPEN_ALLOW_UNSAFE_DIR when asked}.  Every command opens its cache here.  Returns 0, or
 * EXIT_PROBLEM after reporting the error.
 */
int cli_open_cache(const cli_settings *s, kc_cache **out);

/** Under --json (`json` nonzero), a command that fails (`rc` nonzero) before its own object prints
 *  {"result": "failed", "status", "error"} on stdout: `msg` (status KC_EINVAL), else the library's
 *  last error.  Returns rc. */
int cli_json_failed(int json, int rc, const char *msg);

/**
 * Open the cache as cli_open_cache does, to look at it only (KC_OPEN_INSPECT, kcache/cache.h): nothing
 * is created or written in the directory, KCACHE_DISABLE does not hide what it holds, and another
 * user's cache that only its owner can write is accepted.  A directory that does not exist is an
 * empty cache, said in one line on stderr (as ccache: the command goes on, exit 0).  Every command
 * that only reads opens its cache here.  Returns 0, or EXIT_PROBLEM after reporting the error.
 */
int cli_open_cache_readonly(const cli_settings *s, kc_cache **out);

/** `b` bytes for people: "512 B", "1.5 KiB", … */
void cli_human_size(uint64_t b, char *out, size_t cap);

/** Seconds since the epoch as ISO 8601 UTC ("2024-05-01T12:00:00Z"). */
void cli_iso_time(int64_t t, char *out, size_t cap);

/**
 * `s` as it may reach a terminal: every byte below 0x20, 0x7f and every byte above it as
 * \xNN, so a name from an imported entry carries no escape sequence to the terminal (the
 * JSON writer escapes on its own).  Written into `buf` (cut to `cap`), which is returned.
 */
const char *cli_shown(const char *s, char *buf, size_t cap);

/** Write `s` to `f` as cli_shown() would, of any length; with `keep_lines`, a newline and a tab
 *  stay as they are (a message, an NVRTC log), every other control byte is escaped. */
void cli_put_shown(FILE *f, const char *s, int keep_lines);

/** What the common option loop found. */
typedef struct cli_opts {
    int json;
    const char *max_size;
    const char *positional[4];
    int npos;
} cli_opts;

/**
 * The common option loop: --help/-h (prints help, exits 0), --json when allow_json,
 * --max-size[=]SIZE when allow_max, up to max_pos positional arguments; anything else is a
 * usage error (exits 2).
 */
void cli_parse_opts(const cli_cmd *c, int argc, char **argv, cli_opts *o, int allow_json, int allow_max, int max_pos);

/** The arguments of get and explain: SPEC, --arch TARGET, --json, --help; 0 or an exit code. */
int cli_spec_args(const cli_cmd *c, int argc, char **argv, const char **arch, cli_opts *o);

/** Look one graph up: compile-only for `arch`, else load on GPU 0 (and release it). */
int cli_lookup(kc_cache *c, const kc_graph_desc *d, const char *arch, kc_graph_info *info);

/** Print a lookup's result: one line for people, or one JSON object (with `units` and
 *  `units_compiled`: the compile units the lookup needed, and how many of them it compiled). */
void cli_print_info(const char *name, const kc_graph_info *i, int json);

/**
 * Load a manifest (and apply --arch `arch`, when given).  0, or the exit code after
 * reporting the error as "kcache WHO: …": a bad manifest is EXIT_USAGE.
 */
int cli_manifest_open(const char *who, const char *path, const char *arch, kc_manifest **out);

/**
 * [Note: target check] in kcache/target.h, before any lookup or compile: `name` (from `where`:
 * "--arch") against the targets of the toolchain cache `c` uses (kc_cache_targets) — or, with
 * `stored` (a command that only reads entries of any toolchain: export), against every target
 * kcache knows (its table, else this host's NVRTC).  0, or EXIT_USAGE after "kcache WHO: unknown
 * target 'NAME' (WHERE): …, the supported targets".
 */
int cli_target_check(kc_cache *c, const char *who, const char *name, const char *where, int stored);

/** cli_target_check of every target of `m`: from "--arch" when `arch` was given, else from
 *  "manifest PATH". */
int cli_manifest_targets_check(kc_cache *c, const char *who, const kc_manifest *m, const char *path, const char *arch);

/* ---- coverage (kc_manifest_covered in kcache/prewarm.h): coverage and export --manifest ---- */

/** One line per missing variant of `r` to `f`: "kcache WHO: missing GRAPH TARGET: REASON". */
void cli_coverage_missing(FILE *f, const char *who, const kc_coverage_report *r);

/** The fields of a coverage report in a JSON object being written (the comma rule of json.h):
 *  manifest, device (a device's), targets, graphs, variants, hits, covered (true when nothing is
 *  missing), missing [{graph, target, reason}], results [{graph, target, key, result, variant}]. */
void cli_coverage_json(FILE *f, int *first, const char *manifest, const kc_coverage_report *r);

/* ---- the objects a cache holds ([Note: two levels] in kcache/entry.h) ---- */

/** What a stored object is, told by its variant: "img" an image, "unit" a unit record, any
 *  other a graph entry (its variant is its target). */
typedef enum cli_kind { CLI_GRAPH, CLI_IMAGE, CLI_UNIT } cli_kind;
cli_kind cli_kind_of(const char *variant);

/** 32 bytes as 64 lowercase hex digits (an image's SHA-256). */
void cli_sha256_hex(const uint8_t sha[32], char out[65]);

/** Where image `ref` stands, read without counting, refreshing or quarantining anything. */
typedef enum cli_image_state {
    CLI_IMAGE_PRESENT, /**< the local copy is the image referred to (XXH3-128), or the remote has it */
    CLI_IMAGE_MISSING, /**< neither the local directory nor the remote has it */
    CLI_IMAGE_CORRUPT  /**< the local copy is unreadable or is not the image referred to */
} cli_image_state;
cli_image_state cli_image_state_of(kc_cache *c, const kc_image_ref *ref);

/** One kernel of a graph entry's KERNELS section: its name, lowered name and image (an index into IMAGES). */
typedef struct cli_kernel {
    const char *name, *lowered;
    uint32_t image;
} cli_kernel;

/**
 * The kernels of a graph entry, read as strictly as the library reads them (the KERNELS grammar
 * is at the top of src/graph/kernels.c; kc_entry_kernels does not say which image a kernel
 * runs): every image index below `nimages`.  *out (one allocation with its strings; free())
 * has *n kernels.  KC_ECORRUPT on any defect (kc_error_last() is not set: the caller says it),
 * KC_MISS without a KERNELS section, KC_ENOMEM.
 */
int cli_entry_kernels(const kc_entry *e, size_t nimages, cli_kernel **out, size_t *n);

/** The names of the kernels of `k` (n of them) that run image `image`, ", "-separated and shown
 *  through cli_shown(), into `buf` (cut to `cap`); "" when none does. */
const char *cli_kernels_of_image(const cli_kernel *k, size_t n, uint32_t image, char *buf, size_t cap);

#endif

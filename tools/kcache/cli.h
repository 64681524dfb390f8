/*
 * cli.h — what the commands of the `kcache` tool share: the command record, the global
 * settings, and the helpers more than one command uses (errors and usage, the option loop,
 * opening the cache, sizes and times for people, the lookup printer, manifests, bundle reports).
 *
 * The one idea: a command is a record (name, usage, help, run) defined in its own
 * cmd_<name>.c; main.c parses the global options into a cli_settings and hands it to the
 * command, which opens the cache only through cli_open_cache().  So the command line reaches
 * the library as kc_options fields (KC_OPEN_OPTIONS_WIN), never through the environment.
 *
 * Only the files of tools/kcache/ include this.  Nothing here may change the process's
 * environment; reading it (getenv) is fine.
 */
#ifndef KC_TOOL_CLI_H
#define KC_TOOL_CLI_H

#include <stddef.h>
#include <stdint.h>

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

/** One command: its name, one-line usage, help text (for COMMAND --help) and entry point. */
typedef struct cli_cmd {
    const char *name;
    const char *usage;
    const char *help;
    /** Run with argv[0] the command's name; returns the process's exit code. */
    int (*run)(const cli_settings *s, int argc, char **argv);
} cli_cmd;

/** The commands, one per cmd_<name>.c; main.c lists them in the order --help shows. */
extern const cli_cmd cli_cmd_stats, cli_cmd_ls, cli_cmd_show, cli_cmd_verify, cli_cmd_gc, cli_cmd_clear,
    cli_cmd_get, cli_cmd_prewarm, cli_cmd_export, cli_cmd_import, cli_cmd_explain, cli_cmd_demo, cli_cmd_toolchain;

/** Print "kcache: WHAT: <last error> (<status>)" to stderr; returns EXIT_PROBLEM. */
int cli_fail(const char *what);

/** Print "kcache NAME: MSG[: ARG]" and the command's usage to stderr; returns EXIT_USAGE. */
int cli_usage_error(const cli_cmd *c, const char *msg, const char *arg);

/** Print the command's usage and help to stdout (for --help). */
void cli_print_help(const cli_cmd *c);

/**
 * Open the cache the global settings name: kc_options{dir, remote, KC_OPEN_OPTIONS_WIN, and
 * KC_OPEN_ALLOW_UNSAFE_DIR when asked}.  Every command opens its cache here.  Returns 0, or
 * EXIT_PROBLEM after reporting the error.
 */
int cli_open_cache(const cli_settings *s, kc_cache **out);

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
void cli_parse_opts(const cli_cmd *c, int argc, char **argv, cli_opts *o, int allow_json, int allow_max,
                    int max_pos);

/** The arguments of get and explain: SPEC, --arch TARGET, --json, --help; 0 or an exit code. */
int cli_spec_args(const cli_cmd *c, int argc, char **argv, const char **arch, cli_opts *o);

/** Look one graph up: compile-only for `arch`, else load on GPU 0 (and release it). */
int cli_lookup(kc_cache *c, const kc_graph_desc *d, const char *arch, kc_graph_info *info);

/** Print a lookup's result: one line for people, or one JSON object. */
void cli_print_info(const char *name, const kc_graph_info *i, int json);

/**
 * Load a manifest (and apply --arch `arch`, when given).  0, or the exit code after
 * reporting the error as "kcache WHO: …": a bad manifest is EXIT_USAGE.
 */
int cli_manifest_open(const char *who, const char *path, const char *arch, kc_manifest **out);

/** Print an export's or import's report ("exported", "imported", "verified"). */
void cli_print_bundle_report(const char *what, const kc_bundle_report *r, int json, const char *file);

#endif

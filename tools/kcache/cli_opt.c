/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_opt.c — the option parser every command of the `kcache` tool shares: getopt_long driven by
 * the command's table of options (cli_opt rows in its cmd_<name>.c), the options part of --help,
 * and the one way a usage error is said.
 *
 * The one idea: a command declares its options as rows (long name, short letter, value name, one
 * line of help) and never walks argv itself, so every command takes the same forms — --opt=value
 * and --opt value, -xVALUE and -x VALUE, options before or after the operands, "--" ending them —
 * and the same table gives --help, the man page and the completions (cli_man.c, cli_complete.c).
 * Adding an option to a command is one row and the line of its body that reads it (cli_arg).
 *
 * Only the files of tools/kcache/ call this.  Must not: print anything but a command's help
 * (stdout) or a usage error (stderr), or return after either (it exits 0 or EXIT_USAGE).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_usage_error(const cli_cmd *c, const char *msg, const char *arg) {
    static char m[4 * 4096 + 1], v[4 * 4096 + 1]; /* shown escaped: a value from the command line or a file */
    fprintf(stderr, "kcache %s: %s%s%s; try 'kcache help %s'\nusage: %s\n", c->name, cli_shown(msg, m, sizeof m),
            arg ? ": " : "", arg ? cli_shown(arg, v, sizeof v) : "", c->name, c->usage);
    return EXIT_USAGE;
}

void cli_print_opts(FILE *f, const cli_opt *t) {
    for (; t && t->name; t++) {
        char left[64];
        snprintf(left, sizeof left, "%c%c%c --%s%s%s", t->letter ? '-' : ' ', t->letter ? t->letter : ' ',
                 t->letter ? ',' : ' ', t->name, t->arg ? " " : "", t->arg ? t->arg : "");
        fprintf(f, "  %-28s %s\n", left, t->help);
    }
}

static const cli_opt help_row[] = {{"help", 'h', NULL, "show this help and exit"}, {NULL, 0, NULL, NULL}};

void cli_print_help(const cli_cmd *c) {
    printf("usage: %s\n\n%s\n\noptions:\n", c->usage, c->help);
    cli_print_opts(stdout, c->opts);
    cli_print_opts(stdout, help_row);
}

static int rows_of(const cli_opt *t) {
    int n = 0;
    while (t && t[n].name) n++;
    return n;
}

/* The row of a short letter, or -1. */
static int row_of_letter(const cli_opt *t, int n, int ch) {
    for (int i = 0; i < n; i++)
        if (t[i].letter && t[i].letter == ch) return i;
    return -1;
}

/* Say what getopt_long refused (ch '?' or ':') and exit EXIT_USAGE. */
static void refused(const cli_cmd *c, int ch, char **argv, int n) {
    const char *word = argv[optind - 1];
    char what[160];
    int row = optopt >= 256 ? optopt - 256 : row_of_letter(c->opts, n, optopt);
    if (ch == ':' && row >= 0 && optopt < 256)
        snprintf(what, sizeof what, "option '-%c' needs a value (%s)", optopt, c->opts[row].arg);
    else if (ch == ':' && row >= 0)
        snprintf(what, sizeof what, "option '--%s' needs a value (%s)", c->opts[row].name, c->opts[row].arg);
    else if (ch == ':' && optopt == 'h') snprintf(what, sizeof what, "option '%s' needs a value", word);
    else if (row >= 0 && optopt >= 256) snprintf(what, sizeof what, "option '--%s' takes no value", c->opts[row].name);
    else if (optopt && optopt < 256) snprintf(what, sizeof what, "unknown option '-%c'", optopt);
    else snprintf(what, sizeof what, "unknown or ambiguous option '%.*s'", (int)strcspn(word, "="), word);
    exit(cli_usage_error(c, what, NULL));
}

void cli_parse(const cli_cmd *c, int argc, char **argv, int max_pos, cli_args *a) {
    memset(a, 0, sizeof *a);
    a->cmd = c;
    int n = rows_of(c->opts);
    if (n > CLI_MAX_OPTS) abort(); /* a table longer than cli_args holds: a bug of the tool */
    struct option lo[CLI_MAX_OPTS + 2];
    char so[3 * CLI_MAX_OPTS + 8] = "-:h"; /* '-': operands in order as 1; ':': a missing value is ':' */
    size_t k = strlen(so);
    for (int i = 0; i < n; i++) {
        lo[i] = (struct option){c->opts[i].name, c->opts[i].arg ? required_argument : no_argument, NULL, 256 + i};
        if (c->opts[i].letter) {
            so[k++] = (char)c->opts[i].letter;
            if (c->opts[i].arg) so[k++] = ':';
        }
    }
    so[k] = '\0';
    lo[n] = (struct option){"help", no_argument, NULL, 'h'};
    lo[n + 1] = (struct option){NULL, 0, NULL, 0};
    optind = 0; /* GNU: start afresh (main.c parsed the global options with it) */
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, so, lo, NULL)) != -1) {
        if (ch == 'h' && row_of_letter(c->opts, n, 'h') < 0) {
            cli_print_help(c);
            exit(0);
        } else if (ch == 1) {
            if (a->npos >= max_pos || a->npos >= CLI_MAX_OPERANDS)
                exit(cli_usage_error(c, "unexpected argument", optarg));
            a->pos[a->npos++] = optarg;
        } else if (ch == '?' || ch == ':') {
            refused(c, ch, argv, n);
        } else {
            int row = ch >= 256 ? ch - 256 : row_of_letter(c->opts, n, ch);
            a->val[row] = c->opts[row].arg ? optarg : "";
        }
    }
    for (; optind < argc; optind++) { /* after "--": operands only */
        if (a->npos >= max_pos || a->npos >= CLI_MAX_OPERANDS)
            exit(cli_usage_error(c, "unexpected argument", argv[optind]));
        a->pos[a->npos++] = argv[optind];
    }
}

const char *cli_arg(const cli_args *a, const char *name) {
    int n = rows_of(a->cmd->opts);
    for (int i = 0; i < n; i++)
        if (strcmp(a->cmd->opts[i].name, name) == 0) return a->val[i];
    fprintf(stderr, "kcache %s: no option '--%s' in its table (a bug of the tool)\n", a->cmd->name, name);
    abort();
}

int cli_flag(const cli_args *a, const char *name) { return cli_arg(a, name) != NULL; }

int cli_parse_duration(const char *s, uint64_t *out) {
    static const struct {
        char unit;
        uint64_t seconds;
    } units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}, {'w', 7 * 86400}};
    uint64_t v = 0;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > 100ull * 366 * 86400) return -1; /* past a century in any unit: a typo */
    }
    if (i == 0 || s[i] == '\0' || s[i + 1] != '\0' || v == 0) return -1;
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++)
        if (s[i] == units[k].unit && v <= 100ull * 366 * 86400 / units[k].seconds) {
            *out = v * units[k].seconds;
            return 0;
        }
    return -1;
}

/* ---- the former loop, for callers not yet on tables: --json, --max-size, operands ---- */

static const cli_opt legacy_opts[] = {
    {"json", 0, NULL, "print one JSON value"},
    {"max-size", 0, "SIZE", "the size limit"},
    {NULL, 0, NULL, NULL},
};

void cli_parse_opts(const cli_cmd *c, int argc, char **argv, cli_opts *o, int allow_json, int allow_max, int max_pos) {
    cli_cmd shown = *c;
    cli_opt t[3];
    int n = 0;
    if (allow_json) t[n++] = legacy_opts[0];
    if (allow_max) t[n++] = legacy_opts[1];
    t[n] = legacy_opts[2];
    shown.opts = t;
    cli_args a;
    cli_parse(&shown, argc, argv, max_pos, &a);
    memset(o, 0, sizeof *o);
    o->json = allow_json && cli_flag(&a, "json");
    o->max_size = allow_max ? cli_arg(&a, "max-size") : NULL;
    for (int i = 0; i < a.npos && i < 4; i++) o->positional[o->npos++] = a.pos[i];
}

static const cli_opt spec_opts[] = {
    {"arch", 0, "TARGET", "the target"},
    {"json", 0, NULL, "print one JSON object"},
    {NULL, 0, NULL, NULL},
};

int cli_spec_args(const cli_cmd *c, int argc, char **argv, const char **arch, cli_opts *o) {
    cli_cmd shown = *c;
    if (!shown.opts) shown.opts = spec_opts; /* the command's own table (get_opts, explain_opts) */
    cli_args a;
    cli_parse(&shown, argc, argv, 1, &a);
    memset(o, 0, sizeof *o);
    if (cli_arg(&a, "arch")) *arch = cli_arg(&a, "arch");
    o->json = cli_flag(&a, "json");
    for (int i = 0; i < a.npos; i++) o->positional[o->npos++] = a.pos[i];
    if (o->npos != 1) return cli_usage_error(c, "a SPEC file is required", NULL);
    return 0;
}

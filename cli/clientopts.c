/* SPDX-License-Identifier: MIT */
/* The options every client subcommand shares (--mount, --owner, --json) and how a refusal
 * and its reasons are printed. */
#include "cli/clientopts.h"
#include "client/client-internal.h"
#include "snapshot/kind.h"
#include "common/utf8.h"
#include "common/util.h"
#include "common/values.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cli_default_mount(void)
{
        const char *m = getenv("SNAPFS_MOUNT");

        return m && *m ? m : CLI_DEFAULT_MOUNT;
}


/* --kind KIND: content, signature or manifest (snapshot/kind.h), as the SNAPFS_OPT_KIND_*
 * flag of opts (replacing any kind already set). 0, or -EINVAL. */
static int parse_kind(const char *s, struct snapfs_options *opts)
{
        static const unsigned flag[SNAP_KIND_COUNT] = {
                [SNAP_KIND_CONTENT] = SNAPFS_OPT_KIND_CONTENT,
                [SNAP_KIND_SIGNATURE] = SNAPFS_OPT_KIND_SIGNATURE,
                [SNAP_KIND_MANIFEST] = SNAPFS_OPT_KIND_MANIFEST,
        };
        int k = snap_kind_from_name(s);

        if (k < 0)
                return -EINVAL;
        opts->flags &= ~(SNAPFS_OPT_KIND_CONTENT | SNAPFS_OPT_KIND_SIGNATURE |
                         SNAPFS_OPT_KIND_MANIFEST);
        opts->flags |= flag[k];
        return 0;
}

int cli_take_kind(const char *cmd, bool json, const char *value, unsigned *kinds)
{
        int k = snap_kind_from_name(value);

        if (k < 0)
                return cli_usage_error(cmd, json, false,
                                       "--kind: '%s' is not content, signature or manifest",
                                       value);
        *kinds |= SFC_KIND_BIT(k);
        return -1;
}

/* --owner UID: a uid of common/values.h as the owner opts trust. 0, or -EINVAL/-ERANGE. */
static int parse_owner(const char *s, struct snapfs_options *opts)
{
        uint32_t uid;
        int r = value_parse_uid(s, &uid);

        if (r < 0)
                return r;
        opts->flags |= SNAPFS_OPT_OWNER;
        opts->owner = uid;
        return 0;
}

/* $SNAPFS_OWNER when set and not empty, else NULL. */
static const char *env_owner(void)
{
        const char *s = getenv("SNAPFS_OWNER");

        return s && *s ? s : NULL;
}

/* Applies $SNAPFS_OWNER to opts: 0, or 2 after reporting a usage error (as JSON too when
 * json) that it is not a uid. */
static int apply_env_owner(const char *cmd, bool json, struct snapfs_options *opts)
{
        const char *s = env_owner();
        int r = s ? parse_owner(s, opts) : 0;

        if (r < 0)
                return cli_bad_value(cmd, json, "SNAPFS_OWNER", VALUE_UID, s, r, 0,
                                     VALUE_UID_MAX, NULL);
        return 0;
}

/* True when argv asks for --json before any "--": a usage error found before the parser
 * reached --json is then reported as JSON too. */
bool cli_json_requested(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        return false;
                if (strcmp(argv[i], "--json") == 0)
                        return true;
        }
        return false;
}

static const struct cli_option *find_option(const struct cli_option *options, int val)
{
        for (const struct cli_option *o = options; o && (o->name || o->help); o++)
                if (o->name && o->val == val)
                        return o;
        return NULL;
}

static bool has_option(const struct cli_option *options, int val)
{
        return find_option(options, val) != NULL;
}

/* Keeps the value of o (CLI_STORE) in arg. */
static void store(const struct cli_option *o, void *arg, const char *value)
{
        char *at = (char *)arg + o->store - 1;

        if (o->arg == CLI_ARG_NONE)
                *(bool *)at = true;
        else
                *(const char **)at = value;
}

/* getopt_long's table and short options (':' first, '+' too with CLI_STOP_AT_OPERAND in
 * features) of options: 0 and both malloc'd, or -ENOMEM. */
static int long_options(const struct cli_option *options, unsigned features, struct option **out,
                        char **shorts)
{
        size_t n = 0, k = 0;
        struct option *v;
        char *s;

        for (const struct cli_option *o = options; o->name || o->help; o++)
                n++;
        v = calloc(n + 1, sizeof(*v));
        s = calloc(n + 3, 1);
        if (!v || !s) {
                free(v);
                free(s);
                return -ENOMEM;
        }
        if (features & CLI_STOP_AT_OPERAND)
                s[k++] = '+';
        s[k++] = ':';
        n = 0;
        for (const struct cli_option *o = options; o->name || o->help; o++) {
                if (!o->name)
                        continue;
                v[n++] = (struct option){ o->name,
                                          o->arg == CLI_ARG_NONE ? no_argument
                                                                 : required_argument,
                                          NULL, o->val };
                if (o->short_name)
                        s[k++] = o->short_name;
        }
        *out = v;
        *shorts = s;
        return 0;
}

/* Appends o's label ("-h, --help", "--mount MNT") to the n bytes of label (size bytes),
 * after ", " when not the first; truncated, never past size. */
static void add_label(char *label, size_t size, size_t *n, const struct cli_option *o)
{
        char s[8] = "";
        int w;

        if (o->short_name)
                snprintf(s, sizeof(s), "-%c, ", o->short_name);
        w = snprintf(label + *n, size - *n, "%s%s--%s%s%s", *n ? ", " : "", s, o->name,
                     o->metavar ? " " : "", o->metavar ?: "");
        *n = w < 0 || (size_t)w >= size - *n ? size - 1 : *n + (size_t)w;
}

/* One row: its labels joined (the options before whose help is NULL), the help lines at
 * column. Returns the last option of the row. */
static const struct cli_option *print_row(FILE *f, const struct cli_option *o, int column)
{
        char label[512];
        size_t n = 0;
        const char *line;

        for (;; o++) {
                add_label(label, sizeof(label), &n, o);
                if (o->help || !o[1].name)
                        break;
        }
        if ((int)n + 4 <= column)
                fprintf(f, "  %-*s", column - 2, label);
        else
                fprintf(f, "  %s\n%*s", label, column, "");
        line = o->help ?: "";
        do {
                size_t len = strcspn(line, "\n");
                fprintf(f, "%.*s\n", (int)len, line);
                line += len;
                if (*line == '\n' && *++line)
                        fprintf(f, "%*s", column, "");
        } while (*line);
        return o;
}

void cli_print_help(FILE *f, const struct cli_help *h)
{
        int column = h->column ?: 16;

        fputs(h->head, f);
        for (const struct cli_option *o = h->options; o->name || o->help; o++) {
                if (!o->name)
                        fprintf(f, "%s\n", o->help);
                else
                        o = print_row(f, o, column);
        }
        if (h->tail)
                fputs(h->tail, f);
        if (h->more)
                h->more(f);
}

void cli_print_option_list(FILE *f, const struct cli_option *options)
{
        static const char *const kind[] = {
                [CLI_ARG_NONE] = "flag", [CLI_ARG_VALUE] = "value", [CLI_ARG_FILE] = "file",
                [CLI_ARG_DIR] = "dir", [CLI_ARG_CHOICE] = "choice",
        };

        for (const struct cli_option *o = options; o->name || o->help; o++)
                if (o->name)
                        fprintf(f, "--%s %s%s%s\n", o->name, kind[o->arg],
                                o->choices ? " " : "", o->choices ?: "");
}

/* One common option: -1 to go on, or the exit code (printed). */
static int common_option(const struct cli_spec *spec, int ch, const char *value,
                         struct cli_common *c)
{
        int r;

        switch (ch) {
        case CLI_OPT_MOUNT:
                c->mount_arg = value;
                return -1;
        case CLI_OPT_OWNER:
                if ((spec->features & CLI_OWNER_ANY) && strcmp(value, "any") == 0) {
                        c->owner_any = true;
                        c->owner_from_env = false;
                        c->opts.flags &= ~(unsigned)SNAPFS_OPT_OWNER;
                        return -1;
                }
                r = parse_owner(value, &c->opts);
                if (r < 0)
                        return cli_bad_value(spec->cmd, c->json, "--owner", VALUE_UID, value, r,
                                             0, VALUE_UID_MAX,
                                             spec->features & CLI_OWNER_ANY
                                                     ? "; or any (no owner check)"
                                                     : NULL);
                c->owner_any = false;
                c->owner_from_env = false;
                return -1;
        case CLI_OPT_INSECURE_OWN_MOUNT:
                c->opts.flags |= SNAPFS_OPT_INSECURE_OWN_MOUNT;
                return -1;
        case CLI_OPT_TRUST_USER_NAMESPACE:
                c->opts.flags |= SNAPFS_OPT_TRUST_USER_NAMESPACE;
                return -1;
        case CLI_OPT_JSON:
                c->json = true;
                return -1;
        case CLI_OPT_KIND:
                if (parse_kind(value, &c->opts) < 0)
                        return cli_usage_error(spec->cmd, c->json, false,
                                               "--kind: '%s' is not content, signature or "
                                               "manifest", value);
                return -1;
        default:
                return cli_usage_error(spec->cmd, c->json, true, "unknown option");
        }
}

int cli_parse(const struct cli_spec *spec, int argc, char **argv, struct cli_common *c)
{
        _cleanup_free_ struct option *longopts = NULL;
        _cleanup_free_ char *shorts = NULL;
        const bool mount_operand = spec->features & CLI_MOUNT_OPERAND;
        const struct cli_option *options = spec->options ?: spec->help->options;
        const struct cli_option *o;
        int ch, r, left;

        *c = (struct cli_common){
                .json = has_option(options, CLI_OPT_JSON) &&
                        cli_json_requested(argc, argv),
        };
        if (long_options(options, spec->features, &longopts, &shorts) < 0)
                return cli_system_error(spec->cmd, c->json, -ENOMEM, "options");
        /* $SNAPFS_OWNER first, a uid in every command (never "any": a stray variable must not
         * switch the owner check off); --owner wins. */
        if (has_option(options, CLI_OPT_OWNER)) {
                if (apply_env_owner(spec->cmd, c->json, &c->opts) != 0)
                        return 2;
                c->owner_from_env = c->opts.flags & SNAPFS_OPT_OWNER;
        }
        optind = 1;
        opterr = 0;
        while ((ch = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
                if (ch == CLI_OPT_HELP) {
                        cli_print_help(stdout, spec->help);
                        return 0;
                }
                if (ch == '?' || ch == ':')
                        return cli_getopt_error(spec->cmd, c->json, true, argv, ch);
                o = ch >= CLI_OWN_OPTION ? find_option(options, ch) : NULL;
                if (o && o->store) {
                        store(o, spec->arg, optarg);
                        continue;
                }
                r = ch >= CLI_OWN_OPTION ? spec->option(spec->arg, ch, optarg, c->json)
                                         : common_option(spec, ch, optarg, c);
                if (r >= 0)
                        return r;
        }
        left = argc - optind;
        if (mount_operand && left == 1 && spec->min_operands == 0) {
                /* The mount as an operand: the older spelling, kept as an alias of --mount. */
                if (c->mount_arg &&
                    cli_same_mount(spec->cmd, c->json, true, argv[optind], c->mount_arg) < 0)
                        return 2;
                c->mount_arg = argv[optind++];
                left--;
        }
        if (left < spec->min_operands || (spec->max_operands >= 0 && left > spec->max_operands)) {
                if (left > 0 && spec->max_operands == 0)
                        return cli_usage_error(spec->cmd, c->json, true,
                                               "unexpected argument '%s' (use --mount)",
                                               argv[optind]);
                return cli_usage_error(spec->cmd, c->json, true, "expected %s",
                                       spec->what);
        }
        return -1;
}

int cli_parse_mount(const struct cli_spec *spec, int argc, char **argv, struct cli_common *c,
                    char **mount)
{
        int r = cli_parse(spec, argc, argv, c);

        if (r >= 0)
                return r;
        *mount = cli_mount_path(spec->cmd, c);
        return *mount ? -1 : 2;
}

char *cli_absolute_dir(const char *path)
{
        char *out = path_make_absolute(path);
        size_t n;

        if (!out)
                return NULL;
        n = strlen(out);
        while (n > 1 && out[n - 1] == '/')
                out[--n] = '\0';
        return out;
}

int cli_same_mount(const char *cmd, bool json, bool hint, const char *operand,
                   const char *mount_arg)
{
        _cleanup_free_ char *a = cli_absolute_dir(operand), *b = cli_absolute_dir(mount_arg);

        if (!a || !b)
                return -ENOMEM;
        if (strcmp(a, b) != 0) {
                cli_usage_error(cmd, json, hint, "the mount operand '%s' and --mount '%s' "
                                "differ: give one of them", operand, mount_arg);
                return -EINVAL;
        }
        return 0;
}

char *cli_mount_path(const char *cmd, const struct cli_common *c)
{
        char *mount = cli_absolute_dir(c->mount_arg ? c->mount_arg : cli_default_mount());

        if (!mount)
                cli_system_error(cmd, c->json, negative_errno(), "--mount");
        return mount;
}


int cli_bad_value(const char *cmd, bool json, const char *what, enum value_type t,
                  const char *value, int err, uint64_t min, uint64_t max, const char *also)
{
        char why[512];

        value_error(t, value, err, min, max, why, sizeof(why));
        return cli_usage_error(cmd, json, false, "%s: %s%s", what, why, also ?: "");
}



const char *cli_key_error(const char *path, int r, bool want_private, char *buf, size_t n)
{
        if (r == -EKEYREJECTED)
                snprintf(buf, n, "%s is a private key; give its public key instead (snapfs "
                                 "keygen wrote it to %s.pub; `openssl pkey -in %s -pubout` "
                                 "prints it)", path, path, path);
        else if (r == -EINVAL)
                snprintf(buf, n, "%s is not an Ed25519 %s key in PEM", path,
                         want_private ? "private" : "public");
        else if (r == -ENOENT)
                snprintf(buf, n, "cannot read the key file %s: no such file", path);
        else if (r == -ELOOP)
                snprintf(buf, n, "cannot read the key file %s: it is a symbolic link", path);
        else
                snprintf(buf, n, "cannot read the key file %s: %s", path,
                         strerrordesc_np(-r) ?: "unknown error");
        return buf;
}

int cli_key_refused(const char *cmd, bool json, int r, const char *message)
{
        struct snapfs_report why;

        sfc_report_reset(&why);
        sfc_report_fail(&why, r, "key", "%s", message);
        fprintf(stderr, "snapfs %s: %s\n", cmd, message);
        if (json)
                cli_print_json(cli_json_result(false, strerrorname_np(-r) ?: "EIO", message,
                                               &why));
        return 2;
}

const char *cli_headline(int err, const struct snapfs_report *why)
{
        return why->n_reasons ? why->reasons[0].message : snapfs_strerror(err);
}

int cli_refusal_status(const struct snapfs_report *why)
{
        return why->n_reasons && strcmp(why->reasons[0].code, "invalid-argument") == 0 ? 2 : 1;
}

void cli_print_reasons(FILE *f, const struct snapfs_report *why)
{
        for (unsigned i = 0; i < why->n_reasons; i++)
                fprintf(f, "%s: %s\n", why->reasons[i].code, why->reasons[i].message);
        if (why->n_dropped)
                fprintf(f, "(and %u more reasons not listed)\n", why->n_dropped);
}

json_object *cli_json_strings(const char *key, ...)
{
        json_object *o = json_object_new_object();
        va_list ap;

        va_start(ap, key);
        for (; o && key; key = va_arg(ap, const char *))
                json_object_object_add(o, key, json_object_new_string(va_arg(ap, const char *)));
        va_end(ap);
        return o;
}

json_object *cli_reasons_json(const struct snapfs_report *why)
{
        json_object *list = json_object_new_array();

        for (unsigned i = 0; list && i < why->n_reasons; i++) {
                json_object *o = cli_json_strings("code", why->reasons[i].code, "message",
                                                  why->reasons[i].message, NULL);
                if (!o)
                        break;
                json_object_array_add(list, o);
        }
        return list;
}

json_object *cli_json_result(bool ok, const char *error, const char *message,
                             const struct snapfs_report *why)
{
        static const struct snapfs_report none;
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "ok", json_object_new_boolean(ok));
        json_object_object_add(o, "error", error ? json_object_new_string(error) : NULL);
        json_object_object_add(o, "message", message ? json_object_new_string(message) : NULL);
        json_object_object_add(o, "reasons", cli_reasons_json(why ? why : &none));
        return o;
}

json_object *cli_json_refusal(int err, const struct snapfs_report *why)
{
        return cli_json_result(false, strerrorname_np(-err) ?: "EIO", snapfs_strerror(err), why);
}


__attribute__((format(printf, 3, 0)))
static int report_error(const char *cmd, const char *code, const char *fmt, va_list ap,
                        bool json, const char *suffix)
{
        _cleanup_free_ char *msg = NULL, *line = NULL;

        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        if (asprintf(&line, "snapfs %s: %s%s%s", cmd, msg ?: "out of memory", suffix ? ": " : "",
                     suffix ?: "") < 0)
                line = NULL;
        fprintf(stderr, "%s\n", line ?: cmd);
        if (json)
                cli_print_json(cli_json_result(false, code, line ?: cmd, NULL));
        return 2;
}

int cli_usage_error(const char *cmd, bool json, bool hint, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        report_error(cmd, "usage", fmt, ap, json, NULL);
        va_end(ap);
        /* One line that says where the options are, not the whole usage: the error is what
         * the person needs to see. */
        if (hint)
                fprintf(stderr, "Run 'snapfs %s --help' for its options.\n", cmd);
        return 2;
}

int cli_system_error(const char *cmd, bool json, int err, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        report_error(cmd, strerrorname_np(-err) ?: "EIO", fmt, ap, json, strerror(-err));
        va_end(ap);
        return 2;
}

int cli_getopt_error(const char *cmd, bool json, bool hint, char **argv, int ch)
{
        const char *arg = optind > 0 ? argv[optind - 1] : "";

        if (ch == ':')
                return cli_usage_error(cmd, json, hint, "option '%s' needs a value", arg);
        /* An unknown long option leaves optopt 0; an unknown short one is optopt. */
        if (optopt > 0 && optopt < 0x80)
                return cli_usage_error(cmd, json, hint, "unknown option '-%c'", optopt);
        return cli_usage_error(cmd, json, hint, "unknown option '%s'", arg);
}

/* Makes every string below o valid UTF-8, as the audit log does: json-c copies bytes >= 0x80
 * as they are, so a path or a name that is not UTF-8 (--mount $'/tmp/\xff') made output that
 * strict JSON readers refuse. A string under key in an object becomes its U+FFFD form and its
 * raw bytes go, in hex, under key_hex beside it; a string in an array only becomes its U+FFFD
 * form. 0 or -ENOMEM. */
static int utf8_json(json_object *o)
{
        if (json_object_is_type(o, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(o); i++) {
                        json_object *v = json_object_array_get_idx(o, i);
                        _cleanup_free_ char *fixed = NULL, *hex = NULL;
                        int r;

                        if (!json_object_is_type(v, json_type_string)) {
                                if ((r = utf8_json(v)) < 0)
                                        return r;
                                continue;
                        }
                        r = utf8_fix(json_object_get_string(v), &fixed, &hex);
                        if (r < 0)
                                return r;
                        if (r > 0 && json_object_array_put_idx(o, i, json_object_new_string(fixed)))
                                return -ENOMEM;
                }
                return 0;
        }
        if (!json_object_is_type(o, json_type_object))
                return 0;
        /* Keys are collected (copied) first: an object must not change while it is
         * iterated. */
        {
                size_t n = (size_t)json_object_object_length(o), k = 0;
                char **keys = calloc(n + 1, sizeof(*keys));
                int r = keys ? 0 : -ENOMEM;

                if (r == 0) {
                        json_object_object_foreach(o, key, val) {
                                if (json_object_is_type(val, json_type_string)) {
                                        if (!(keys[k++] = strdup(key))) {
                                                r = -ENOMEM;
                                                break;
                                        }
                                } else if ((r = utf8_json(val)) < 0) {
                                        break;
                                }
                        }
                }
                for (size_t i = 0; i < k && r == 0; i++) {
                        _cleanup_free_ char *fixed = NULL, *hex = NULL, *hkey = NULL;
                        json_object *v;

                        if (!json_object_object_get_ex(o, keys[i], &v))
                                continue;
                        r = utf8_fix(json_object_get_string(v), &fixed, &hex);
                        if (r <= 0)
                                continue;
                        if (asprintf(&hkey, "%s_hex", keys[i]) < 0) {
                                hkey = NULL;
                                r = -ENOMEM;
                                break;
                        }
                        r = json_object_object_add(o, keys[i], json_object_new_string(fixed)) ||
                                            json_object_object_add(o, hkey,
                                                                   json_object_new_string(hex))
                                    ? -ENOMEM
                                    : 0;
                }
                for (size_t i = 0; keys && i < k; i++)
                        free(keys[i]);
                free(keys);
                return r < 0 ? r : 0;
        }
}

int cli_print_json(json_object *o)
{
        const int flags = JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE;
        int r = 0;

        if (!o)
                return -ENOMEM;
        if (utf8_json(o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        if (printf("%s\n", json_object_to_json_string_ext(o, flags)) < 0 || fflush(stdout) != 0)
                r = -EIO;
        json_object_put(o);
        return r;
}

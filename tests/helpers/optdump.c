/* SPDX-License-Identifier: MIT */
/* The daemon's table of options (fs/config/options.h) as the tests read it:
 *   optdump json      one JSON object: {"options": [{name, short, o_alias, arg, type,
 *                     metavar, min, max, default, help, command_line_only, in_file,
 *                     repeatable, limit}]}, for the checks of the man page, docs/design.md
 *                     and --help (tests/integration/test_options_doc.py)
 *   optdump example   the example config file, every key with its default, as
 *                     dist/snapfs.conf.example holds it (the same test keeps the two equal;
 *                     regenerate with `optdump example > dist/snapfs.conf.example`)
 *   optdump example KEY=VALUE...
 *                     the service's config file, dist/snapfs.conf: the same, with each KEY
 *                     given set to VALUE in its place (uncommented) and a header saying
 *                     whose file it is (regenerate it with the KEY=VALUE lines it sets) */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "fs/config/options.h"

static const char *arg_name(enum sfs_opt_arg a)
{
        return a == SFS_ARG_FLAG ? "flag" : a == SFS_ARG_PATH ? "path" : "value";
}

static int dump_json(void)
{
        json_object *root = json_object_new_object(), *list = json_object_new_array();
        char def[160], text[32];

        for (size_t i = 0; i < SFS_OPT_COUNT; i++) {
                const struct sfs_option *o = &sfs_options[i];
                json_object *j = json_object_new_object();
                bool bounded = o->arg == SFS_ARG_VALUE && o->type != VALUE_UID_LIST;

                json_object_object_add(j, "name", json_object_new_string(o->name));
                snprintf(text, sizeof(text), "%c", o->short_name);
                json_object_object_add(j, "short", o->short_name ? json_object_new_string(text)
                                                                 : NULL);
                json_object_object_add(j, "o_alias", o->o_alias ? json_object_new_string(o->o_alias)
                                                                : NULL);
                json_object_object_add(j, "arg", json_object_new_string(arg_name(o->arg)));
                json_object_object_add(j, "type", o->arg == SFS_ARG_VALUE
                                                          ? json_object_new_string(
                                                                    value_type_name(o->type))
                                                          : NULL);
                json_object_object_add(j, "metavar",
                                       o->metavar ? json_object_new_string(o->metavar) : NULL);
                value_format(o->type, o->min, text, sizeof(text));
                json_object_object_add(j, "min", bounded ? json_object_new_string(text) : NULL);
                value_format(o->type, o->max, text, sizeof(text));
                json_object_object_add(j, "max", bounded && o->max != UINT64_MAX
                                                         ? json_object_new_string(text)
                                                         : NULL);
                sfs_option_default_text(o, def, sizeof(def));
                json_object_object_add(j, "default", def[0] ? json_object_new_string(def) : NULL);
                json_object_object_add(j, "help", json_object_new_string(o->help));
                json_object_object_add(j, "command_line_only",
                                       json_object_new_boolean(o->flags &
                                                               SFS_OPTF_COMMAND_LINE_ONLY));
                json_object_object_add(j, "in_file",
                                       json_object_new_boolean(!(o->flags &
                                                                 (SFS_OPTF_COMMAND_LINE_ONLY |
                                                                  SFS_OPTF_NOT_IN_FILE))));
                json_object_object_add(j, "repeatable",
                                       json_object_new_boolean(o->flags & SFS_OPTF_REPEATABLE));
                json_object_object_add(j, "limit",
                                       json_object_new_boolean(o->flags & SFS_OPTF_LIMIT));
                json_object_array_add(list, j);
        }
        json_object_object_add(root, "options", list);
        printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                                 JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(root);
        return 0;
}

/* "# " and text, wrapped at 80 columns. */
static void comment(const char *text)
{
        const char *p = text;

        while (*p) {
                size_t len = strlen(p), cut = len;

                if (len > 78) {
                        cut = 78;
                        while (cut > 0 && p[cut] != ' ')
                                cut--;
                        if (cut == 0)
                                cut = strcspn(p, " ");
                }
                printf("# %.*s\n", (int)cut, p);
                p += cut;
                while (*p == ' ')
                        p++;
        }
}

/* The value argv gives key, or NULL. */
static const char *setting(const char *key, int argc, char **argv)
{
        size_t n = strlen(key);

        for (int i = 0; i < argc; i++)
                if (strncmp(argv[i], key, n) == 0 && argv[i][n] == '=')
                        return argv[i] + n + 1;
        return NULL;
}

static int dump_example(int argc, char **argv)
{
        char def[160], most[32], text[768];
        int used = 0;

        if (argc > 0)
                printf("# snapfs.service's configuration: the unit runs\n"
                       "#   snapfs mount --foreground --config THIS-FILE MOUNTPOINT\n"
                       "# and every other option of the daemon is here. Edit it, then\n"
                       "# `systemctl restart snapfs`. A bad line fails the start with this file's\n"
                       "# name and the line's number, and nothing is mounted (no restart loop).\n"
                       "# A snapfs@NAME.service instance reads NAME.conf beside this file\n"
                       "# (docs/deployment.md).\n"
                       "#\n");
        printf("# snapfs daemon configuration: snapfs mount --config FILE, or -o config=FILE in\n"
               "# fstab. KEY = VALUE lines, the keys named as the long options of snapfs mount\n"
               "# (snapfs(1); max-bytes or max_bytes); a flag takes yes or no; a line starting\n"
               "# with # is a comment. An option given on the command line wins over this file.\n"
               "# The file must be a regular file of root (or the daemon's uid) that no group\n"
               "# or other may write. %s\n"
               "# Generated from the daemon's table of options (fs/config/options.c).\n",
               argc > 0 ? "The service's settings are set below; every other\n"
                          "# key is there, commented out, with its default."
                        : "Every key is below, commented out, with its default.");
        for (size_t i = 0; i < SFS_OPT_COUNT; i++) {
                const struct sfs_option *o = &sfs_options[i];
                bool value = o->has_def && !o->def_text;
                struct value_uid_list list;

                if (o->flags & (SFS_OPTF_COMMAND_LINE_ONLY | SFS_OPTF_NOT_IN_FILE))
                        continue;
                sfs_option_default_text(o, def, sizeof(def));
                /* A default said in words that is also a value ("any") is written as one. */
                if (o->def_text && o->arg == SFS_ARG_VALUE && o->type == VALUE_UID_LIST)
                        value = value_parse_uid_list(def, &list) == 0;
                most[0] = '\0';
                if (o->arg == SFS_ARG_VALUE && o->type != VALUE_UID_LIST &&
                    o->max != UINT64_MAX)
                        value_format(o->type, o->max, most, sizeof(most));
                snprintf(text, sizeof(text), "%s%s%s%s%s%s%s%s", o->help,
                         o->metavar ? " [" : "", o->metavar ?: "", o->metavar ? "]" : "",
                         most[0] ? " (at most " : "", most, most[0] ? ")" : "",
                         o->flags & SFS_OPTF_REPEATABLE ? " (one line each)" : "");
                printf("\n");
                comment(text);
                if (o->has_def && o->def_text && !value) {
                        snprintf(text, sizeof(text), "default: %s", def);
                        comment(text);
                }
                if (setting(o->name, argc, argv)) {
                        printf("%s = %s\n", o->name, setting(o->name, argc, argv));
                        used++;
                } else if (o->arg == SFS_ARG_FLAG)
                        printf("#%s = no\n", o->name);
                else
                        printf("#%s =%s%s\n", o->name, value ? " " : "", value ? def : "");
        }
        if (used != argc) {
                fprintf(stderr, "optdump: a KEY=VALUE names no key of a config file\n");
                return 2;
        }
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 2 && strcmp(argv[1], "json") == 0)
                return dump_json();
        if (argc >= 2 && strcmp(argv[1], "example") == 0)
                return dump_example(argc - 2, argv + 2);
        fprintf(stderr, "usage: optdump json|example [KEY=VALUE...]\n");
        return 2;
}

/* SPDX-License-Identifier: MIT */
/* snapfs audit: does everything a snapfs mount promises hold right now? Parses the options,
 * runs the mount check and libsnapfs's audit of every snapshot (client/mount-audit.c), and
 * prints the outcome as a table or one JSON object. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "client/client-internal.h"
#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/show.h"
#include "client/mount-audit.h"
#include "snapshot/oci.h"
#include "cli/usage-table.h"
#include "common/util.h"

/* Past this many snapshots, or bytes to re-hash, a terminal gets a progress line. */
#define PROGRESS_OVER 1000
#define PROGRESS_BYTES (UINT64_C(64) << 20)
#define VERIFY_KEYS_MAX 16

enum { OPT_VERIFY_KEY = CLI_OWN_OPTION };

static const struct cli_option audit_options[] = {
        CLI_HEADING("Options:"),
        CLI_OPTION_MOUNT("MNT", CLI_HELP_MOUNT ";\n"
                                "a lone MNT operand is the same (the older spelling)"),
        CLI_OPTIONS_TRUST,
        { "verify-key", 0, CLI_ARG_FILE, "PUB", NULL,
          "also require every snapshot of content to be a layer of\n"
          "a manifest signed by the Ed25519 public key in PUB (PEM;\n"
          "repeatable), every signature envelope to verify with such a\n"
          "key and every manifest to be signed by such an envelope\n"
          "(counted apart: they are never content); each other one is a\n"
          "problem \"unsigned-snapshot\"", OPT_VERIFY_KEY },
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons (the\n"
                        "mount's findings, then every problem), mount, compliant,\n"
                        "mount_id, snapshots, bytes, checks [{check, ran, passed,\n"
                        "failed}] (null counts for a check that did not run),\n"
                        "problems [{entry, code, message}], store (null without\n"
                        "--store: {rehashed, blobs, intact, corrupt, missing, repaired,\n"
                        "set_aside, note}), usage"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_audit_help = {
        .head = "Usage: snapfs audit [--mount MNT] [--owner UID] [--insecure-own-mount]\n"
                "                    [--verify-key PUB]... [--json]\n"
                "\n"
                "Check the mount MNT, then every entry of it through the pinned mount root:\n"
                "each name is a SHA-256 (or .staging), each snapshot opens on that very mount, is\n"
                "a regular file with one link and mode 0000 on the mount's device, has an inode\n"
                "no other snapshot has, xattrs user.snapfs.sha256 and user.snapfs.binding that\n"
                "agree with its name and fstat, and content that hashes to its name (re-read and\n"
                "re-hashed). With a --store daemon, asked by the mount owner or root, the\n"
                "daemon re-hashes every blob of its store on disk and each one changed or gone\n"
                "is a problem named by its digest; asked by another uid, the store's blobs are\n"
                "not re-hashed and the output says so. Prints a summary table and every\n"
                "problem; a check that did not run says so and why. A terminal gets a progress\n"
                "line (bytes re-hashed) past " CLI_STR(PROGRESS_OVER) " snapshots or 64M.\n"
                "\n",
        .options = audit_options,
        .tail = "\n"
                "Exit status: 0 everything holds; 1 the mount is not compliant (its snapshots\n"
                "are then not audited) or a problem was found; 2 usage or system error.\n",
};

struct verify_keys {
        EVP_PKEY *keys[VERIFY_KEYS_MAX];
        size_t n;
};

/* --verify-key PUB, loaded as it comes: -1 to go on, or 2 after printing why. */
static int take_verify_key(void *arg, int val, const char *path, bool json)
{
        struct verify_keys *k = arg;
        int r;

        (void)val;
        if (k->n == VERIFY_KEYS_MAX)
                return cli_usage_error("audit", json, true, "at most %d --verify-key",
                                       VERIFY_KEYS_MAX);
        r = snap_oci_key_load(path, false, &k->keys[k->n]);
        if (r < 0) {
                char why[PATH_MAX * 3 + 200];
                return cli_key_refused("audit", json, r,
                                       cli_key_error(path, r, false, why, sizeof(why)));
        }
        k->n++;
        return -1;
}

/* A progress line, on a terminal and only past PROGRESS_OVER entries or PROGRESS_BYTES: the
 * bytes re-hashed, which is what takes the time, and the entries. */
static void progress(const struct sfc_audit_progress *p, void *ctx)
{
        char done[16], total[16];

        if (!*(bool *)ctx || (p->total_entries <= PROGRESS_OVER && p->total_bytes <= PROGRESS_BYTES))
                return;
        if (p->bytes < p->total_bytes || p->entries < p->total_entries)
                fprintf(stderr, "\r\033[Ksnapfs audit: %s of %s re-hashed (%zu of %zu entries)",
                        cli_human_size(p->bytes, done, sizeof(done)),
                        cli_human_size(p->total_bytes, total, sizeof(total)), p->entries,
                        p->total_entries);
        else
                fprintf(stderr, "\r\033[K"); /* leave the terminal as it was */
}

/* A row of the checks table: its counts, or that it did not run and why. */
static void print_check(const struct sfc_audit *a, int c, bool compliant)
{
        const char *why = c == SFC_AUDIT_STORE ? (a->store.state == SFC_AUDIT_STORE_NONE
                                                             ? "no --store"
                                                             : "not re-hashed")
                        : c == SFC_AUDIT_SIGNED || c == SFC_AUDIT_SIGNATURES
                                ? "no --verify-key"
                        : c == SFC_AUDIT_ENTRIES && compliant ? "not a scope view"
                                                              : "mount not compliant";

        if (a->ran[c])
                printf("%-26s %8u %8u\n", sfc_audit_check_names[c], a->passed[c],
                       a->failed[c]);
        else
                printf("%-26s %17s\n", sfc_audit_check_names[c], why);
}

static int print_text(const char *mount, const struct snapfs_report *why, bool compliant,
                      const struct sfc_mnt *m, const struct sfc_audit *a,
                      const struct sfc_usage *usage)
{
        printf("mount      %s: %s", mount, compliant ? "compliant" : "NOT compliant");
        if (compliant)
                printf(" (mount id %" PRIu64 ")", m->mount_id);
        printf("\n");
        cli_print_reasons(stdout, why);
        if (compliant)
                printf("snapshots  %" PRIu64 " (%" PRIu64 " bytes)\n", a->snapshots, a->bytes);
        else
                printf("snapshots  not audited: the mount is not compliant\n");
        if (a->store.state == SFC_AUDIT_STORE_REHASHED)
                printf("store      %" PRIu64 " blobs on disk re-hashed by the daemon: %" PRIu64
                       " intact (%" PRIu64 " repaired from its copy), %" PRIu64 " corrupt, %"
                       PRIu64 " missing; %" PRIu64 " set aside at its start\n",
                       a->store.blobs, a->store.intact, a->store.repaired, a->store.corrupt,
                       a->store.missing, a->store.set_aside);
        else if (a->store.state == SFC_AUDIT_STORE_NOT_REHASHED)
                printf("store      blobs on disk NOT re-hashed (%s); %" PRIu64
                       " set aside at its start\n", a->store.note, a->store.set_aside);
        if (usage) {
                printf("\n");
                cli_print_usage(stdout, usage);
        }
        printf("\n%-26s %8s %8s\n", "CHECK", "PASSED", "FAILED");
        for (int c = 0; c < SFC_AUDIT_CHECKS; c++)
                print_check(a, c, compliant);
        if (a->n_problems)
                printf("\n");
        for (size_t i = 0; i < a->n_problems; i++)
                printf("%s: %s: %s\n", a->problems[i].entry, a->problems[i].code,
                       a->problems[i].message);
        printf("\n%s\n", compliant && a->n_problems == 0 ? "audit: everything holds"
                                                           : "audit: FAILED");
        return fflush(stdout) == 0 ? 0 : -EIO;
}

/* null without --store; else whether the daemon re-hashed its blobs on disk, and what it
 * found (or why not). */
static json_object *store_json(const struct sfc_audit_store *st)
{
        json_object *o;
        bool rehashed = st->state == SFC_AUDIT_STORE_REHASHED;

        if (st->state == SFC_AUDIT_STORE_NONE || !(o = json_object_new_object()))
                return NULL;
        json_object_object_add(o, "rehashed", json_object_new_boolean(rehashed));
        json_object_object_add(o, "blobs", rehashed ? json_object_new_uint64(st->blobs) : NULL);
        json_object_object_add(o, "intact", rehashed ? json_object_new_uint64(st->intact) : NULL);
        json_object_object_add(o, "corrupt",
                               rehashed ? json_object_new_uint64(st->corrupt) : NULL);
        json_object_object_add(o, "missing",
                               rehashed ? json_object_new_uint64(st->missing) : NULL);
        json_object_object_add(o, "repaired",
                               rehashed ? json_object_new_uint64(st->repaired) : NULL);
        json_object_object_add(o, "set_aside", json_object_new_uint64(st->set_aside));
        json_object_object_add(o, "note", rehashed ? NULL : json_object_new_string(st->note));
        return o;
}

static int print_json(const char *mount, const struct snapfs_report *why, int check,
                      const struct sfc_mnt *m, const struct sfc_audit *a,
                      const struct sfc_usage *usage)
{
        const bool compliant = check == 0, ok = compliant && !a->n_problems;
        json_object *o, *checks, *problems, *reasons;

        /* Not compliant: the findings are the reasons (EMEDIUMTYPE, as every client says it).
         * Compliant with problems: the snapshots do not hold what they promise; each problem
         * is a reason too, its entry in the message. */
        o = compliant ? cli_json_result(ok, ok ? NULL : "EBADMSG",
                                        ok ? NULL : "a snapshot does not hold what it promises",
                                        NULL)
                      : cli_json_refusal(check, why);
        if (!o)
                return -ENOMEM;
        if (compliant && json_object_object_get_ex(o, "reasons", &reasons)) {
                for (size_t i = 0; i < a->n_problems; i++) {
                        json_object *p = json_object_new_object();
                        char msg[sizeof(a->problems[i].entry) + sizeof(a->problems[i].message) + 2];
                        if (!p)
                                break;
                        snprintf(msg, sizeof(msg), "%s: %s", a->problems[i].entry,
                                 a->problems[i].message);
                        json_object_object_add(p, "code", json_object_new_string(a->problems[i].code));
                        json_object_object_add(p, "message", json_object_new_string(msg));
                        json_object_array_add(reasons, p);
                }
        }
        json_object_object_add(o, "mount", json_object_new_string(mount));
        json_object_object_add(o, "compliant", json_object_new_boolean(compliant));
        json_object_object_add(o, "mount_id",
                               compliant ? json_object_new_uint64(m->mount_id) : NULL);
        json_object_object_add(o, "snapshots", json_object_new_uint64(a->snapshots));
        json_object_object_add(o, "bytes", json_object_new_uint64(a->bytes));
        checks = json_object_new_array();
        for (int c = 0; checks && c < SFC_AUDIT_CHECKS; c++) {
                json_object *row = json_object_new_object();
                if (!row)
                        break;
                json_object_object_add(row, "check", json_object_new_string(sfc_audit_check_names[c]));
                /* A check that did not run has no counts: null, never a reassuring 0. */
                json_object_object_add(row, "ran", json_object_new_boolean(a->ran[c]));
                json_object_object_add(row, "passed",
                                       a->ran[c] ? json_object_new_uint64(a->passed[c]) : NULL);
                json_object_object_add(row, "failed",
                                       a->ran[c] ? json_object_new_uint64(a->failed[c]) : NULL);
                json_object_array_add(checks, row);
        }
        json_object_object_add(o, "checks", checks);
        problems = json_object_new_array();
        for (size_t i = 0; problems && i < a->n_problems; i++) {
                json_object *p = cli_json_strings("entry", a->problems[i].entry, "code",
                                                  a->problems[i].code, "message",
                                                  a->problems[i].message, NULL);
                if (!p)
                        break;
                json_object_array_add(problems, p);
        }
        json_object_object_add(o, "problems", problems);
        json_object_object_add(o, "store", store_json(&a->store));
        json_object_object_add(o, "usage", usage ? cli_json_usage(usage) : NULL);
        return cli_print_json(o);
}

int cli_cmd_audit(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL;
        struct sfc_mnt m = SFC_MNT_INIT;
        struct cli_common co;
        struct snapfs_report why;
        struct sfc_audit a = { 0 };
        struct sfc_usage usage = { 0 }; /* what each uid holds, as the daemon counts it */
        struct verify_keys vk = { .n = 0 };
        EVP_PKEY **keys = vk.keys;
        bool compliant, tty, have_usage = false;
        int r, check;

        r = cli_parse_mount(&(struct cli_spec){ .cmd = "audit", .features = CLI_MOUNT_OPERAND,
                                                .help = &cli_audit_help,
                                                .option = take_verify_key, .arg = &vk },
                            argc, argv, &co, &mount);
        if (r >= 0) {
                for (size_t i = 0; i < vk.n; i++)
                        EVP_PKEY_free(vk.keys[i]);
                return r;
        }

        sfc_report_reset(&why);
        r = sfc_mnt_check(mount, &co.opts, &m, &why);
        check = r;
        compliant = r == 0;
        if (!compliant && r != -EMEDIUMTYPE && r != -ENOTCONN) {
                cli_print_reasons(stderr, &why);
                return cli_system_error("audit", co.json, r, "%s", mount);
        }
        sfc_audit_count(&a, SFC_AUDIT_MOUNT, compliant);

        if (compliant) {
                tty = !co.json && isatty(STDERR_FILENO);
                r = sfc_audit_mount(&m, &a, progress, &tty);
                /* A daemon that does not report usage (ENODATA) leaves the table out. */
                have_usage = r == 0 && sfc_mnt_usage(&m, &usage) == 0;
                if (r == 0 && vk.n)
                        r = sfc_audit_signed(&m, keys, vk.n, sfc_opt_limit(&co.opts), &a,
                                             &why);
                if (r < 0) {
                        fprintf(stderr, "snapfs audit: %s: %s\n", mount, strerror(-r));
                        goto out;
                }
        }

        r = co.json ? print_json(mount, &why, check, &m, &a, have_usage ? &usage : NULL)
                    : print_text(mount, &why, compliant, &m, &a, have_usage ? &usage : NULL);
        if (r < 0)
                fprintf(stderr, "snapfs audit: writing output: %s\n", strerror(-r));
out:
        r = r < 0 ? 2 : compliant && a.n_problems == 0 ? 0 : 1;
        sfc_audit_free(&a);
        sfc_usage_free(&usage);
        sfc_mnt_close(&m);
        for (size_t i = 0; i < vk.n; i++)
                EVP_PKEY_free(keys[i]);
        return r;
}

/* SPDX-License-Identifier: MIT */
/* snapfs export, import and keygen: snapshots to and from an OCI image layout (the engines
 * are in client/export.c and client/import.c; this file parses options and prints). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cli/clientopts.h"
#include "cli/commands.h"
#include "cli/show.h"
#include "client/transfer.h"
#include "common/util.h"

#define KEYS_MAX 16

struct oci_args {
        struct cli_common co;
        const char *sign;                  /* --sign KEY */
        const char *verify[KEYS_MAX];      /* --verify-key PUB, repeatable */
        size_t n_verify;
};

enum {
        OPT_SIGN = CLI_OWN_OPTION,
        OPT_VERIFY_KEY,
};

static const struct cli_option export_options[] = {
        CLI_OPTIONS_CLIENT,
        { "sign", 0, CLI_ARG_FILE, "KEY", NULL,
          "sign the manifest with the Ed25519 private key in KEY (PEM);\n"
          "the signature is a second manifest, tagged TAG.sig", OPT_SIGN,
          CLI_STORE(struct oci_args, sign) },
        CLI_OPTION_JSON("print one JSON object"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_export_help = {
        .head = "Usage: snapfs export [--mount MNT] [--owner UID] [--insecure-own-mount]\n"
                "                     [--trust-user-namespace] [--sign KEY] [--json]\n"
                "                     oci:DIR:TAG [DIGEST...]\n"
                "\n"
                "Write the snapshots DIGEST... (default: every snapshot) of the snapfs mount MNT\n"
                "into the OCI image layout DIR (created when missing), as one artifact manifest\n"
                "tagged TAG in DIR/index.json: a layer per snapshot, titled by its name. Each\n"
                "snapshot is opened verified first. skopeo copies the layout to a registry:\n"
                "  skopeo copy oci:DIR:TAG docker://HOST/NAME:TAG\n"
                "\n",
        .options = export_options,
        .tail = "\n"
                "Exit status: 0 exported; 1 refused (a snapshot did not verify); 2 usage or\n"
                "system error.\n",
};

static const struct cli_option import_options[] = {
        CLI_OPTIONS_CLIENT,
        { "verify-key", 0, CLI_ARG_FILE, "PUB", NULL,
          "publish nothing unless the manifest carries a signature\n"
          "that the Ed25519 public key in PUB (PEM) verifies; may be\n"
          "given more than once (any of them)", OPT_VERIFY_KEY },
        CLI_OPTION_JSON("print one JSON object"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_import_help = {
        .head = "Usage: snapfs import [--mount MNT] [--owner UID] [--insecure-own-mount]\n"
                "                     [--trust-user-namespace] [--verify-key PUB]... [--json]\n"
                "                     oci:DIR:TAG|oci:DIR:@sha256:<hex>\n"
                "\n"
                "Publish every layer of the manifest TAG (or the manifest of that digest) of the\n"
                "OCI image layout DIR to the snapfs mount MNT. Every layer blob is checked\n"
                "against its digest and size before any is published: one that does not match\n"
                "publishes nothing and is named. Each layer is staged under its title when that\n"
                "is a valid name. Prints one line per layer: its binding, then name=NAME.\n"
                "\n",
        .options = import_options,
        .tail = "\n"
                "Exit status: 0 published; 1 refused (a blob or the manifest does not match,\n"
                "unsigned, wrong key, bad signature, or the mount refused); 2 usage or system\n"
                "error (no such layout or tag).\n",
};

static const struct cli_option keygen_options[] = {
        CLI_HEADING("Options:"),
        CLI_OPTION_JSON("print one JSON object: ok, error, message, reasons,\n"
                        "private_key, public_key, key"),
        CLI_OPTION_HELP,
        CLI_OPTION_END,
};

const struct cli_help cli_keygen_help = {
        .head = "Usage: snapfs keygen [--json] KEY\n"
                "\n"
                "Write a new Ed25519 key pair: the private key to KEY (PEM, mode 0600) and the\n"
                "public key to KEY.pub. Neither file may exist. The same keys come from\n"
                "  openssl genpkey -algorithm ed25519 -out KEY\n"
                "  openssl pkey -in KEY -pubout -out KEY.pub\n"
                "\n",
        .options = keygen_options,
        .tail = "\n"
                "Exit status: 0 written; 2 usage or system error.\n",
};

/* --verify-key PUB (import): -1 to go on, or 2 after printing why. */
static int take_option(void *arg, int val, const char *value, bool json)
{
        struct oci_args *a = arg;

        (void)val;
        if (a->n_verify == KEYS_MAX)
                return cli_usage_error("import", json, true, "too many --verify-key");
        a->verify[a->n_verify++] = value;
        return -1;
}

/* Parses the options of export, import (the client options and their own) or keygen (no
 * mount: --json and --help only). -1 to go on, else the exit code. */
static int parse(const char *cmd, int argc, char **argv, const struct cli_help *help,
                 struct oci_args *a)
{
        const bool keygen = strcmp(cmd, "keygen") == 0;

        *a = (struct oci_args){ 0 };
        return cli_parse(&(struct cli_spec){
                                 .cmd = cmd,
                                 .min_operands = 1,
                                 .max_operands = -1,
                                 .what = keygen ? "KEY" : "oci:DIR:TAG",
                                 .help = help,
                                 .option = take_option,
                                 .arg = a,
                         },
                         argc, argv, &a->co);
}

/* What failed, in words, by the code of the first reason: the first line of a refusal (and
 * its JSON "message"), so it never is a bare errno text. The reasons follow it. */
static const struct {
        const char *cmd, *code, *words;
} what_failed[] = {
        { "import", "key", "cannot use the key" },
        { "import", "layout", "cannot read the OCI image layout" },
        { "import", "manifest", "the manifest does not match its digest, or is not an OCI "
                                "image manifest" },
        { "import", "blob-missing", "a layer's blob is missing from the layout" },
        { "import", "blob-mismatch", "a layer's blob does not match its digest and size" },
        { "import", "blob", "cannot read a layer's blob" },
        { "import", "unsigned", "the manifest carries no signature (--verify-key)" },
        { "import", "wrong-key", "the manifest is signed by none of the keys given "
                                 "(--verify-key)" },
        { "import", "bad-signature", "the manifest's signature does not verify" },
        { "import", "too-big", "a layer is larger than the mount takes" },
        { "export", "key", "cannot use the signing key" },
        { "export", "layout", "cannot write the OCI image layout" },
        { "export", "invalid-argument", "bad arguments" },
        { "export", "sign", "cannot sign the manifest" },
        { "export", "open", "a snapshot to export is not on the mount" },
        { "keygen", "key", "cannot write the key pair" },
};

/* The mount check's and the publish's codes: the mount, not the layout, refused. */
static bool mount_refused(int r)
{
        return r == -EMEDIUMTYPE || r == -ENOTCONN;
}

/* A failure of an engine: 2 when the layout, the arguments or the system failed, 1 for a
 * refusal (something did not verify, or the mount said no). t (may be NULL) says how many
 * layers an import published before it failed. */
static int fail(const char *cmd, bool json, int r, const struct snapfs_report *why,
                const char *mount, const struct sfc_transfer *t)
{
        const char *code = why->n_reasons ? why->reasons[0].code : "";
        const bool import = strcmp(cmd, "import") == 0;
        int rc = (!strcmp(code, "layout") || !strcmp(code, "invalid-argument") ||
                  !strcmp(code, "io") || !strcmp(code, "key")) ? 2 : 1;
        _cleanup_free_ char *line = NULL;
        const char *words = NULL;
        size_t done = t ? t->n_items : 0;
        int k;

        for (size_t i = 0; i < ARRAY_SIZE(what_failed) && !words; i++)
                if (!strcmp(what_failed[i].cmd, cmd) && !strcmp(what_failed[i].code, code))
                        words = what_failed[i].words;
        char after[96] = "";

        /* The mount may refuse a layer after others went in: those stay published. */
        if (import)
                snprintf(after, sizeof(after), done ? "; %zu layers were published before it"
                                                    : "; nothing was published", done);
        else if (!strcmp(cmd, "export"))
                snprintf(after, sizeof(after), "; nothing was tagged");
        if (mount_refused(r))
                k = asprintf(&line, "%s is not a compliant snapfs mount%s", mount, after);
        else if (words)
                k = asprintf(&line, "%s%s", words, after);
        else if (import)
                k = asprintf(&line, "publishing to %s failed%s", mount, after);
        else if (!strcmp(cmd, "export"))
                k = asprintf(&line, "a snapshot of %s did not verify; nothing was tagged", mount);
        else
                k = asprintf(&line, "%s", snapfs_strerror(r));
        if (k < 0)
                line = NULL;
        if (json) {
                json_object *o = cli_json_result(false, strerrorname_np(-r) ?: "EIO",
                                                 line ?: snapfs_strerror(r), why);
                return cli_print_json(o) < 0 ? 2 : rc;
        }
        fprintf(stderr, "snapfs %s: %s\n", cmd, line ?: snapfs_strerror(r));
        cli_print_reasons(stderr, why);
        return rc;
}

static int load_key(const char *cmd, bool json, const char *path, bool priv, EVP_PKEY **out)
{
        char why[PATH_MAX * 3 + 200];
        int r = snap_oci_key_load(path, priv, out);

        if (r == 0)
                return 0;
        return cli_key_refused(cmd, json, r, cli_key_error(path, r, priv, why, sizeof(why)));
}

static void digest_text(const struct snap_digest *d, char out[SNAP_OCI_DIGEST_TEXT_LEN + 1])
{
        snap_oci_digest_format(d, out);
}

int cli_cmd_export(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL, *dir = NULL;
        struct sfc_transfer t;
        struct snapfs_report why;
        struct oci_args a;
        EVP_PKEY *key = NULL;
        char md[SNAP_OCI_DIGEST_TEXT_LEN + 1], hex[SNAP_DIGEST_HEX_LEN + 1];
        const char *tag;
        int r, rc = 0;

        r = parse("export", argc, argv, &cli_export_help, &a);
        if (r >= 0)
                return r;
        if (sfc_oci_ref_parse(argv[optind], &dir, &tag) < 0)
                return cli_usage_error("export", a.co.json, true,
                                       "expected oci:DIR:TAG as the first operand");
        mount = cli_mount_path("export", &a.co);
        if (!mount)
                return 2;
        if (a.sign && load_key("export", a.co.json, a.sign, true, &key) != 0)
                return 2;
        r = sfc_export(mount, &a.co.opts, dir, tag, (const char *const *)argv + optind + 1,
                       (size_t)(argc - optind - 1), key, &t, &why);
        EVP_PKEY_free(key);
        if (r < 0)
                return fail("export", a.co.json, r, &why, mount, NULL);
        digest_text(&t.manifest, md);
        if (a.co.json) {
                json_object *o = cli_json_result(true, NULL, NULL, NULL);
                json_object *list = json_object_new_array();
                char sig[SNAP_OCI_DIGEST_TEXT_LEN + 1], fp[SNAP_OCI_DIGEST_TEXT_LEN + 1];

                if (o) {
                        json_object_object_add(o, "layout", json_object_new_string(dir));
                        json_object_object_add(o, "tag", json_object_new_string(tag));
                        json_object_object_add(o, "manifest", json_object_new_string(md));
                        json_object_object_add(o, "signed", json_object_new_boolean(t.is_signed));
                        digest_text(&t.signature, sig);
                        digest_text(&t.key, fp);
                        json_object_object_add(o, "signature",
                                               t.is_signed ? json_object_new_string(sig) : NULL);
                        json_object_object_add(o, "key",
                                               t.is_signed ? json_object_new_string(fp) : NULL);
                        json_object_object_add(o, "snapshots", list);
                }
                for (size_t i = 0; list && i < t.n_items; i++)
                        json_object_array_add(list, cli_snapshot_json(&t.items[i].snap));
                rc = cli_print_json(o) < 0 ? 2 : 0;
        } else {
                printf("manifest %s oci:%s:%s (%zu snapshots)\n", md, dir, tag, t.n_items);
                if (t.is_signed) {
                        char sig[SNAP_OCI_DIGEST_TEXT_LEN + 1], fp[SNAP_OCI_DIGEST_TEXT_LEN + 1];
                        digest_text(&t.signature, sig);
                        digest_text(&t.key, fp);
                        printf("signature %s oci:%s:%s.sig key %s\n", sig, dir, tag, fp);
                }
                for (size_t i = 0; i < t.n_items; i++) {
                        snap_digest_to_hex(&t.items[i].binding.sha256, hex);
                        printf("%s%s%s\n", hex, t.items[i].snap.name[0] ? " " : "",
                               t.items[i].snap.name);
                }
                if (fflush(stdout) != 0)
                        rc = 2;
        }
        sfc_transfer_free(&t);
        return rc;
}

/* The one snapshot object, and whether the same bytes were published already. */
static json_object *item_json(const struct sfc_transfer_item *it)
{
        json_object *s = cli_snapshot_json(&it->snap);

        if (s)
                json_object_object_add(s, "already_published",
                                       json_object_new_boolean(it->already));
        return s;
}

int cli_cmd_import(int argc, char **argv)
{
        _cleanup_free_ char *mount = NULL, *dir = NULL;
        EVP_PKEY *keys[KEYS_MAX] = { 0 };
        struct sfc_transfer t;
        struct snapfs_report why;
        struct oci_args a;
        char md[SNAP_OCI_DIGEST_TEXT_LEN + 1];
        const char *ref;
        int r, rc = 0;

        r = parse("import", argc, argv, &cli_import_help, &a);
        if (r >= 0)
                return r;
        if (argc - optind != 1 || sfc_oci_ref_parse(argv[optind], &dir, &ref) < 0)
                return cli_usage_error("import", a.co.json, true,
                                       "expected one oci:DIR:TAG or oci:DIR:@sha256:<hex>");
        mount = cli_mount_path("import", &a.co);
        if (!mount)
                return 2;
        for (size_t i = 0; i < a.n_verify; i++)
                if (load_key("import", a.co.json, a.verify[i], false, &keys[i]) != 0) {
                        for (size_t k = 0; k < i; k++)
                                EVP_PKEY_free(keys[k]);
                        return 2;
                }
        r = sfc_import(mount, &a.co.opts, dir, ref, keys, a.n_verify, &t, &why);
        for (size_t i = 0; i < a.n_verify; i++)
                EVP_PKEY_free(keys[i]);
        if (r < 0) {
                rc = fail("import", a.co.json, r, &why, mount, &t);
                sfc_transfer_free(&t);
                return rc;
        }
        digest_text(&t.manifest, md);
        if (a.co.json) {
                json_object *o = cli_json_result(true, NULL, NULL, NULL);
                json_object *list = json_object_new_array();
                char fp[SNAP_OCI_DIGEST_TEXT_LEN + 1];

                digest_text(&t.key, fp);
                if (o) {
                        json_object_object_add(o, "manifest", json_object_new_string(md));
                        json_object_object_add(o, "signed", json_object_new_boolean(t.is_signed));
                        json_object_object_add(o, "key",
                                               t.is_signed ? json_object_new_string(fp) : NULL);
                        json_object_object_add(o, "snapshots", list);
                }
                for (size_t i = 0; list && i < t.n_items; i++)
                        json_object_array_add(list, item_json(&t.items[i]));
                rc = cli_print_json(o) < 0 ? 2 : 0;
        } else {
                for (size_t i = 0; i < t.n_items; i++) {
                        char text[SNAPFS_BINDING_TEXT_MAX];

                        snapfs_binding_format(&t.items[i].snap.binding, text, sizeof(text));
                        printf("%s%s%s\n", text, t.items[i].snap.name[0] ? " name=" : "",
                               t.items[i].snap.name);
                }
                if (fflush(stdout) != 0)
                        rc = 2;
        }
        sfc_transfer_free(&t);
        return rc;
}

/* Writes len bytes to a new file path (O_EXCL|O_NOFOLLOW: never over an existing file or
 * through a planted symlink) with mode. */
static int write_new(const char *path, const char *buf, size_t len, mode_t mode)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                      mode);

        if (fd < 0)
                return negative_errno();
        while (len > 0) {
                ssize_t k = write(fd, buf, len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? negative_errno() : -EIO;
                buf += k;
                len -= (size_t)k;
        }
        return fsync(fd) < 0 ? negative_errno() : 0;
}

int cli_cmd_keygen(int argc, char **argv)
{
        _cleanup_free_ char *priv = NULL, *pub = NULL, *pubpath = NULL;
        char fp[SNAP_OCI_DIGEST_TEXT_LEN + 1];
        struct snap_digest d;
        struct oci_args a;
        EVP_PKEY *key = NULL;
        size_t plen, qlen;
        const char *path;
        int r;

        r = parse("keygen", argc, argv, &cli_keygen_help, &a);
        if (r >= 0)
                return r;
        if (argc - optind != 1)
                return cli_usage_error("keygen", a.co.json, true, "expected one KEY");
        path = argv[optind];
        if (asprintf(&pubpath, "%s.pub", path) < 0)
                return 2;
        r = snap_oci_key_generate(&key);
        if (r == 0)
                r = snap_oci_key_to_pem(key, true, &priv, &plen);
        if (r == 0)
                r = snap_oci_key_to_pem(key, false, &pub, &qlen);
        if (r == 0)
                r = snap_oci_key_fingerprint(key, &d);
        EVP_PKEY_free(key);
        if (r == 0 && (r = write_new(path, priv, plen, 0600)) == 0 &&
            (r = write_new(pubpath, pub, qlen, 0644)) < 0)
                unlink(path);
        if (priv)
                OPENSSL_cleanse(priv, plen);
        if (r < 0) {
                struct snapfs_report why;
                sfc_report_reset(&why);
                sfc_report_fail(&why, r, "key", "writing %s: %s", path, strerror(-r));
                fail("keygen", a.co.json, r, &why, NULL, NULL);
                return 2;
        }
        digest_text(&d, fp);
        if (a.co.json) {
                json_object *o = cli_json_result(true, NULL, NULL, NULL);
                if (o) {
                        json_object_object_add(o, "private_key", json_object_new_string(path));
                        json_object_object_add(o, "public_key", json_object_new_string(pubpath));
                        json_object_object_add(o, "key", json_object_new_string(fp));
                }
                return cli_print_json(o) < 0 ? 2 : 0;
        }
        printf("%s %s key %s\n", path, pubpath, fp);
        return fflush(stdout) != 0 ? 2 : 0;
}

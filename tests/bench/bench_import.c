/* SPDX-License-Identifier: MIT */
/* Item 7 of scripts/bench.sh: `snapfs import` of 100 snapshots of 4 KiB from an OCI image
 * layout, beside publishing the same bytes with `snapfs put`, one process per snapshot.
 * Each round has bytes of its own (never "already published") and unlinks what it published
 * afterwards, outside the timed region.
 *
 *   bench_import --snapfs PATH [--csv FILE] [--count N] [--size BYTES] [--rounds N] */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/bench/benchutil.h"
#include "snapshot/oci.h"
#include "common/util.h"

struct cfg {
        const char *snapfs;
        const char *csv;
        unsigned count, size, rounds;
        char base[64];
};

/* Runs argv, output discarded; dies unless it exits 0. */
static void run(char *const *argv)
{
        int status, fd;
        pid_t pid = fork();

        if (pid < 0)
                bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
                fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        dup2(fd, STDOUT_FILENO);
                }
                execv(argv[0], argv);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                bench_die("%s %s failed", argv[0], argv[1]);
}

/* Writes round r's snapshots: as files (for put) and into a layout tagged "r<r>". */
static void prepare(const struct cfg *c, unsigned r, char (*files)[300], char *layout_ref,
                    size_t ref_len, struct snap_digest *digests)
{
        struct snap_oci_layout l = SNAP_OCI_LAYOUT_INIT;
        struct snap_oci_manifest m = { .artifact_type = (char *)SNAP_OCI_ARTIFACT_SNAPSHOTS };
        struct snap_oci_desc *layers = calloc(c->count, sizeof(*layers)), md;
        char layout[128], tag[32], title[32];
        uint8_t *buf = malloc(c->size);
        int fd;

        if (!layers || !buf)
                bench_die("out of memory");
        snprintf(layout, sizeof(layout), "%s/layout", c->base);
        if (snap_oci_layout_open(layout, SNAP_OCI_CREATE, &l) < 0)
                bench_die("layout %s", layout);
        for (unsigned i = 0; i < c->count; i++) {
                bench_fill(buf, c->size, 0x1e0 + r, i);
                if (snap_oci_blob_write(&l, buf, c->size, &digests[i]) < 0)
                        bench_die("blob write");
                snprintf(title, sizeof(title), "cfg-%u.json", i);
                layers[i] = (struct snap_oci_desc){ .media_type = (char *)SNAP_OCI_MEDIA_SNAPSHOT,
                                                    .digest = digests[i], .size = c->size,
                                                    .title = strdup(title) };
                snprintf(files[i], 300, "%s/put-%u-%u", c->base, r, i);
                fd = open(files[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd < 0 || write(fd, buf, c->size) != (ssize_t)c->size)
                        bench_die("%s: %s", files[i], strerror(errno));
                close(fd);
        }
        snap_oci_desc_empty_config(&m.config);
        m.layers = layers;
        m.n_layers = c->count;
        snprintf(tag, sizeof(tag), "r%u", r);
        if (snap_oci_manifest_write(&l, &m, &md) < 0 || snap_oci_tag(&l, &md, tag) < 0)
                bench_die("manifest");
        snprintf(layout_ref, ref_len, "oci:%s:%s", layout, tag);
        for (unsigned i = 0; i < c->count; i++)
                free(layers[i].title);
        free(layers);
        free(buf);
        snap_oci_layout_close(&l);
}

static void unlink_all(const struct bench_daemon *d, const struct snap_digest *digests,
                       unsigned n)
{
        char hex[SNAP_DIGEST_HEX_LEN + 1];

        for (unsigned i = 0; i < n; i++) {
                char p[512];

                snap_digest_to_hex(&digests[i], hex);
                snprintf(p, sizeof(p), "%s/%s", d->mnt, hex);
                if (unlink(p) < 0)
                        bench_die("unlink %s: %s", p, strerror(errno));
        }
}

static void usage(void)
{
        fprintf(stderr, "usage: bench_import --snapfs PATH [--csv FILE] [--count N] "
                        "[--size BYTES] [--rounds N]\n");
        exit(2);
}

int main(int argc, char **argv)
{
        static const struct option longopts[] = {
                { "snapfs", required_argument, NULL, 's' },
                { "csv", required_argument, NULL, 'c' },
                { "count", required_argument, NULL, 'n' },
                { "size", required_argument, NULL, 'z' },
                { "rounds", required_argument, NULL, 'r' },
                { NULL, 0, NULL, 0 },
        };
        struct cfg c = { .count = 100, .size = 4096, .rounds = 11 };
        struct bench_series imp = { 0 }, put = { 0 };
        struct bench_daemon d;
        char mnt[128], ref[256], mnt_opt[160], size[32], audit[128];
        const char *opts[] = { "--audit-log", audit, NULL };
        int ch;

        while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                switch (ch) {
                case 's': c.snapfs = optarg; break;
                case 'c': c.csv = optarg; break;
                case 'n': c.count = (unsigned)strtoul(optarg, NULL, 10); break;
                case 'z': c.size = (unsigned)strtoul(optarg, NULL, 10); break;
                case 'r': c.rounds = (unsigned)strtoul(optarg, NULL, 10); break;
                default: usage();
                }
        }
        if (!c.snapfs || !c.count || !c.size || !c.rounds)
                usage();
        snprintf(c.base, sizeof(c.base), "/tmp/snapfs-bench-import-XXXXXX");
        if (!mkdtemp(c.base))
                bench_die("mkdtemp: %s", strerror(errno));
        snprintf(mnt, sizeof(mnt), "%s/mnt", c.base);
        snprintf(audit, sizeof(audit), "%s/import.audit", c.base);
        if (bench_daemon_start(&d, c.snapfs, mnt, -1, opts) < 0)
                bench_die("daemon");
        if (c.csv && bench_csv_open(c.csv) < 0)
                bench_die("csv %s", c.csv);
        snprintf(mnt_opt, sizeof(mnt_opt), "--mount=%s", mnt);

        for (unsigned r = 0; r < c.rounds; r++) {
                char (*files)[300] = calloc(c.count, sizeof(*files));
                struct snap_digest *digests = calloc(c.count, sizeof(*digests));
                long long t0;

                if (!files || !digests)
                        bench_die("out of memory");
                prepare(&c, r, files, ref, sizeof(ref), digests);
                /* Alternate which goes first, so neither always meets a warmer daemon. */
                for (int k = 0; k < 2; k++) {
                        bool do_import = (k == 0) == (r % 2 == 0);
                        t0 = bench_now_ns();
                        if (do_import) {
                                run((char *const[]){ (char *)c.snapfs, "import", mnt_opt, ref,
                                                     NULL });
                        } else {
                                for (unsigned i = 0; i < c.count; i++)
                                        run((char *const[]){ (char *)c.snapfs, "put", mnt_opt,
                                                             files[i], NULL });
                        }
                        /* The first round warms caches: not counted. */
                        if (r > 0)
                                bench_series_add(do_import ? &imp : &put,
                                                 (double)(bench_now_ns() - t0) / 1e6);
                        unlink_all(&d, digests, c.count);
                }
                for (unsigned i = 0; i < c.count; i++)
                        unlink(files[i]);
                free(files);
                free(digests);
        }
        snprintf(size, sizeof(size), "%ux%uKiB", c.count, c.size / 1024);
        bench_emit(&(struct bench_row){
                .item = "7",
                .what = "import from OCI layout",
                .size = size,
                .placement = "free",
                .snapfs = "snapfs import",
                .baseline = "snapfs put x N",
                .snapfs_value = bench_series_median(&imp),
                .baseline_value = bench_series_median(&put),
                .unit = "ms",
                .target = "",
                .runs = (int)c.rounds - 1,
                .note = "",
        });
        bench_series_free(&imp);
        bench_series_free(&put);
        bench_csv_close();
        if (bench_daemon_stop(&d) != 0)
                bench_die("daemon did not stop cleanly");
        {
                char cmd[128];
                snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", c.base);
                if (system(cmd) != 0)
                        bench_die("cleanup of %s", c.base);
        }
        return 0;
}

// SPDX-License-Identifier: MIT
// What the tests share: the package under test and a real snapfs daemon on a real mount.
// They run as root inside a private mount namespace (tests/integration/test_node_client.py
// starts them so), and each file stops the daemon it started.
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createRequire } from "node:module";

const here = path.dirname(new URL(import.meta.url).pathname);
const build = process.env.SNAPFS_BUILD ?? path.join(here, "..", "..", "..", "build");
export const SNAPFS = path.join(build, "cli", "snapfs");
const require = createRequire(import.meta.url);
/** The package as the build laid it out (or SNAPFS_NODE_PACKAGE). */
export const snapfs = require(process.env.SNAPFS_NODE_PACKAGE ?? path.join(build, "client", "node"));

/** `snapfs ARGS...`: { status, stdout, stderr }. */
export function cli(...args) {
  const r = spawnSync(SNAPFS, args, { encoding: "utf8", timeout: 60000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Starts `snapfs mount -f --allow-other` on a fresh directory; stop() unmounts it. */
export async function startDaemon(...opts) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "snapfs-node-"));
  fs.chmodSync(dir, 0o755);
  const mount = path.join(dir, "mnt");
  fs.mkdirSync(mount);
  // Its standard error (audit events, any sanitizer report) to a file the wrapper reads.
  const err = fs.openSync(path.join(dir, "daemon.stderr"), "w");
  const proc = spawn(SNAPFS, ["mount", "-f", "--allow-other", ...opts, mount],
                     { stdio: ["ignore", "pipe", err] });
  fs.closeSync(err);
  let out = "";
  proc.stdout.setEncoding("utf8");
  while (!out.includes("\n")) {
    const [chunk] = await Promise.race([once(proc.stdout, "data"),
                                        once(proc, "exit").then(() => [null])]);
    if (chunk === null) {
      throw new Error(`snapfs mount exited: ${out}` +
                      fs.readFileSync(path.join(dir, "daemon.stderr"), "utf8"));
    }
    out += chunk;
  }
  if (!out.startsWith("snapfs: serving")) throw new Error(`snapfs mount: ${out}`);
  proc.stdout.resume();
  return {
    dir, mount,
    view(name) {
      fs.mkdirSync(path.join(dir, "views"), { recursive: true });
      return path.join(dir, "views", name);
    },
    async stop() {
      const exited = once(proc, "exit");
      proc.kill("SIGTERM");
      const [code] = await exited;
      const log = fs.readFileSync(path.join(dir, "daemon.stderr"), "utf8");
      fs.rmSync(dir, { recursive: true, force: true });
      if (code !== 0) throw new Error(`snapfs exited ${code} on SIGTERM:\n${log}`);
      for (const marker of ["runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer"])
        if (log.includes(marker)) throw new Error(`sanitizer report from the daemon:\n${log}`);
    },
  };
}

/** The sha256 of bytes, hex. */
export async function sha256(data) {
  const { createHash } = await import("node:crypto");
  return createHash("sha256").update(data).digest("hex");
}

/** The error a promise rejects with; fails when it resolves. */
export async function refusal(promise) {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error("expected a refusal, got a result");
}

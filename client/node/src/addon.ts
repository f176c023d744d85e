// SPDX-License-Identifier: MIT
/**
 * The Node-API addon (native/): where it is found, and the version check before its first
 * use. The addon compiles libsnapfs's struct layouts in and refuses, as it loads, a library
 * of another version; this side refuses an addon of another version than this package.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

import type { RawSnapshot } from "./snapshot";
import type { NativeOptions } from "./options";
import type { Reason } from "./errors";
import type { Scope } from "./scopes";

export interface RawOpen {
  fd: number;
  snapshot: RawSnapshot;
  mountId: string;
}

/** A scope as the addon hands it over: what the API returns, and the view's device as a
 *  number. */
export type RawScope = Scope & { devNumber: number | null };

export type RawGrant = RawSnapshot & { entry: string | null; seenInView: boolean };

export interface RawSpec {
  name: string;
  view: string;
  uids: number[];
  gid: number | null;
  publish: boolean;
  untilPid: number | null;
  limits: { maxSnapshots: number | null; maxBytes: number | null; maxStaging: number | null;
            maxStagingBytes: number | null; minBytes: number | null };
}

/** The addon's functions (native/snapfs_node.c). */
export interface Native {
  readonly version: string;
  readonly libraryVersion: string;
  readonly napiVersion: number;
  publish(mount: string, data: Uint8Array, name: string | null,
          o: NativeOptions): Promise<RawSnapshot & { alreadyPublished: boolean }>;
  publishForScope(mount: string, scope: string, entry: string | null, data: Uint8Array,
                  name: string | null,
                  o: NativeOptions): Promise<RawSnapshot & { alreadyPublished: boolean }>;
  openBinding(mount: string, binding: string, o: NativeOptions): Promise<RawOpen>;
  openEntry(view: string, entry: string, o: NativeOptions): Promise<RawOpen>;
  waitEntry(view: string, entry: string, timeoutMs: number | null,
            o: NativeOptions): Promise<RawOpen>;
  verifyReopened(fd: number, binding: string, o: NativeOptions, mountId: string): Promise<void>;
  scopeCreate(mount: string, spec: RawSpec, o: NativeOptions): Promise<RawScope>;
  scopeList(mount: string, o: NativeOptions): Promise<RawScope[]>;
  scopeShow(mount: string, name: string, o: NativeOptions): Promise<{ scope: RawScope;
                                                                      grants: RawGrant[] }>;
  scopeRemove(mount: string, name: string, o: NativeOptions): Promise<void>;
  grant(mount: string, scope: string, sha256: string, entry: string | null,
        o: NativeOptions): Promise<RawGrant>;
  revoke(mount: string, scope: string, sha256: string | null, entry: string | null,
         o: NativeOptions): Promise<void>;
  scopeBinding(mount: string, scope: string, binding: string,
               o: NativeOptions): Promise<{ view: string; snapshot: RawSnapshot }>;
  control(mount: string, request: string, o: NativeOptions): Promise<string>;
  remove(mount: string, target: string, allNamed: boolean,
         o: NativeOptions): Promise<{ removed: number; kept: number }>;
  parseBinding(text: string): RawSnapshot;
  strerror(errno: number): string;
}

export type { Reason };

/** This package's version: the addon must be the same build. */
function packageVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "package.json"), "utf8"));
  return String(pkg.version);
}

const TRIPLETS: Record<string, string> = {
  x64: "x86_64-linux-gnu", arm64: "aarch64-linux-gnu", arm: "arm-linux-gnueabihf",
  ia32: "i386-linux-gnu", ppc64: "powerpc64le-linux-gnu", s390x: "s390x-linux-gnu",
  riscv64: "riscv64-linux-gnu",
};

/** The directories of the libsnapfs.so.0 the loader's cache (ldconfig -p) names. */
function loaderDirectories(): string[] {
  for (const ldconfig of ["/sbin/ldconfig", "/usr/sbin/ldconfig"]) {
    let listing: string;
    try {
      listing = execFileSync(ldconfig, ["-p"], { encoding: "utf8", timeout: 10000,
                                                 stdio: ["ignore", "pipe", "ignore"] });
    } catch {
      continue;
    }
    const libs = [...listing.matchAll(/^\s*libsnapfs\.so\.0 \([^)]*\) => (\/.*)$/gm)];
    return [...new Set(libs.map((m) => path.dirname(m[1] as string)))];
  }
  return [];
}

/** Where an install of snapfs put its addon: LIBDIR/nodejs/snapfs/snapfs.node. */
function installedCandidates(): string[] {
  const out: string[] = [];
  try {
    // An install under any prefix whose pkg-config directory is searched.
    const libdir = execFileSync("pkg-config", ["--variable=libdir", "snapfs"],
                                { encoding: "utf8", timeout: 10000,
                                  stdio: ["ignore", "pipe", "ignore"] }).trim();
    if (libdir) out.push(path.join(libdir, "nodejs", "snapfs", "snapfs.node"));
  } catch {
    // No pkg-config, or no snapfs.pc on its path: the usual prefixes below.
  }
  // An install under a prefix of its own: scripts/install.sh tells the loader where its
  // library is (/etc/ld.so.conf.d), and the addon is in the same library directory.
  for (const dir of loaderDirectories())
    out.push(path.join(dir, "nodejs", "snapfs", "snapfs.node"));
  const triplet = TRIPLETS[process.arch];
  for (const prefix of ["/usr/local", "/usr"]) {
    if (triplet) out.push(path.join(prefix, "lib", triplet, "nodejs", "snapfs", "snapfs.node"));
  }
  return out;
}

function candidates(): string[] {
  const env = process.env["SNAPFS_NODE_ADDON"];
  if (env) return [env];
  // The package as the build or an install laid it out (the addon beside lib/), then the
  // addon of an installed snapfs, for this package installed from its source.
  return [path.join(__dirname, "..", "snapfs.node"), ...installedCandidates()];
}

let loaded: Native | null = null;

/** The addon, loaded once; throws what to do when there is none or it does not fit. */
export function native(): Native {
  if (loaded) return loaded;
  const tried = candidates();
  const found = tried.find((p) => fs.existsSync(p));
  if (!found) {
    throw new Error(
      `snapfs: no Node-API addon (snapfs.node) in ${tried.join(", ")}. Install snapfs ` +
      "(`scripts/install.sh /usr/local` from its source, or its Debian package), or set " +
      "SNAPFS_NODE_ADDON to the path of its snapfs.node");
  }
  let addon: Native;
  try {
    addon = require(found) as Native;
  } catch (e) {
    // The addon links libsnapfs.so.0 and checks its version as it loads.
    const why = e instanceof Error ? e.message : String(e);
    throw new Error(`snapfs: cannot load ${found}: ${why}. Install snapfs ` +
                    "(`scripts/install.sh /usr/local`, or its Debian package) so that the " +
                    "addon and libsnapfs.so.0 are of one version");
  }
  const want = packageVersion();
  if (addon.version !== want) {
    throw new Error(`snapfs: ${found} was built for snapfs ${addon.version}, this package is ` +
                    `${want}: install the package that came with that addon ` +
                    "(PREFIX/lib/TRIPLET/nodejs/snapfs), or set SNAPFS_NODE_ADDON to one of " +
                    `version ${want}`);
  }
  loaded = addon;
  return addon;
}

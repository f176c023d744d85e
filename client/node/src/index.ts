// SPDX-License-Identifier: MIT
/**
 * snapfs for Node.js: publish bytes to a snapfs mount, open its snapshots verified, hand them
 * to a child, manage scopes. A thin typed layer over libsnapfs (through a Node-API addon), so
 * every check is the C library's own: the mount judged by the mount id a pinned descriptor
 * reaches (fuse.snapfs, nosuid/nodev/noexec, private, exactly one mount, mounted by the owner
 * you trust: root unless `owner` names another, never your own uid unless
 * `insecureOwnMount`), the open relative to the pinned mount root, fstat against the binding,
 * the whole content hashed. Every call runs in libuv's thread pool and returns a promise.
 *
 *   import { publish, spawnVerified } from "snapfs";
 *   const s = await publish(config, { name: "mcp.json" });
 *   const child = await spawnVerified("mcp-client", ["--config", "{}"], { binding: s.binding });
 *
 * Refusals reject with SnapfsError (code, errno, finding, reasons).
 */
import { spawn } from "node:child_process";
import type { ChildProcess, SpawnOptions } from "node:child_process";
import * as fs from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { open as openFile } from "node:fs/promises";
import type { Stream } from "node:stream";
import { promisify } from "node:util";

import { native } from "./addon";
import type { RawOpen } from "./addon";
import { call, invalid } from "./errors";
import { mountOf, nativeOptions } from "./options";
import type { ReadOptions, TrustOptions } from "./options";
import { boundSnapshot, Snapshot } from "./snapshot";
import type { BoundSnapshot } from "./snapshot";
import * as scopes from "./scopes";

export { SnapfsError } from "./errors";
export type { Reason } from "./errors";
export type { Kind, ReadOptions, TrustOptions } from "./options";
export { parseUid, uidError } from "./options";
export { Grant, Snapshot } from "./snapshot";
export type { BoundSnapshot, SnapshotJSON } from "./snapshot";
export type { CreateOptions, GrantOptions, Scope, ScopeLimits } from "./scopes";
export { scopes };

/** What to open: a binding's text, a Snapshot (or `{ binding }`), or `{ entry }`: the entry of
 *  a scope's view, `mount` then being the view. */
export type Target = string | Snapshot | { binding: string } | { entry: string };

export interface PublishOptions extends TrustOptions {
  /** The snapshot's name (1-64 of [A-Za-z0-9._-], starting with neither '.' nor '_'). */
  name?: string;
  /** Publish the snapshot for this scope alone (the mount owner and root): granted to it,
   *  held by no uid, not listed on the main mount, gone with its last grant; `scope` of the
   *  result is its binding in the scope's view. */
  scope?: string;
  /** With scope: grant it under this entry name (an entry that exists moves to it). */
  entry?: string;
  /** With scope: keep a hold on the main mount too, as `snapfs put --keep` does (the
   *  snapshot is then listed there, and stays until removed). */
  keep?: boolean;
  /** The largest snapshot to publish, in bytes; default: the library's. */
  maxSize?: number;
}

/** Where a snapshot published for a scope is read: the scope, the entry it is granted under
 *  (null: by digest), the scope's view, and the snapshot as that view binds it. */
export interface PublishedScope {
  readonly name: string;
  readonly entry: string | null;
  readonly view: string;
  readonly snapshot: BoundSnapshot;
}

/** A published snapshot: its binding on the main mount (with `scope` and no `keep`, the mount
 *  owner's and root's only: nothing is listed there); with `scope`, where a sandbox of that
 *  scope reads it (not enumerable: `JSON.stringify` gives the one snapshot object). */
export interface Published extends BoundSnapshot {
  readonly scope?: PublishedScope;
}

/** A FileHandle on a snapshot that passed the verified open, and which snapshot it is. */
export type VerifiedFileHandle = FileHandle & { readonly snapshot: BoundSnapshot };

/** The child that got the verified descriptor at fd 3, and which snapshot it was. */
export type VerifiedChild = ChildProcess & { readonly snapshot: BoundSnapshot };

export type SpawnVerifiedOptions = ReadOptions & Omit<SpawnOptions, "stdio"> & {
  /** The snapshot to hand over (one of binding and entry). */
  binding?: string | Snapshot;
  /** The entry of the scope's view `mount` to hand over. */
  entry?: string;
  /** fds 0-2 (and 4 on) as for child_process.spawn; fd 3 is the snapshot's. */
  stdio?: ChildStdio | readonly (ChildStdio | number | Stream | undefined | null)[];
};

/** What child_process.spawn takes for one descriptor, by name. */
export type ChildStdio = "pipe" | "inherit" | "ignore";

/** The package's version, and libsnapfs's (the addon checks they are one). */
export function versions(): { package: string; library: string; napi: number } {
  const n = native();
  return { package: n.version, library: n.libraryVersion, napi: n.napiVersion };
}

function bytesOf(data: Buffer | Uint8Array | string): Uint8Array {
  if (typeof data === "string") return Buffer.from(data, "utf8");
  if (data instanceof Uint8Array) return data;
  throw invalid("data must be a Buffer, a Uint8Array or a string");
}

/**
 * Publishes the bytes (a string as UTF-8; empty is allowed) on the main mount, then opens the
 * snapshot verified: its Snapshot. `alreadyPublished`: the same bytes were there (they keep
 * their first name). With `scope`, the snapshot is published for that scope alone (granted
 * under `entry`, held by no uid: never listed on the main mount, where every reader the main
 * mount admits would read a secret) and verified through its view, where `scope.snapshot`
 * binds it; `keep` publishes it on the main mount, held there, then grants it. Never a
 * temporary file: the bytes go from this buffer to the daemon.
 */
export async function publish(data: Buffer | Uint8Array | string,
                              o: PublishOptions = {}): Promise<Published> {
  if (o.entry !== undefined && o.scope === undefined) throw invalid("entry needs scope");
  if (o.keep !== undefined && typeof o.keep !== "boolean") throw invalid("keep must be a boolean");
  if (o.keep && o.scope === undefined) throw invalid("keep needs scope");
  if (o.entry !== undefined) scopes.checkedEntry(o.entry);
  const bytes = bytesOf(data);
  const mount = mountOf(o);
  const opts = nativeOptions(o);
  if (o.scope === undefined) {
    const raw = await call(() => native().publish(mount, bytes, o.name ?? null, opts));
    return boundSnapshot(raw, raw.alreadyPublished);
  }
  const name = o.scope;
  const entry = o.entry ?? null;
  const raw = o.keep
    ? await call(() => native().publish(mount, bytes, o.name ?? null, opts))
    : await call(() => native().publishForScope(mount, name, entry, bytes, o.name ?? null,
                                                opts));
  const s: Published = boundSnapshot(raw, raw.alreadyPublished);
  if (o.keep) await call(() => native().grant(mount, name, raw.sha256, entry, opts));
  const binding = s.binding;
  const v = await call(() => native().scopeBinding(mount, name, binding, opts));
  const inView = boundSnapshot({ ...raw, dev: v.snapshot.dev, ino: v.snapshot.ino,
                                 binding: v.snapshot.binding });
  const scope: PublishedScope = Object.freeze({ name, entry, view: v.view, snapshot: inView });
  Object.defineProperty(s, "scope", { value: scope, enumerable: false });
  return s;
}

function bindingOf(target: Target): string | null {
  if (typeof target === "string") return target;
  if (target instanceof Snapshot) return target.binding;
  if ("binding" in target) return target.binding;
  return null;
}

/** The verified open of a target: the descriptor (yours to close), its snapshot. */
async function openTarget(target: Target, o: ReadOptions): Promise<RawOpen> {
  const opts = nativeOptions(o, true);
  const mount = mountOf(o);
  if (typeof target === "object" && target !== null && "entry" in target &&
      !(target instanceof Snapshot)) {
    // A granted digest's own name (64 lowercase hex) opens too, as the view lists it.
    const entry = /^[0-9a-f]{64}$/.test(target.entry) ? target.entry
      : scopes.checkedEntry(target.entry);
    return call(() => native().openEntry(mount, entry, opts));
  }
  const binding = bindingOf(target);
  if (typeof binding !== "string") throw invalid("the target has no binding to open");
  return call(() => native().openBinding(mount, binding, opts));
}

const read = promisify(fs.read);
const close = promisify(fs.close);

/** Everything fd holds, read from offset 0 to its end (no file position used). */
async function readAll(fd: number, size: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let off = 0;
  for (;;) {
    // One more byte than the verified size: its end is seen in one read.
    const buf = Buffer.alloc(Math.min(Math.max(size - off + 1, 1), 1 << 20));
    const { bytesRead } = await read(fd, buf, 0, buf.length, off);
    if (bytesRead === 0) return Buffer.concat(chunks, off);
    chunks.push(buf.subarray(0, bytesRead));
    off += bytesRead;
  }
}

/**
 * Opens the target verified, as a FileHandle. Node cannot wrap the verified descriptor itself
 * in a FileHandle, so the handle's descriptor is that file opened again through
 * /proc/self/fd, which reaches the same mount and file (never a path in the mount); it is
 * then verified itself before it is returned: on the mount the verified open judged (by
 * mount id), fstat against the binding, the whole content hashed again. Close it when done.
 */
export async function openVerified(target: Target,
                                   o: ReadOptions = {}): Promise<VerifiedFileHandle> {
  const opened = await openTarget(target, o);
  let handle: FileHandle | undefined;
  try {
    handle = await openFile(`/proc/self/fd/${opened.fd}`, "r");
    const h = handle;
    const opts = nativeOptions(o, true);
    await call(() => native().verifyReopened(h.fd, opened.snapshot.binding as string, opts,
                                             opened.mountId));
    Object.defineProperty(h, "snapshot", { value: boundSnapshot(opened.snapshot),
                                           enumerable: true });
    return h as VerifiedFileHandle;
  } catch (e) {
    await handle?.close();
    throw e;
  } finally {
    await close(opened.fd);
  }
}

/** The content of the target, read through the verified descriptor itself. */
export async function readVerified(target: Target, o: ReadOptions = {}): Promise<Buffer> {
  const opened = await openTarget(target, o);
  try {
    return await readAll(opened.fd, opened.snapshot.size);
  } finally {
    await close(opened.fd);
  }
}

function childStdio(s: SpawnVerifiedOptions["stdio"]): (ChildStdio | number | Stream)[] {
  const given = s === undefined ? [] : typeof s === "string" ? [s, s, s] : [...s];
  if (given.length > 3 && given[3] !== undefined && given[3] !== null)
    throw invalid("stdio[3]: fd 3 is the verified snapshot's descriptor");
  const out: (ChildStdio | number | Stream)[] = [];
  for (let i = 0; i < Math.max(3, given.length); i++)
    out.push(given[i] ?? (i < 3 ? "pipe" : "ignore"));
  return out;
}

/**
 * Starts `command` as child_process.spawn does, with the verified descriptor of the snapshot
 * (`binding`, or `entry` of the scope's view `mount`) at fd 3, as `snapfs exec` hands it:
 * every argument that is exactly `{}` becomes `/proc/self/fd/3`. The child is never started
 * when the open does not verify: the promise rejects with that SnapfsError. The verified
 * descriptor is closed here once the child has its own copy.
 */
export async function spawnVerified(command: string, args: readonly string[],
                                    o: SpawnVerifiedOptions): Promise<VerifiedChild> {
  const { binding, entry, mount, owner, insecureOwnMount, trustUserNamespace, maxSize, kind,
          stdio, ...spawnOptions } = o;
  if ((binding === undefined) === (entry === undefined))
    throw invalid("spawnVerified: give exactly one of binding and entry");
  const stdioOut = childStdio(stdio);
  const argv = args.map((a) => (a === "{}" ? "/proc/self/fd/3" : a));
  const trust: ReadOptions = {};
  if (mount !== undefined) trust.mount = mount;
  if (owner !== undefined) trust.owner = owner;
  if (insecureOwnMount !== undefined) trust.insecureOwnMount = insecureOwnMount;
  if (trustUserNamespace !== undefined) trust.trustUserNamespace = trustUserNamespace;
  if (maxSize !== undefined) trust.maxSize = maxSize;
  if (kind !== undefined) trust.kind = kind;
  const opened = await openTarget(entry !== undefined ? { entry } : (binding as string | Snapshot),
                                  trust);
  try {
    stdioOut.splice(3, 1, opened.fd);
    const child = spawn(command, argv, { ...spawnOptions, stdio: stdioOut });
    Object.defineProperty(child, "snapshot", { value: boundSnapshot(opened.snapshot),
                                               enumerable: true });
    return child as VerifiedChild;
  } finally {
    // uv_spawn returns once the child exec'd (or failed to): it holds its own copy. Closed
    // without yielding to the event loop, so the caller gets the child before any of its
    // events ('exit', output) can be emitted with nobody listening.
    fs.closeSync(opened.fd);
  }
}

/** What remove() takes beside the trust options: every snapshot a name names. */
export interface RemoveOptions extends TrustOptions {
  allNamed?: boolean;
}

/**
 * Removes through the mount what target names, as `snapfs rm` does: a Snapshot or a binding
 * (exactly that snapshot), a name (several only with allNamed: else ENOTUNIQ), else a digest
 * or its first 12 or more characters. kept counts snapshots that stay for their other
 * holders (a daemon with --unlink-own). Rejects with ENOENT (names nothing), EPERM (only the
 * mount's owner and root remove), ESTALE.
 */
export async function remove(target: string | Snapshot,
                             o: RemoveOptions = {}): Promise<{ removed: number; kept: number }> {
  // A snapshot without a binding (a grant of an unmounted view) is named by its digest.
  const text = typeof target === "string" ? target : target.binding ?? target.sha256;
  const opts = nativeOptions(o);
  return call(() => native().remove(mountOf(o), text, o.allNamed === true, opts));
}

/** One raw request on the main mount's control file: the daemon's reply, parsed. */
export async function control(request: object | string,
                              o: TrustOptions = {}): Promise<Record<string, unknown>> {
  const text = typeof request === "string" ? request : JSON.stringify(request);
  const opts = nativeOptions(o);
  const reply = await call(() => native().control(mountOf(o), text, opts));
  return JSON.parse(reply) as Record<string, unknown>;
}

/** The daemon's status (docs/design.md, "Health and metrics"): the mount owner and root. */
export async function status(o: TrustOptions = {}): Promise<Record<string, unknown>> {
  return (await control({ op: "status" }, o))["status"] as Record<string, unknown>;
}

export interface WaitOptions extends ReadOptions {
  /** Give up after this many seconds (rejecting with ETIMEDOUT); default: no limit. */
  timeout?: number;
}

/**
 * Waits until the entry of the scope's view `mount` moves from the snapshot it names now (a
 * rotation, or its removal: rejected with ENOENT, finding "removed"), then opens what it names
 * verified: its Snapshot. The daemon wakes the wait (a FUSE poll notice; libsnapfs's
 * snapfs_wait_entry), nothing polls on a timer; a pending wait holds one thread of libuv's
 * pool (UV_THREADPOOL_SIZE). Past `timeout` seconds: rejected with ETIMEDOUT (finding
 * "timeout").
 */
export async function wait(target: { entry: string },
                           o: WaitOptions = {}): Promise<BoundSnapshot> {
  const { timeout, ...rest } = o;
  if (typeof target !== "object" || target === null || typeof target.entry !== "string")
    throw invalid("wait: the target is { entry }");
  if (timeout !== undefined && (typeof timeout !== "number" || !(timeout >= 0) ||
                                timeout * 1000 > 2 ** 31 - 1))
    throw invalid("wait: timeout must be a number of seconds, 0 to 2147483");
  const opts = nativeOptions(rest, true);
  const ms = timeout === undefined ? null : Math.floor(timeout * 1000);
  const opened = await call(() => native().waitEntry(mountOf(rest), target.entry, ms, opts));
  try {
    return boundSnapshot(opened.snapshot);
  } finally {
    await close(opened.fd);
  }
}

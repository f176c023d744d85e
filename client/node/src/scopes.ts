// SPDX-License-Identifier: MIT
/**
 * Scopes: what one sandbox may see (docs/design.md, "Scopes"). The mount owner and root
 * control them through the main mount: each call judges it, writes one request to its
 * .control file and reads the reply. A refusal is a SnapfsError with the daemon's errno
 * (ENOENT no such scope, snapshot or grant; EEXIST name or view taken; EINVAL; EACCES not the
 * owner or root; EDQUOT, ENOSPC; EBUSY) and its message as the reason "refused".
 */
import { native } from "./addon";
import type { RawScope } from "./addon";
import { call, invalid } from "./errors";
import { mountOf, nativeOptions } from "./options";
import type { TrustOptions } from "./options";
import { Grant, Snapshot } from "./snapshot";

/** A scope as the daemon reports it: the object `snapfs scope ls --json` prints. */
export interface Scope {
  name: string;
  /** Where its view is mounted. */
  view: string;
  /** The view's device, "major:minor" (the dev of its bindings); null while the view is not
   *  mounted (unmounted from outside: the scope is there, unserved). */
  dev: string | null;
  /** The uids that may use the view (uid 0 always may). */
  uids: number[];
  gid: number | null;
  /** Whether processes in the scope may publish in its view. */
  publish: boolean;
  /** The scope goes when this process exits. */
  until_pid: number | null;
  /** null: not set (the daemon's default; for min_bytes: no minimum). */
  limits: { max_snapshots: number | null; max_bytes: number | null; max_staging: number | null;
            max_staging_bytes: number | null; min_bytes: number | null };
  /** What was published in the view itself and what it stages (what the limits count). */
  usage: { snapshots: number; bytes: number; staging: number; staging_bytes: number };
  /** How many grants it has (by digest or entry). */
  grants: number;
}

export interface ScopeLimits {
  maxSnapshots?: number;
  maxBytes?: number;
  maxStaging?: number;
  maxStagingBytes?: number;
  /** Bytes guaranteed to the scope (at most maxBytes): kept from every other scope and uid but
   * the owner; ENOSPC when the daemon cannot keep them. Unset: none, it shares what is free. */
  minBytes?: number;
}

export interface CreateOptions extends TrustOptions {
  /** The view's path, absolute, in the daemon's mount namespace (created when absent). */
  view: string;
  /** The uids that may use the view; with none and no gid: the daemon's default (root). */
  uids?: readonly number[];
  gid?: number;
  /** Let processes in the scope publish in its view. */
  publish?: boolean;
  /** A pid of this pid namespace (the daemon's): the scope goes when it exits. */
  untilPid?: number;
  limits?: ScopeLimits;
}

export interface GrantOptions extends TrustOptions {
  /** Grant under this entry name too; an entry that exists moves to the snapshot at once. */
  entry?: string;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** The entry name grammar, as a refusal states it (docs/design.md, "Entry names"). */
export const ENTRY_NAME_RULE = "1-64 of [A-Za-z0-9._-], starting with neither '.' nor '-', " +
  "and not 64 hexadecimal characters in any case (a digest's shape)";

/**
 * Whether `name` is an entry name of a scope's view: the daemon's one grammar, which
 * libsnapfs holds too (the cases of tests/vectors/names.json). ASCII only, so never a name
 * that is not UTF-8, nor one a C string would cut at a NUL.
 */
export function entryNameValid(name: unknown): boolean {
  return typeof name === "string" && /^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$/.test(name) &&
    !/^[0-9a-fA-F]{64}$/.test(name);
}

/** `entry`, or EINVAL before anything is asked when the daemon would refuse it. */
export function checkedEntry(entry: string): string {
  if (!entryNameValid(entry)) throw invalid(`not a valid entry name: ${ENTRY_NAME_RULE}`);
  return entry;
}

function scope(raw: RawScope): Scope {
  const { devNumber: _, ...rest } = raw;
  return rest;
}

/** 64 lowercase hex from a digest, a binding's text or a Snapshot. */
function digestOf(what: string | Snapshot | { sha256: string }): string {
  if (typeof what !== "string") return what.sha256;
  if (HEX64.test(what)) return what;
  try {
    return native().parseBinding(what).sha256;
  } catch {
    throw invalid(`'${what}' is neither a digest (64 lowercase hex) nor a binding`);
  }
}

/** Creates the scope `name` and mounts its view: the scope as the daemon made it. */
export async function create(name: string, o: CreateOptions): Promise<Scope> {
  if (!o || typeof o.view !== "string") throw invalid("scopes.create: view is required");
  const l = o.limits ?? {};
  const spec = { name, view: o.view, uids: [...(o.uids ?? [])], gid: o.gid ?? null,
                 publish: o.publish === true, untilPid: o.untilPid ?? null,
                 limits: { maxSnapshots: l.maxSnapshots ?? null, maxBytes: l.maxBytes ?? null,
                           maxStaging: l.maxStaging ?? null,
                           maxStagingBytes: l.maxStagingBytes ?? null,
                           minBytes: l.minBytes ?? null } };
  const opts = nativeOptions(o);
  return scope(await call(() => native().scopeCreate(mountOf(o), spec, opts)));
}

/** Every scope of the mount's daemon, with its usage. */
export async function list(o: TrustOptions = {}): Promise<Scope[]> {
  const opts = nativeOptions(o);
  return (await call(() => native().scopeList(mountOf(o), opts))).map(scope);
}

/** One scope and its grants, each the snapshot object (the binding in its view). */
export async function show(name: string, o: TrustOptions = {}):
    Promise<{ scope: Scope; grants: Grant[] }> {
  const opts = nativeOptions(o);
  const r = await call(() => native().scopeShow(mountOf(o), name, opts));
  return { scope: scope(r.scope), grants: r.grants.map((g) => new Grant(g)) };
}

/** Removes the scope: its grants go, its view is detached (open descriptors keep reading). */
export async function remove(name: string, o: TrustOptions = {}): Promise<void> {
  const opts = nativeOptions(o);
  await call(() => native().scopeRemove(mountOf(o), name, opts));
}

/** Grants the published snapshot (its digest, its binding, or a Snapshot) to the scope. */
export async function grant(name: string, digestOrBinding: string | Snapshot,
                            o: GrantOptions = {}): Promise<Grant> {
  const hex = digestOf(digestOrBinding);
  const entry = o.entry === undefined ? null : checkedEntry(o.entry);
  const opts = nativeOptions(o);
  return new Grant(await call(() => native().grant(mountOf(o), name, hex, entry, opts)));
}

/**
 * Revokes from the scope every grant of a digest (its entries included), or one entry. A
 * string of 64 lowercase hex, or a binding, is a digest (no entry has that form, as for
 * `snapfs revoke`); any other string is an entry; `{ entry }` or `{ sha256 }` says which.
 */
export async function revoke(name: string,
                             digestOrEntry: string | Snapshot | { entry: string } | { sha256: string },
                             o: TrustOptions = {}): Promise<void> {
  let sha256: string | null = null;
  let entry: string | null = null;
  if (digestOrEntry instanceof Snapshot || (typeof digestOrEntry === "object" &&
                                            "sha256" in digestOrEntry))
    sha256 = digestOf(digestOrEntry);
  else if (typeof digestOrEntry === "object")
    entry = digestOrEntry.entry;
  else if (HEX64.test(digestOrEntry) || digestOrEntry.startsWith("sha256="))
    sha256 = digestOf(digestOrEntry);
  else
    entry = digestOrEntry;
  if (entry !== null) checkedEntry(entry);
  const opts = nativeOptions(o);
  await call(() => native().revoke(mountOf(o), name, sha256, entry, opts));
}

// SPDX-License-Identifier: MIT
/** The one options object for the trust keywords, and its defaults. */
import { invalid } from "./errors";

/** Whom to trust: every call takes these (docs/clients.md, "The Node.js package"). */
export interface TrustOptions {
  /** The snapfs mount (a scope's view for an entry). Default: `$SNAPFS_MOUNT`, else
   *  `/run/snapfs`, as for every `snapfs` command. */
  mount?: string;
  /** The uid that must have mounted snapfs. Default: `$SNAPFS_OWNER` (a uid, as `--owner`
   *  takes it), else 0 (root). */
  owner?: number;
  /** INSECURE: also trust a mount of your own uid. Any process of your uid can unmount it and
   *  mount a FUSE server of its own in its place (refused without it: "owner-is-caller"). */
  insecureOwnMount?: boolean;
  /** Accept a mount whose owner user namespaces hide (refused without it: "user-namespace"):
   *  for a client inside a sandbox's own user namespace. */
  trustUserNamespace?: boolean;
}

/** What a verified open hands over: content unless asked otherwise. */
export type Kind = "content" | "signature" | "manifest";

/** Trust, and what a read accepts. */
export interface ReadOptions extends TrustOptions {
  /** The largest snapshot to accept, in bytes; default: the library's (1 GiB). */
  maxSize?: number;
  /** The kind (or kinds) of snapshot to hand over; default "content": a signature envelope
   *  or a manifest is refused with ENOMSG (reason "kind"). */
  kind?: Kind | readonly Kind[];
}

// snapfs.h's SNAPFS_OPT_*.
const OPT_OWNER = 1;
const OPT_INSECURE_OWN_MOUNT = 2;
const OPT_TRUST_USER_NAMESPACE = 4;
const KIND_FLAGS: Record<Kind, number> = { content: 8, signature: 16, manifest: 32 };
const UID_MAX = 4294967294;

/** What the addon takes (struct snapfs_options). */
export interface NativeOptions {
  flags: number;
  owner: number;
  maxSize: number;
}

/** A uid as every snapfs command reads `--owner` and `$SNAPFS_OWNER` (common/values.h):
 *  decimal, no sign, no leading zero, at most 4294967294; null for anything else. */
export function parseUid(text: string): number | null {
  if (!/^(0|[1-9][0-9]*)$/.test(text) || text.length > 10) return null;
  const v = Number(text);
  return v <= UID_MAX ? v : null;
}

/** text as common/values.c quotes input in a message: control bytes and DEL as \xHH, cut
 *  after 64 bytes. */
function quote(text: string): string {
  const raw = Buffer.from(text, "utf8");
  const out: number[] = [];
  for (const b of raw.subarray(0, 64)) {
    if (b < 0x20 || b === 0x7f)
      out.push(...Buffer.from(`\\x${b.toString(16).padStart(2, "0")}`));
    else
      out.push(b);
  }
  return Buffer.from(out).toString("utf8") + (raw.length > 64 ? "..." : "");
}

/** Why text is not a uid, in the words of every snapfs command (value_error in
 *  common/values.c: "invalid uid '007': expected ..."); null when it is one. */
export function uidError(text: string): string | null {
  if (parseUid(text) !== null) return null;
  if (/^[0-9]+$/.test(text) && !/^0[0-9]/.test(text))
    return `invalid uid '${quote(text)}': out of range (a uid is at most ${UID_MAX})`;
  return `invalid uid '${quote(text)}': expected a decimal uid below 4294967295, without sign ` +
         "or leading zero";
}

/** The mount a call uses. */
export function mountOf(o: TrustOptions): string {
  const m = o.mount ?? process.env["SNAPFS_MOUNT"] ?? "";
  return m === "" ? "/run/snapfs" : m;
}

function ownerOf(o: TrustOptions): number {
  if (o.owner !== undefined) {
    if (!Number.isInteger(o.owner) || o.owner < 0 || o.owner > UID_MAX)
      throw invalid(`owner: ${String(o.owner)} is not a uid (0 to ${UID_MAX})`);
    return o.owner;
  }
  const env = process.env["SNAPFS_OWNER"];
  if (env === undefined || env === "") return 0;
  const uid = parseUid(env);
  if (uid === null) throw invalid(`SNAPFS_OWNER: ${uidError(env)}`);
  return uid;
}

/** The trust options (and what a read accepts) as the library's struct snapfs_options. */
export function nativeOptions(o: ReadOptions, read = false): NativeOptions {
  let flags = OPT_OWNER;
  if (o.insecureOwnMount) flags |= OPT_INSECURE_OWN_MOUNT;
  if (o.trustUserNamespace) flags |= OPT_TRUST_USER_NAMESPACE;
  if (read) {
    const kinds = o.kind === undefined ? ["content"] : typeof o.kind === "string" ? [o.kind] : o.kind;
    if (kinds.length === 0) throw invalid("kind: name at least one of content, signature, manifest");
    for (const k of kinds) {
      const f = KIND_FLAGS[k as Kind];
      if (f === undefined) throw invalid(`kind: '${String(k)}' is not content, signature or manifest`);
      flags |= f;
    }
  }
  const maxSize = o.maxSize ?? 0;
  if (!Number.isSafeInteger(maxSize) || maxSize < 0)
    throw invalid(`maxSize: ${String(maxSize)} is not a size in bytes`);
  return { flags, owner: ownerOf(o), maxSize };
}

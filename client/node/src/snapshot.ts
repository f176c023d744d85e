// SPDX-License-Identifier: MIT
/** The one snapshot object (docs/design.md, "One snapshot object"). */
import type { Kind } from "./options";

/** The object every `snapfs --json` prints for a snapshot, field for field. */
export interface SnapshotJSON {
  sha256: string;
  size: number;
  dev: string | null;
  ino: number;
  name: string | null;
  published: string | null;
  publisher: number | null;
  binding: string | null;
}

/** What the addon hands over: the object above and the kind. */
export interface RawSnapshot extends SnapshotJSON {
  kind: Kind | null;
}

/**
 * One snapshot: its binding `(sha256, size, dev, ino)` in one mount, and what the daemon
 * says of it (`name`, `published`, `publisher`, `kind`: its word, not verified; null where
 * unknown). `JSON.stringify` gives exactly the object the CLI and the Python client print.
 */
export class Snapshot implements SnapshotJSON {
  /** The SHA-256 of the content, 64 lowercase hex. */
  readonly sha256: string;
  readonly size: number;
  /** The mount's device, "major:minor"; null while a scope's view is not mounted. */
  readonly dev: string | null;
  readonly ino: number;
  /** The name it was first published under. */
  readonly name: string | null;
  /** Its first publish, RFC 3339 in UTC, to the second. */
  readonly published: string | null;
  /** The uid that first published it. */
  readonly publisher: number | null;
  /** The binding's one-line text, `sha256=<hex> size=<n> dev=<major>:<minor> ino=<n>`: what
   *  `openVerified`, `snapfs verify` and `snapfs exec --binding` take. */
  readonly binding: string | null;
  readonly kind: Kind | null;
  /** Set by publish(): these bytes were published before (they keep their first name). */
  readonly alreadyPublished: boolean;

  /** @internal */
  constructor(raw: RawSnapshot, alreadyPublished = false) {
    this.sha256 = raw.sha256;
    this.size = raw.size;
    this.dev = raw.dev;
    this.ino = raw.ino;
    this.name = raw.name;
    this.published = raw.published;
    this.publisher = raw.publisher;
    this.binding = raw.binding;
    this.kind = raw.kind;
    this.alreadyPublished = alreadyPublished;
  }

  toJSON(): SnapshotJSON {
    return { sha256: this.sha256, size: this.size, dev: this.dev, ino: this.ino,
             name: this.name, published: this.published, publisher: this.publisher,
             binding: this.binding };
  }

  toString(): string {
    return this.binding ?? `sha256=${this.sha256}`;
  }
}

/** A snapshot that a publish or a verified open has just bound in a mount: its binding and
 *  the mount's device are known, never null. */
export type BoundSnapshot = Snapshot & { readonly binding: string; readonly dev: string };

/** @internal What a publish or a verified open reported, as a Snapshot: the addon fills its
 *  binding and device from the bound descriptor, so neither is ever missing. */
export function boundSnapshot(raw: RawSnapshot, alreadyPublished = false): BoundSnapshot {
  if (typeof raw.binding !== "string" || typeof raw.dev !== "string")
    throw new Error("snapfs: the addon reported a bound snapshot with no binding or device");
  return new Snapshot(raw, alreadyPublished) as BoundSnapshot;
}

/** A snapshot granted to a scope: the snapshot object with the grant's entry beside it. */
export class Grant extends Snapshot {
  /** The entry name it is granted under; null for a grant by digest. */
  readonly entry: string | null;
  /** Whether the binding was found in the scope's view (judged like any mount): false when
   *  the view could not be looked in from here, so it is the daemon's record alone. */
  readonly seenInView: boolean;

  /** @internal */
  constructor(raw: RawSnapshot & { entry: string | null; seenInView: boolean }) {
    super(raw);
    this.entry = raw.entry;
    this.seenInView = raw.seenInView;
  }

  override toJSON(): SnapshotJSON & { entry: string | null } {
    return { ...super.toJSON(), entry: this.entry };
  }
}

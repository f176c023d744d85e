// SPDX-License-Identifier: MIT
/** Refusals, as every snapfs client reports them. */

/** One reason a call was refused: a stable code and a one-line message for a person. */
export interface Reason {
  readonly code: string;
  readonly message: string;
}

/** What the addon rejects with (native/job.c, make_refusal). */
export interface RawRefusal {
  errno: number;
  code: string;
  message: string;
  reasons: Reason[];
  dropped: number;
  reply?: string;
}

/**
 * A refusal by libsnapfs or the daemon: `code` is the errno's name (`"EMEDIUMTYPE"`,
 * `"EBADMSG"`, ...), `errno` its number, `finding` the first reason's code (the mount check's
 * finding or the verification step that failed: `"stacked"`, `"digest-mismatch"`, ...) and
 * `reasons` every `{ code, message }`, as `snapfs --json` prints them. `toJSON()` is the
 * object every `snapfs --json` refusal is: `ok`, `error`, `message`, `reasons`.
 */
export class SnapfsError extends Error {
  override readonly name = "SnapfsError";
  readonly code: string;
  readonly errno: number;
  readonly finding: string | null;
  readonly reasons: readonly Reason[];
  /** Reasons the library found but had no room to report. */
  readonly dropped: number;
  /** The daemon's reply, parsed, for a refusal on the control channel. */
  readonly reply: unknown;
  /** What the errno means here, in words ("not a compliant snapfs mount"). */
  readonly strerror: string;

  constructor(errno: number, code: string, message: string, reasons: readonly Reason[] = [],
              dropped = 0, reply: unknown = undefined) {
    super(reasons.length
      ? `${message}: ${reasons.map((r) => `${r.code}: ${r.message}`).join("; ")}`
      : message);
    this.errno = errno;
    this.code = code;
    this.strerror = message;
    this.reasons = Object.freeze(reasons.map((r) => Object.freeze({ code: r.code, message: r.message })));
    this.finding = this.reasons[0]?.code ?? null;
    this.dropped = dropped;
    this.reply = reply;
  }

  /** The fields of every `snapfs --json` refusal. */
  toJSON(): { ok: false; error: string; message: string; reasons: Reason[] } {
    return { ok: false, error: this.code, message: this.strerror,
             reasons: this.reasons.map((r) => ({ code: r.code, message: r.message })) };
  }
}

/** A refusal of bad input before anything is asked of the library: EINVAL. */
export function invalid(message: string): SnapfsError {
  return new SnapfsError(22, "EINVAL", "invalid argument",
                         [{ code: "invalid-argument", message }]);
}

function isRaw(e: unknown): e is RawRefusal {
  return typeof e === "object" && e !== null && !(e instanceof Error) &&
    typeof (e as RawRefusal).errno === "number" && typeof (e as RawRefusal).code === "string";
}

/** The addon's rejection as a SnapfsError; anything else (a TypeError) as it is. */
export function fromRaw(e: unknown): unknown {
  if (!isRaw(e)) return e;
  let reply: unknown = undefined;
  if (typeof e.reply === "string" && e.reply) {
    try {
      reply = JSON.parse(e.reply);
    } catch {
      reply = e.reply;
    }
  }
  return new SnapfsError(e.errno, e.code, e.message, e.reasons, e.dropped, reply);
}

/** Awaits an addon call, turning its rejection (or its synchronous throw) into a SnapfsError. */
export async function call<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw fromRaw(e);
  }
}

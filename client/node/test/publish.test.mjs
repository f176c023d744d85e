// SPDX-License-Identifier: MIT
// publish() on a real daemon: the one snapshot object, its refusals beside their allowances.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";

import { cli, refusal, sha256, snapfs, startDaemon } from "./daemon.mjs";

let d;
before(async () => { d = await startDaemon(); });
after(async () => { await d.stop(); });

test("publish returns the snapshot object snapfs ls --json lists", async () => {
  const s = await snapfs.publish('{"mcpServers": {}}', { mount: d.mount, name: "mcp.json" });
  assert.equal(s.sha256, await sha256('{"mcpServers": {}}'));
  assert.equal(s.alreadyPublished, false);
  assert.equal(s.kind, "content");
  const ls = JSON.parse(cli("ls", "--mount", d.mount, "--json").stdout);
  const { kind, ...listed } = ls.snapshots.find((x) => x.sha256 === s.sha256);
  // Field for field, in the same order: the object every client prints (ls adds the kind).
  assert.deepEqual(JSON.parse(JSON.stringify(s)), listed);
  assert.deepEqual(Object.keys(s.toJSON()), Object.keys(listed));
  assert.equal(s.kind, kind);
  assert.equal(cli("verify", "--mount", d.mount, s.binding).status, 0);
});

test("the same bytes again are already published, from a Buffer or a Uint8Array", async () => {
  const first = await snapfs.publish(Buffer.from("same bytes"), { mount: d.mount, name: "first" });
  const again = await snapfs.publish(new TextEncoder().encode("same bytes"),
                                     { mount: d.mount, name: "second" });
  assert.equal(first.alreadyPublished, false);
  assert.equal(again.alreadyPublished, true);
  assert.equal(again.binding, first.binding);
  assert.equal(again.name, "first");  // the first name stays
  const empty = await snapfs.publish("", { mount: d.mount });
  assert.equal(empty.size, 0);
  assert.equal(empty.name, null);
});

test("a name outside the grammar is EINVAL and publishes nothing; a good one publishes", async () => {
  const e = await refusal(snapfs.publish("named", { mount: d.mount, name: ".hidden" }));
  assert.ok(e instanceof snapfs.SnapfsError);
  assert.equal(e.code, "EINVAL");
  assert.equal(e.errno, 22);
  const digest = await sha256("named");
  assert.equal(fs.existsSync(`${d.mount}/${digest}`), false);
  const s = await snapfs.publish("named", { mount: d.mount, name: "visible" });
  assert.equal(s.sha256, digest);
  assert.equal(fs.existsSync(`${d.mount}/${digest}`), true);
});

test("a mount that is not snapfs is EMEDIUMTYPE with the mount check's finding", async () => {
  const e = await refusal(snapfs.publish("x", { mount: d.dir }));
  assert.equal(e.code, "EMEDIUMTYPE");
  assert.ok(e.finding, "no finding");
  assert.deepEqual(e.toJSON(), { ok: false, error: "EMEDIUMTYPE", message: e.strerror,
                                 reasons: e.reasons.map((r) => ({ ...r })) });
  // The same refusal through the CLI: the same errno and findings.
  const r = JSON.parse(cli("put", "--mount", d.dir, "--json", "/dev/null").stdout);
  assert.equal(r.error, "EMEDIUMTYPE");
  assert.deepEqual(e.reasons.map((x) => x.code), r.reasons.map((x) => x.code));
});

test("a mount of an owner not trusted is refused; the trusted owner's is not", async () => {
  const e = await refusal(snapfs.publish("owner", { mount: d.mount, owner: 4321 }));
  assert.equal(e.code, "EMEDIUMTYPE");
  assert.ok(e.reasons.some((r) => r.code === "owner"), JSON.stringify(e.reasons));
  const s = await snapfs.publish("owner", { mount: d.mount, owner: 0 });
  assert.equal(s.sha256, await sha256("owner"));
});

test("$SNAPFS_MOUNT and $SNAPFS_OWNER are the defaults, read as the CLI reads them", async () => {
  const saved = { ...process.env };
  try {
    process.env.SNAPFS_MOUNT = d.mount;
    process.env.SNAPFS_OWNER = "007";
    const e = await refusal(snapfs.publish("env"));
    assert.equal(e.code, "EINVAL");
    assert.match(e.reasons[0].message, /SNAPFS_OWNER: invalid uid '007'/);
    process.env.SNAPFS_OWNER = "0";
    assert.equal((await snapfs.publish("env")).sha256, await sha256("env"));
  } finally {
    process.env = saved;
  }
});

test("past maxSize is EFBIG; at it, published", async () => {
  const e = await refusal(snapfs.publish("12345", { mount: d.mount, maxSize: 4 }));
  assert.equal(e.code, "EFBIG");
  const s = await snapfs.publish("1234", { mount: d.mount, maxSize: 4 });
  assert.equal(s.size, 4);
});

test("data that is not bytes is refused before anything is asked", async () => {
  const e = await refusal(snapfs.publish(42, { mount: d.mount }));
  assert.equal(e.code, "EINVAL");
});

test("remove() does what snapfs rm does: by name, digest and binding, refusals first", async () => {
  const a = await snapfs.publish("rm one", { mount: d.mount, name: "rm-shared" });
  const b = await snapfs.publish("rm two", { mount: d.mount, name: "rm-shared" });
  // A name of two snapshots: ENOTUNIQ, nothing removed; allNamed removes both.
  const e = await refusal(snapfs.remove("rm-shared", { mount: d.mount }));
  assert.equal(e.code, "ENOTUNIQ");
  assert.equal(fs.existsSync(`${d.mount}/${a.sha256}`), true);
  assert.deepEqual(await snapfs.remove("rm-shared", { mount: d.mount, allNamed: true }),
                   { removed: 2, kept: 0 });
  assert.equal(fs.existsSync(`${d.mount}/${b.sha256}`), false);
  // A digest's first 12 characters, and a Snapshot (its binding).
  const c = await snapfs.publish("rm three", { mount: d.mount, name: "rm-c" });
  assert.deepEqual(await snapfs.remove(c.sha256.slice(0, 12), { mount: d.mount }),
                   { removed: 1, kept: 0 });
  const f = await snapfs.publish("rm four", { mount: d.mount, name: "rm-f" });
  assert.deepEqual(await snapfs.remove(f, { mount: d.mount }), { removed: 1, kept: 0 });
  // What names nothing: ENOENT.
  const g = await refusal(snapfs.remove("rm-no-such-name", { mount: d.mount }));
  assert.equal(g.code, "ENOENT");
  assert.equal(g.finding, "no-such-snapshot");
});

// SPDX-License-Identifier: MIT
// openVerified() and readVerified() on a real daemon, each refusal beside its allowance.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";

import { refusal, sha256, snapfs, startDaemon } from "./daemon.mjs";

const CFG = '{"mcpServers": {"fs": {"command": "true"}}}\n';
let d, s;
before(async () => {
  d = await startDaemon();
  s = await snapfs.publish(CFG, { mount: d.mount, name: "cfg" });
});
after(async () => { await d.stop(); });

test("readVerified gives the bytes, by binding text, Snapshot or { binding }", async () => {
  for (const target of [s.binding, s, { binding: s.binding }]) {
    const b = await snapfs.readVerified(target, { mount: d.mount });
    assert.ok(Buffer.isBuffer(b));
    assert.equal(b.toString(), CFG);
  }
});

test("openVerified gives a FileHandle on the snapshot itself, verified", async () => {
  const fh = await snapfs.openVerified(s, { mount: d.mount });
  try {
    assert.equal((await fh.readFile()).toString(), CFG);
    const st = await fh.stat();
    const [maj, min] = s.dev.split(":").map(Number);
    assert.equal(st.ino, s.ino);
    assert.equal(st.dev, maj * 256 + min);  // makedev for small numbers
    assert.equal(st.mode & 0o7777, 0);
    assert.equal(fh.snapshot.binding, s.binding);
    // Read-only: the daemon refuses a write whatever the descriptor.
    await assert.rejects(fh.write("x"), (e) => e.code === "EBADF");
  } finally {
    await fh.close();
  }
});

test("a binding of a digest the mount does not serve is ENOENT; the right one reads", async () => {
  const other = s.binding.replace(s.sha256, await sha256("a config nobody vetted"));
  const e = await refusal(snapfs.readVerified(other, { mount: d.mount }));
  assert.equal(e.code, "ENOENT");
  assert.equal(e.finding, "open");
  assert.equal((await snapfs.readVerified(s.binding, { mount: d.mount })).toString(), CFG);
});

test("a binding of another inode is ESTALE (identity) for both opens", async () => {
  const other = s.binding.replace(/ino=\d+/, `ino=${s.ino + 1000}`);
  for (const f of [snapfs.readVerified, snapfs.openVerified]) {
    const e = await refusal(f(other, { mount: d.mount }));
    assert.equal(e.code, "ESTALE");
    assert.equal(e.finding, "identity");
  }
});

test("a text that is not a binding is EINVAL; { entry } on the main mount is ENOENT", async () => {
  const e = await refusal(snapfs.readVerified("sha256=nope", { mount: d.mount }));
  assert.equal(e.code, "EINVAL");
  const missing = await refusal(snapfs.readVerified({ entry: "nosuch" }, { mount: d.mount }));
  assert.equal(missing.code, "ENOENT");
});

test("a signature kind is refused as content (ENOMSG) only when asked for another kind", async () => {
  const e = await refusal(snapfs.readVerified(s, { mount: d.mount, kind: "signature" }));
  assert.equal(e.code, "ENOMSG");
  assert.equal(e.finding, "kind");
  const b = await snapfs.readVerified(s, { mount: d.mount, kind: ["signature", "content"] });
  assert.equal(b.toString(), CFG);
  const bad = await refusal(snapfs.readVerified(s, { mount: d.mount, kind: "config" }));
  assert.equal(bad.code, "EINVAL");
});

test("no descriptor is left open by a refused open or a closed handle", async () => {
  const before = fs.readdirSync("/proc/self/fd").length;
  await refusal(snapfs.openVerified(s.binding.replace(/size=\d+/, "size=1"), { mount: d.mount }));
  const fh = await snapfs.openVerified(s, { mount: d.mount });
  await fh.close();
  await snapfs.readVerified(s, { mount: d.mount });
  assert.equal(fs.readdirSync("/proc/self/fd").length, before);
});

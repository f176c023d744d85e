// SPDX-License-Identifier: MIT
// spawnVerified(): the child gets the verified descriptor at fd 3, or is never started.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import * as fs from "node:fs";
import * as path from "node:path";

import { refusal, sha256, snapfs, startDaemon } from "./daemon.mjs";

const CFG = '{"mcpServers": {}}\n';
let d, s;
before(async () => {
  d = await startDaemon();
  s = await snapfs.publish(CFG, { mount: d.mount });
});
after(async () => { await d.stop(); });

async function output(child) {
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (c) => { out += c; });
  const [code] = await once(child, "exit");
  return { code, out };
}

test("the child reads the snapshot at fd 3, {} naming /proc/self/fd/3", async () => {
  const child = await snapfs.spawnVerified(
    "sh", ["-c", 'echo "$0"; cat "$0"; readlink /proc/self/fd/3', "{}"],
    { binding: s.binding, mount: d.mount, stdio: ["ignore", "pipe", "inherit"] });
  assert.equal(child.snapshot.binding, s.binding);
  const { code, out } = await output(child);
  assert.equal(code, 0);
  const [arg, ...rest] = out.split("\n");
  assert.equal(arg, "/proc/self/fd/3");
  assert.equal(rest.join("\n"), `${CFG}${d.mount}/${s.sha256}\n`);
});

test("a binding that does not verify never starts the child; the right one does", async () => {
  const marker = path.join(d.dir, "started");
  const argv = ["-c", 'touch "$0"', marker];
  const wrong = s.binding.replace(s.sha256, await sha256("not vetted"));
  const e = await refusal(snapfs.spawnVerified("sh", argv, { binding: wrong, mount: d.mount }));
  assert.equal(e.code, "ENOENT");
  assert.equal(e.finding, "open");
  assert.equal(fs.existsSync(marker), false);
  // Of another inode: ESTALE, and still no child.
  const stale = await refusal(snapfs.spawnVerified("sh", argv, {
    binding: s.binding.replace(/ino=\d+/, `ino=${s.ino + 1000}`), mount: d.mount }));
  assert.equal(stale.code, "ESTALE");
  assert.equal(fs.existsSync(marker), false);
  const child = await snapfs.spawnVerified("sh", argv, { binding: s.binding, mount: d.mount,
                                                         stdio: "ignore" });
  const [code] = await once(child, "exit");
  assert.equal(code, 0);
  assert.equal(fs.existsSync(marker), true);
});

test("fd 3 cannot be given away, and exactly one of binding and entry is needed", async () => {
  let e = await refusal(snapfs.spawnVerified("true", [], { binding: s.binding, mount: d.mount,
                                                           stdio: ["pipe", "pipe", "pipe", "pipe"] }));
  assert.equal(e.code, "EINVAL");
  e = await refusal(snapfs.spawnVerified("true", [], { mount: d.mount }));
  assert.equal(e.code, "EINVAL");
  e = await refusal(snapfs.spawnVerified("true", [], { binding: s.binding, entry: "x",
                                                       mount: d.mount }));
  assert.equal(e.code, "EINVAL");
  const child = await snapfs.spawnVerified("true", [], { binding: s.binding, mount: d.mount,
                                                         stdio: ["pipe", "pipe", "pipe", null] });
  const [code] = await once(child, "exit");
  assert.equal(code, 0);
});

test("the parent keeps no copy of the verified descriptor", async () => {
  const before = fs.readdirSync("/proc/self/fd").length;
  const child = await snapfs.spawnVerified("cat", ["{}"], { binding: s.binding, mount: d.mount,
                                                            stdio: ["ignore", "pipe", "ignore"] });
  const { out } = await output(child);
  assert.equal(out, CFG);
  assert.equal(fs.readdirSync("/proc/self/fd").length, before);
});

// SPDX-License-Identifier: MIT
// scopes.* and status() on a real daemon: each refusal by its errno, beside its allowance.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import * as fs from "node:fs";
import * as path from "node:path";

import { cli, refusal, sha256, snapfs, startDaemon } from "./daemon.mjs";

const CFG = '{"mcpServers": {"fs": {"command": "true"}}}\n';
const CFG2 = '{"mcpServers": {"fs": {"command": "false"}}}\n';
let d;
before(async () => { d = await startDaemon(); });
after(async () => { await d.stop(); });

test("create, list, show and remove a scope, as snapfs scope ls --json shows it", async () => {
  const view = d.view("a");
  const sc = await snapfs.scopes.create("a", { mount: d.mount, view, uids: [1000],
                                               limits: { maxSnapshots: 4 } });
  assert.equal(sc.name, "a");
  assert.equal(sc.view, view);
  assert.deepEqual(sc.uids, [1000]);
  assert.equal(sc.limits.max_snapshots, 4);
  const listed = await snapfs.scopes.list({ mount: d.mount });
  const ls = JSON.parse(cli("scope", "ls", "--mount", d.mount, "--json").stdout);
  assert.deepEqual(listed, ls.scopes);
  const again = await refusal(snapfs.scopes.create("a", { mount: d.mount, view: d.view("a2") }));
  assert.equal(again.code, "EEXIST");
  assert.equal(again.finding, "refused");
  await snapfs.scopes.remove("a", { mount: d.mount });
  const gone = await refusal(snapfs.scopes.remove("a", { mount: d.mount }));
  assert.equal(gone.code, "ENOENT");
  assert.deepEqual(await snapfs.scopes.list({ mount: d.mount }), []);
});

test("create takes gid, publish, untilPid and every limit; a pid of no process is refused",
     async () => {
  const holder = spawn("sleep", ["600"], { stdio: "ignore" });
  try {
    const limits = { maxSnapshots: 4, maxBytes: 1 << 20, maxStaging: 2, maxStagingBytes: 4096 };
    const sc = await snapfs.scopes.create("e", { mount: d.mount, view: d.view("e"), gid: 100,
                                                 publish: true, untilPid: holder.pid, limits });
    assert.equal(sc.gid, 100);
    assert.equal(sc.publish, true);
    assert.equal(sc.until_pid, holder.pid);
    assert.deepEqual(sc.limits, { max_snapshots: 4, max_bytes: 1 << 20, max_staging: 2,
                                  max_staging_bytes: 4096, min_bytes: null });
    const shown = JSON.parse(cli("scope", "ls", "--mount", d.mount, "e", "--json").stdout);
    assert.deepEqual(sc, shown.scope);
    await snapfs.scopes.remove("e", { mount: d.mount });
    // A pid no process has (pids stay below pid_max): refused, no scope made.
    const none = Number(fs.readFileSync("/proc/sys/kernel/pid_max", "utf8"));
    const e = await refusal(snapfs.scopes.create("f", { mount: d.mount, view: d.view("f"),
                                                        untilPid: none }));
    assert.equal(e.code, "ESRCH");
    assert.match(e.reasons[0].message, /no such process/);
    assert.deepEqual(await snapfs.scopes.list({ mount: d.mount }), []);
  } finally {
    holder.kill();
  }
});

test("a grant under an entry moves, the view reads it, a revoke ends it", async () => {
  const view = d.view("b");
  await snapfs.scopes.create("b", { mount: d.mount, view });
  try {
    const one = await snapfs.publish(CFG, { mount: d.mount });
    const two = await snapfs.publish(CFG2, { mount: d.mount });
    const g = await snapfs.scopes.grant("b", one.binding, { mount: d.mount, entry: "mcp" });
    assert.equal(g.entry, "mcp");
    assert.equal(g.seenInView, true);
    assert.equal(g.sha256, one.sha256);
    const shown = JSON.parse(cli("scope", "ls", "--mount", d.mount, "b", "--json").stdout);
    assert.deepEqual(JSON.parse(JSON.stringify(g)), shown.grants[0]);
    assert.equal((await snapfs.readVerified({ entry: "mcp" }, { mount: view })).toString(), CFG);
    const fh = await snapfs.openVerified({ entry: "mcp" }, { mount: view });
    try {
      assert.equal((await fh.readFile()).toString(), CFG);
      assert.equal(fh.snapshot.binding, g.binding);  // the snapshot as the view serves it
    } finally {
      await fh.close();
    }
    // The entry moves to the other snapshot at once.
    await snapfs.scopes.grant("b", two, { mount: d.mount, entry: "mcp" });
    assert.equal((await snapfs.readVerified({ entry: "mcp" }, { mount: view })).toString(), CFG2);
    // The entry was the only grant of the first snapshot: moved, it left nothing of it.
    const { grants } = await snapfs.scopes.show("b", { mount: d.mount });
    assert.deepEqual(grants.map((x) => [x.sha256, x.entry]), [[two.sha256, "mcp"]]);
    const old = await refusal(snapfs.scopes.revoke("b", one.sha256, { mount: d.mount }));
    assert.equal(old.code, "ENOENT");
    // By digest too, then the entry: gone from the view.
    await snapfs.scopes.grant("b", one, { mount: d.mount });
    await snapfs.scopes.revoke("b", one.sha256, { mount: d.mount });
    await snapfs.scopes.revoke("b", "mcp", { mount: d.mount });
    const e = await refusal(snapfs.readVerified({ entry: "mcp" }, { mount: view }));
    assert.equal(e.code, "ENOENT");
    const none = await refusal(snapfs.scopes.revoke("b", { entry: "mcp" }, { mount: d.mount }));
    assert.equal(none.code, "ENOENT");
  } finally {
    await snapfs.scopes.remove("b", { mount: d.mount });
  }
});

test("a grant of a digest nobody published is ENOENT; of a published one, granted", async () => {
  const view = d.view("c");
  await snapfs.scopes.create("c", { mount: d.mount, view });
  try {
    const e = await refusal(snapfs.scopes.grant("c", "0".repeat(64), { mount: d.mount }));
    assert.equal(e.code, "ENOENT");
    const bad = await refusal(snapfs.scopes.grant("c", "not-a-digest", { mount: d.mount }));
    assert.equal(bad.code, "EINVAL");
    const s = await snapfs.publish("granted", { mount: d.mount });
    const g = await snapfs.scopes.grant("c", s.sha256, { mount: d.mount });
    assert.equal(g.entry, null);
    assert.equal(g.dev, (await snapfs.scopes.list({ mount: d.mount }))[0].dev);
  } finally {
    await snapfs.scopes.remove("c", { mount: d.mount });
  }
});

test("publish into a scope: granted under its entry, verified in its view, spawned from it",
     async () => {
  const view = d.view("d");
  await snapfs.scopes.create("d", { mount: d.mount, view });
  try {
    const s = await snapfs.publish(CFG, { mount: d.mount, scope: "d", entry: "cfg" });
    assert.equal(s.scope.name, "d");
    assert.equal(s.scope.view, view);
    assert.equal(s.scope.entry, "cfg");
    assert.notEqual(s.scope.snapshot.dev, s.dev);
    assert.equal(s.scope.snapshot.sha256, s.sha256);
    const child = await snapfs.spawnVerified("cat", ["{}"], { entry: "cfg", mount: view,
                                                              stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (c) => { out += c; });
    await once(child, "exit");
    assert.equal(out, CFG);
    assert.equal(child.snapshot.binding, s.scope.snapshot.binding);
    const e = await refusal(snapfs.publish(CFG, { mount: d.mount, scope: "nosuch" }));
    assert.equal(e.code, "ENOENT");
    const usage = await refusal(snapfs.publish(CFG, { mount: d.mount, entry: "x" }));
    assert.equal(usage.code, "EINVAL");
  } finally {
    await snapfs.scopes.remove("d", { mount: d.mount });
  }
});

test("publish for a scope: the scope's alone, not on the main mount; keep holds it there",
     async () => {
  const view = d.view("g");
  await snapfs.scopes.create("g", { mount: d.mount, view });
  const secret = `token ${await sha256(String(process.hrtime.bigint()))}\n`;
  const kept = `kept ${secret}`;
  try {
    const s = await snapfs.publish(secret, { mount: d.mount, scope: "g", entry: "cfg" });
    assert.equal(s.sha256, await sha256(secret));
    assert.equal(s.alreadyPublished, false);
    // The one snapshot object, as `snapfs put --json` prints it: the main mount's binding;
    // where the scope reads it is beside it, not in it.
    assert.deepEqual(Object.keys(JSON.parse(JSON.stringify(s))),
                     ["sha256", "size", "dev", "ino", "name", "published", "publisher",
                      "binding"]);
    assert.deepEqual(Object.keys(s.scope), ["name", "entry", "view", "snapshot"]);
    assert.equal(s.scope.entry, "cfg");
    assert.equal(s.scope.snapshot.sha256, s.sha256);
    // Denied on the main mount: not listed there, by readdir nor snapfs ls; allowed in the
    // view, whose entry reads the bytes.
    assert.ok(!fs.readdirSync(d.mount).includes(s.sha256));
    const ls = JSON.parse(cli("ls", "--mount", d.mount, "--all", "--json").stdout);
    assert.ok(!ls.snapshots.some((x) => x.sha256 === s.sha256));
    assert.ok(fs.readdirSync(view).includes("cfg"));
    assert.equal((await snapfs.readVerified({ entry: "cfg" }, { mount: view })).toString(),
                 secret);
    // keep: the old hold on the main mount, listed there, beside the scope's grant.
    const k = await snapfs.publish(kept, { mount: d.mount, scope: "g", entry: "kept",
                                           keep: true });
    assert.equal(k.scope.entry, "kept");
    assert.ok(fs.readdirSync(d.mount).includes(k.sha256));
    assert.equal((await snapfs.readVerified({ entry: "kept" }, { mount: view })).toString(),
                 kept);
    // The revoke of its only grant: gone from the view and from the daemon (the owner's stat
    // of its digest on the main mount is ENOENT); what keep held stays on the main mount.
    await snapfs.scopes.revoke("g", { entry: "cfg" }, { mount: d.mount });
    await snapfs.scopes.revoke("g", { entry: "kept" }, { mount: d.mount });
    const gone = await refusal(snapfs.readVerified({ entry: "cfg" }, { mount: view }));
    assert.equal(gone.code, "ENOENT");
    assert.ok(!fs.readdirSync(view).includes("cfg"));
    assert.throws(() => fs.statSync(path.join(d.mount, s.sha256)), { code: "ENOENT" });
    assert.equal(fs.statSync(path.join(d.mount, k.sha256)).size, Buffer.byteLength(kept));
    assert.ok(fs.readdirSync(d.mount).includes(k.sha256));
    // keep without a scope, or not a boolean: refused before anything is asked.
    const alone = await refusal(snapfs.publish(kept, { mount: d.mount, keep: true }));
    assert.equal(alone.code, "EINVAL");
    const word = await refusal(snapfs.publish(kept, { mount: d.mount, scope: "g", keep: "yes" }));
    assert.equal(word.code, "EINVAL");
  } finally {
    await snapfs.scopes.remove("g", { mount: d.mount });
  }
});

test("status is the daemon's status object; not on a mount that is not snapfs", async () => {
  const st = await snapfs.status({ mount: d.mount });
  const cliStatus = JSON.parse(cli("status", "--mount", d.mount, "--json").stdout);
  assert.equal(st.pid, cliStatus.status.pid);
  assert.equal(st.version, snapfs.versions().library);
  const e = await refusal(snapfs.status({ mount: d.dir }));
  assert.equal(e.code, "EMEDIUMTYPE");
});

test("entry names: the vectors' set refused EINVAL before asking, the rest asked", async () => {
  const vectors = JSON.parse(fs.readFileSync(new URL("../../../tests/vectors/names.json",
                                                  import.meta.url), "utf8"));
  const digest = "ab".repeat(32);
  const gone = { mount: "/nonexistent/mnt" };
  assert.ok(vectors.filter((c) => c.valid).length >= 5);
  assert.ok(vectors.filter((c) => !c.valid).length >= 10);
  for (const c of vectors) {
    // Bytes that are no UTF-8 reach JavaScript as U+FFFD, as fs names them.
    const entry = c.entry ?? Buffer.from(c.entry_hex, "hex").toString("utf8");
    assert.equal(snapfs.scopes.entryNameValid(entry), c.valid, c.why);
    const asks = [() => snapfs.scopes.grant("s", digest, { ...gone, entry }),
                  () => snapfs.scopes.revoke("s", { entry }, gone)];
    // A view lists granted digests by their own names: an open takes those as well.
    const digestName = /^[0-9a-f]{64}$/.test(entry);
    asks.push(() => snapfs.readVerified({ entry }, { mount: "/nonexistent/view" }));
    for (const [i, ask] of asks.entries()) {
      const e = await refusal(ask());
      if (c.valid || (digestName && i === 2)) assert.notEqual(e.code, "EINVAL", c.why);
      else {
        assert.equal(e.code, "EINVAL", c.why);
        assert.match(e.reasons[0].message, /not a valid entry name/, c.why);
      }
    }
  }
});

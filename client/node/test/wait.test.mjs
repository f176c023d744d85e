// SPDX-License-Identifier: MIT
// wait() on a real daemon: woken by a real rotation (the daemon's poll notice, the waiter
// shown asleep in poll(2) first), the timeout beside it with the entry untouched, a removal.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";

import { refusal, snapfs, startDaemon } from "./daemon.mjs";

const CFG = '{"token": "one"}\n';
const CFG2 = '{"token": "two"}\n';
let d;
before(async () => { d = await startDaemon(); });
after(async () => { await d.stop(); });

/** Whether a thread of this process sleeps in poll(2) itself (libuv's pool thread running
 *  the wait), not in epoll (the event loop) nor waiting for a FUSE reply. */
function asleepInPoll() {
  for (const tid of fs.readdirSync("/proc/self/task")) {
    const wchan = fs.readFileSync(`/proc/self/task/${tid}/wchan`, "utf8");
    if (/^(do_sys_poll|poll_schedule_timeout)/.test(wchan)) return true;
  }
  return false;
}

async function until(cond, what) {
  const deadline = Date.now() + 20000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function scopeWith(name, content) {
  const view = d.view(name);
  await snapfs.scopes.create(name, { mount: d.mount, view });
  const s = await snapfs.publish(content, { mount: d.mount });
  await snapfs.scopes.grant(name, s, { mount: d.mount, entry: "mcp" });
  return view;
}

test("wait resolves with what the entry names once a rotation moved it", async () => {
  const view = await scopeWith("a", CFG);
  try {
    const two = await snapfs.publish(CFG2, { mount: d.mount });
    const waiting = snapfs.wait({ entry: "mcp" }, { mount: view, timeout: 600 });
    await until(asleepInPoll, "the wait asleep in poll");
    await snapfs.scopes.grant("a", two, { mount: d.mount, entry: "mcp" });
    const s = await waiting;
    assert.equal(s.sha256, two.sha256);
    assert.equal((await snapfs.readVerified({ entry: "mcp" }, { mount: view })).toString(), CFG2);
    assert.equal(s.binding.split(" ")[0], `sha256=${two.sha256}`);
  } finally {
    await snapfs.scopes.remove("a", { mount: d.mount });
  }
});

test("wait rejects ETIMEDOUT at its timeout and leaves the entry as it was", async () => {
  const view = await scopeWith("b", CFG);
  try {
    const e = await refusal(snapfs.wait({ entry: "mcp" }, { mount: view, timeout: 0 }));
    assert.equal(e.code, "ETIMEDOUT");
    assert.equal(e.finding, "timeout");
    assert.equal((await snapfs.readVerified({ entry: "mcp" }, { mount: view })).toString(), CFG);
    const bad = await refusal(snapfs.wait({ entry: "mcp" }, { mount: view, timeout: -1 }));
    assert.equal(bad.code, "EINVAL");
    const absent = await refusal(snapfs.wait({ entry: "absent" }, { mount: view, timeout: 0 }));
    assert.equal(absent.code, "ENOENT");
  } finally {
    await snapfs.scopes.remove("b", { mount: d.mount });
  }
});

test("wait for an entry that is removed rejects ENOENT, finding removed", async () => {
  const view = await scopeWith("c", CFG);
  try {
    const waiting = refusal(snapfs.wait({ entry: "mcp" }, { mount: view }));
    await until(asleepInPoll, "the wait asleep in poll");
    await snapfs.scopes.revoke("c", { entry: "mcp" }, { mount: d.mount });
    const e = await waiting;
    assert.equal(e.code, "ENOENT");
    assert.equal(e.finding, "removed");
  } finally {
    await snapfs.scopes.remove("c", { mount: d.mount });
  }
});

// SPDX-License-Identifier: MIT
// The one value the package reads from text, a uid ($SNAPFS_OWNER), by the grammar of every
// snapfs command: tests/vectors/values.json, the cases the C unit test and the Python client
// run, give each input the same uid, or the same refusal in the same words.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";

import { refusal, snapfs } from "./daemon.mjs";

const here = path.dirname(new URL(import.meta.url).pathname);
const VECTORS = JSON.parse(fs.readFileSync(path.join(here, "..", "..", "..", "tests", "vectors",
                                                     "values.json"), "utf8"));
const UIDS = VECTORS.filter((c) => c.type === "uid");

test("every uid vector gets the uid or the message C gives", () => {
  assert.ok(UIDS.some((c) => "value" in c) && UIDS.some((c) => c.error === "ERANGE") &&
            UIDS.some((c) => c.error === "EINVAL"));
  for (const c of UIDS) {
    if ("value" in c) {
      assert.equal(snapfs.parseUid(c.input), c.value, c.input);
      assert.equal(snapfs.uidError(c.input), null, c.input);
    } else {
      assert.equal(snapfs.parseUid(c.input), null, c.input);
      assert.equal(snapfs.uidError(c.input), c.message, c.input);
    }
  }
});

test("$SNAPFS_OWNER is refused in those words; a uid gets past it to the mount check", async () => {
  const saved = process.env.SNAPFS_OWNER;
  try {
    // An empty variable is no variable, as for the CLI.
    for (const c of UIDS.filter((x) => "error" in x && x.input !== "")) {
      process.env.SNAPFS_OWNER = c.input;
      const e = await refusal(snapfs.publish("never", { mount: "/nonexistent/snapfs" }));
      assert.equal(e.code, "EINVAL", c.input);
      assert.equal(e.reasons[0].message, `SNAPFS_OWNER: ${c.message}`);
    }
    for (const c of UIDS.filter((x) => "value" in x)) {
      process.env.SNAPFS_OWNER = c.input;
      const e = await refusal(snapfs.publish("never", { mount: "/nonexistent/snapfs" }));
      assert.equal(e.code, "ENOENT", c.input);
      assert.equal(e.finding, "mount-check");
    }
  } finally {
    if (saved === undefined) delete process.env.SNAPFS_OWNER;
    else process.env.SNAPFS_OWNER = saved;
  }
});

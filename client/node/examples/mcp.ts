// SPDX-License-Identifier: MIT
// A runtime hands a vetted MCP config to an MCP client, from Node.js: it makes the sandbox a
// scope, publishes the config into it under an entry, and starts the client with the verified
// descriptor at fd 3 ({} is /proc/self/fd/3). A config that does not verify starts nothing.
//
//   node mcp.js MOUNT VIEW SERVER_JS INSPECTOR_JS DATA_DIR
import { once } from "node:events";
import { publish, scopes, spawnVerified, SnapfsError } from "snapfs";

async function main(argv: string[]): Promise<number> {
  const [mount, view, server, inspector, data] = argv;
  if (!mount || !view || !server || !inspector || !data) {
    console.error("usage: node mcp.js MOUNT VIEW SERVER_JS INSPECTOR_JS DATA_DIR");
    return 2;
  }
  await scopes.create("sandbox", { mount, view });
  try {
    const config = JSON.stringify({ mcpServers: { fs: { command: "node", args: [server, data] } } });
    const published = await publish(config, { mount, scope: "sandbox", entry: "mcp.json" });
    console.error(`published ${published.sha256}, in the view: ${published.scope?.snapshot.binding}`);
    const client = await spawnVerified(
      "node", [inspector, "--cli", "--config", "{}", "--server", "fs", "--method", "tools/list"],
      { mount: view, entry: "mcp.json", stdio: "inherit" });
    const [code] = await once(client, "exit");
    return typeof code === "number" ? code : 1;
  } catch (e) {
    if (e instanceof SnapfsError) {
      console.error(`not verified, not starting the client: ${e.code} ${e.finding}`);
      return 125;
    }
    throw e;
  } finally {
    await scopes.remove("sandbox", { mount });
  }
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; });

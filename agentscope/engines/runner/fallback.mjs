// agentscope: the fallback folders for bare imports (agentscope/engines/nodepath.py has the order).
//
// Loaded with `node --import <this file's URL>?path=<JSON list of node_modules folders>`. A bare
// specifier (`xstate`, `tsx/...`) that Node cannot resolve from the importing module is resolved
// from these folders, in order; what Node finds itself always wins. ES modules go through a
// resolution hook (module.register, Node >= 20.6); CommonJS `require` through NODE_PATH.
import Module, { register } from "node:module";
import path from "node:path";

const folders = JSON.parse(new URL(import.meta.url).searchParams.get("path") ?? "[]");
globalThis.agentscopeNodePath = folders; // named by the runner's "xstate not found" message

if (folders.length) {
  register(new URL("./fallback-hooks.mjs", import.meta.url).href, { data: { folders } });
  const old = process.env.NODE_PATH ? process.env.NODE_PATH.split(path.delimiter) : [];
  process.env.NODE_PATH = [...old, ...folders].join(path.delimiter);
  Module._initPaths(); // re-read NODE_PATH (the documented variable; read once at start-up)
}

// agentscope: the resolution hook registered by fallback.mjs (runs on Node's loader thread).
import { pathToFileURL } from "node:url";
import path from "node:path";

let parents = [];

export function initialize(data) {
  // resolving from `<folder>/../_` searches <folder> first (it is a node_modules folder)
  parents = data.folders.map((f) => pathToFileURL(path.join(path.dirname(f), "_")).href);
}

const isBare = (s) => !/^(\.{0,2}\/|[a-zA-Z][a-zA-Z0-9+.-]*:)/.test(s);

export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    if (!isBare(specifier) || (err && err.code !== "ERR_MODULE_NOT_FOUND")) throw err;
    for (const parentURL of parents) {
      try {
        return await next(specifier, { ...context, parentURL });
      } catch (again) {
        if (again && again.code !== "ERR_MODULE_NOT_FOUND") throw again;
      }
    }
    throw err;
  }
}

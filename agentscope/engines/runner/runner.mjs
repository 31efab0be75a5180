// agentscope XState runner: one long-lived Node process per machine module.
//
// Protocol: JSON lines. Each request on stdin is one line `{"id": <int>, "op": <string>, ...}`;
// each reply on stdout is one line `{"id": <same>, "ok": true, "result": ...}` or
// `{"id": <same>, "ok": false, "error": {"kind", "message", "stack"?, ...}}`. Requests are
// handled strictly in order. Anything the user's module prints goes to stderr (console.log is
// diverted), so stdout carries protocol lines only. Diagnostics go to stderr.
//
// The runner never bundles xstate: it resolves `xstate` from the user module's own location,
// as Node resolves the module's own `import "xstate"`. Every operation is pure (spec §4.1):
// `initialTransition` / `transition` / `restoreSnapshot` / `getPersistedSnapshot`; no actor is
// started and no action is executed.
//
// Operations (see agentscope/engines/xstate.py for the Python side):
//   load      {path, export?}            -> {machineId, declaredVersion, structural, exportName, graph, xstatePath, xstateVersion}
//   initial   {input?, taken?}           -> {handle, persisted, hash, children, taken?}
//   restore   {persisted}                -> {handle, persisted, hash, children}
//   fold      {seed, events, sessions, rebind, reseedEvery, partBytes?, emit?, expect?, taken?, release?}
//                                         -> part lines {persisted: [...], hashes: [...], children: [...], same?: [...], taken?: [...]}
//                                            then {handle, persisted, hashes, children, same?, taken?, sessions: {delta}}
// `taken` (asked with taken: true) holds, per step, a JSON string of [rows, values] ("" when the
// step took nothing): rows [microstep, eventType, edge (index into graph.transitions, null for
// the initial entry), [target ids as resolved], reenter], values the state value after each
// microstep (see "The transitions a step takes" below).
//   release   {handles}                  -> null
//   ping      {}                         -> {pid}
//   hash      {value}                    -> {hash, reference, json} (spec §2 in JS, for tests)
//
// A "seed" is {handle} (a live snapshot kept by this process) or {persisted, children?}
// (restored here; `children` maps actorId -> the session id the caller's snapshot had, used to
// carry the session-rebinding cache over the restore).

import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { fileURLToPath, pathToFileURL } from "node:url";
import fs from "node:fs";
import path from "node:path";
import v8 from "node:v8";
import { canonicalSnapshotJson, djb2Hex, referenceStateHash, stateHash } from "./hash.mjs";

// ---------------------------------------------------------------------------------------------
// stdout belongs to the protocol. User code printing (console.log, process.stdout.write) is
// diverted to stderr so it cannot corrupt the stream.
const protocolOut = process.stdout;
const rawWrite = protocolOut.write.bind(protocolOut);
protocolOut.write = (...args) => process.stderr.write(...args);

const CHUNK = 1 << 20;

// Heap policy by state size. V8 grows the old generation by a factor of up to ~4 between full
// collections. Small states make young garbage only, and V8's defaults fold them fastest. Large
// states do not: every step's snapshot JSON and canonical text (~1 MB per step for a 300 KB
// snapshot) are old-generation objects, which pile up to several times the live size before a
// collection. So the first time a persisted snapshot's JSON reaches LARGE_STATE characters, the
// heap grows by 10% at a time from then on (kept near the live size). Measured on a shared 2-core
// box with benchmarks/bench_node_verify.py's logs, runner peak RSS / runner CPU-s:
//   - 50k-entry loop log (small states): 10% growth from the start (with 4 MB semi-spaces)
//     121-124 MB / 22.3-23.4 s, V8's defaults 203-214 MB / 17.3-21.1 s over repeated runs;
//   - 2,500-entry grow log (300 KB states): defaults 144 MB / 8.6 s, this policy 126 MB / 8.5 s.
// Set at run time, not on the command line, so a Node whose V8 lacks the flag only notes it.
const LARGE_STATE = 32 * 1024;
let compactHeap = false;

function noteStateSize(chars) {
  if (compactHeap || chars < LARGE_STATE) return;
  compactHeap = true;
  v8.setFlagsFromString("--heap-growing-percent=10");
}

function writeAll(text) {
  // Chunked writes with back-pressure: a 50 MB reply never needs one giant buffer copy.
  return new Promise((resolve, reject) => {
    let offset = 0;
    const step = () => {
      while (offset < text.length) {
        let end = Math.min(offset + CHUNK, text.length);
        // never split a surrogate pair across two writes (each write is UTF-8 encoded alone)
        const last = text.charCodeAt(end - 1);
        if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1;
        const piece = text.slice(offset, end);
        offset = end;
        if (!rawWrite(piece)) {
          protocolOut.once("drain", step);
          return;
        }
      }
      done();
    };
    const fail = (err) => reject(err);
    const done = () => {
      protocolOut.off("error", fail);
      resolve();
    };
    protocolOut.once("error", fail);
    step();
  });
}

// ---------------------------------------------------------------------------------------------
// State of this process.
let xs = null; // the xstate module resolved from the user's module
let machine = null;
let loaded = null; // the 'load' reply (machine id, versions, graph)
let loading = false; // a module import in progress (it may never settle: see stdin's "end")
let nextHandle = 1;
const handles = new Map(); // id -> {snap, cache: SessionCache, sinceSeed}
const foldResults = new Map(); // fold request id -> the handle of its last snapshot (seed {after})
let reseedBroken = false; // set when a re-seed restore failed: fold live snapshots only
let reseedWarned = false;

class RunnerError extends Error {
  constructor(kind, message, extra = {}) {
    super(message);
    this.kind = kind;
    this.extra = extra;
  }
}

// ---------------------------------------------------------------------------------------------
// Structural string of machine.config (spec §3). Not JSON.stringify: keys in plain UTF-16 order,
// functions/undefined/symbols skipped as members and empty as array items, NaN/Infinity via
// String(), bigint as `<digits>n`, an object on its own ancestor path as "[circular]".
export function structuralString(root) {
  const ancestors = [];
  const walk = (v) => {
    if (v === null) return "null";
    switch (typeof v) {
      case "string":
        return JSON.stringify(v);
      case "number":
      case "boolean":
        return String(v);
      case "bigint":
        return `${v}n`;
      case "function":
      case "undefined":
      case "symbol":
        return undefined;
      default:
        break;
    }
    if (ancestors.includes(v)) return '"[circular]"';
    ancestors.push(v);
    let out;
    if (Array.isArray(v)) {
      const items = [];
      for (let i = 0; i < v.length; i++) {
        const s = walk(v[i]);
        items.push(s === undefined ? "" : s);
      }
      out = "[" + items.join(",") + "]";
    } else {
      const members = [];
      for (const k of Object.keys(v).sort()) {
        const s = walk(v[k]);
        if (s !== undefined) members.push(JSON.stringify(k) + ":" + s);
      }
      out = "{" + members.join(",") + "}";
    }
    ancestors.pop();
    return out;
  };
  const s = walk(root);
  return s === undefined ? "" : s;
}

// ---------------------------------------------------------------------------------------------
// Graph extraction from the machine's resolved state nodes.
function stripHash(t) {
  if (typeof t === "string") return t.startsWith("#") ? t.slice(1) : t;
  if (t && typeof t === "object" && typeof t.id === "string") return t.id;
  return String(t);
}

function nameOf(x, fallback) {
  if (x == null) return null;
  if (typeof x === "string") return x;
  if (typeof x === "function") return x.name && x.name !== fallback ? x.name : "(inline)";
  if (typeof x === "object" && typeof x.type === "string") return x.type;
  return "(inline)";
}

function actionNames(a) {
  if (a == null) return [];
  const list = Array.isArray(a) ? a : [a];
  return list.map((x) => nameOf(x, "")).filter((x) => x !== null);
}

function srcName(src) {
  if (typeof src === "string") return src;
  if (src && typeof src === "object" && typeof src.id === "string") return src.id;
  return "<inline>";
}

function transitionInfo(t, source) {
  let event = t.eventType ?? "";
  let kind = "on";
  const m = t.matches;
  if (event === "xstate.done.actor" && m && m.actorId !== undefined) {
    event = `xstate.done.actor.${m.actorId}`;
    kind = "invoke.onDone";
  } else if (event === "xstate.error.actor" && m && m.actorId !== undefined) {
    event = `xstate.error.actor.${m.actorId}`;
    kind = "invoke.onError";
  } else if (event === "xstate.done.state" && m && m.stateId !== undefined) {
    event = `xstate.done.state.${m.stateId}`;
    kind = "onDone";
  } else if (event === "xstate.after" && m && m.delay !== undefined) {
    event = `xstate.after.${m.delay}.${m.stateId ?? source}`;
    kind = "after";
  } else if (event === "") {
    kind = t.source && t.source.type === "choice" ? "choice" : "always"; // a choice state's routing
  }
  const dynamic = typeof t.to === "function";
  const targets = !dynamic && Array.isArray(t.target) ? t.target.map(stripHash) : [];
  return {
    source,
    event,
    targets,
    guard: nameOf(t.guard, "guard"),
    dynamic,
    reenter: !!t.reenter,
    kind,
    actions: actionNames(t.actions),
  };
}

function extractGraph(m) {
  edgeOf.clear();
  hooked = false;
  const nodes = [];
  const transitions = [];
  const visit = (sn) => {
    const children = Object.values(sn.states ?? {});
    let initial = null;
    if (sn.type === "compound" && sn.initial && Array.isArray(sn.initial.target)) {
      initial = sn.initial.target.length ? stripHash(sn.initial.target[0]) : null;
    } else if (sn.type === "history") {
      // The history node's default target (taken when no history is recorded yet).
      const tgt = sn.config?.target;
      if (typeof tgt === "string" && sn.parent) {
        initial = tgt.startsWith("#") ? tgt.slice(1) : `${sn.parent.id}.${tgt}`;
      }
    }
    nodes.push({
      id: sn.id,
      key: sn.key,
      path: Array.isArray(sn.path) ? sn.path.map(String) : [],
      kind: sn.type,
      parent: sn.parent ? sn.parent.id : null,
      children: children.map((c) => c.id),
      initial,
      history: sn.type === "history" ? (sn.history === "deep" ? "deep" : "shallow") : null,
      invoke: (sn.invoke ?? []).map((inv) => [String(inv.id), srcName(inv.src)]),
      entry: actionNames(sn.entry),
      exit: actionNames(sn.exit),
      tags: Array.isArray(sn.tags) ? sn.tags.map(String) : [],
      description: typeof sn.description === "string" ? sn.description : null,
    });
    if (sn.transitions instanceof Map) {
      for (const list of sn.transitions.values()) {
        for (const t of list) {
          edgeOf.set(t, transitions.length);
          transitions.push(transitionInfo(t, sn.id));
        }
      }
    }
    for (const t of sn.always ?? []) {
      edgeOf.set(t, transitions.length);
      transitions.push(transitionInfo(t, sn.id));
    }
    for (const c of children) visit(c);
  };
  visit(m.root);
  return { machineId: m.id, root: m.root.id, nodes, transitions };
}

// ---------------------------------------------------------------------------------------------
// The transitions a step takes (Snapshot.transitions on the Python side), read off XState's own
// pure macrostep while it runs (no second evaluation, no action executed: the step is still
// `transition(machine, snapshot, event)` with its inert actor scope). XState 6.0.0-alpha.48 reads
// a transition's `actions` exactly once per transition a microstep applies (microstep's loop over
// its filtered transitions; `_transitionFast` reads it while checking its one candidate), so an
// accessor on `actions` of each drawn transition names the transitions applied, in order (a
// transition with actions is read twice in a row, counted once). What
// starts a new microstep: a selection for an event (`machine.getTransitionData`, the external
// event and each raised one) or an eventless selection (which reads `always` of the active state
// nodes). A function transition's resolved target is its `to`'s last return value (`to` is
// wrapped to keep it). The hooks are installed on the first request that asks for transitions
// and cost one null check per read otherwise.
const edgeOf = new Map(); // drawn transition object -> its index in the graph's transitions
let hooked = false;
let hooksOk = false;
let rec = null; // the recording of the step in progress, or null

const toResults = new Map(); // function transition -> its `to`'s last return value in this step

function newRecording(eventType) {
  toResults.clear();
  return { rows: [], step: -1, open: false, last: null, eventType, fast: false, values: [], atoms: null };
}

// The state value after each microstep that took transitions: the first time the step looks at
// the state again after it. An event selection gets that snapshot (its value); an eventless
// selection reads `always` of every active atomic state node (its configuration, whose value is
// XState's getStateValue of it); the last microstep's is the step's result.
function observe(value) {
  if (rec.step >= 0 && rec.values[rec.step] === undefined) rec.values[rec.step] = value;
}

function isAtomic(sn) {
  return sn.type === "atomic" || sn.type === "final" || sn.type === "choice";
}

function valueOfAtoms(atoms) {
  const active = new Set();
  let root = null;
  for (const a of atoms) {
    for (let n = a; n; n = n.parent) {
      active.add(n);
      if (!n.parent) root = n;
    }
  }
  const val = (n) => {
    const kids = Object.values(n.states ?? {}).filter((c) => active.has(c));
    if (n.type === "compound") {
      if (!kids.length) return {};
      if (isAtomic(kids[0])) return kids[0].key;
    }
    const out = {};
    for (const c of kids) out[c.key] = val(c);
    return out;
  };
  return root === null ? undefined : val(root);
}

function flushAtoms() {
  if (rec.atoms !== null) {
    observe(valueOfAtoms(rec.atoms));
    rec.atoms = null;
  }
}

function noteSelection(eventType, snapshot) {
  flushAtoms();
  if (snapshot !== undefined) observe(snapshot.value);
  rec.open = false;
  if (eventType !== undefined) rec.eventType = eventType;
}

function resolveTargetIds(source, targets) {
  const out = [];
  for (const tg of Array.isArray(targets) ? targets : [targets]) {
    if (tg && typeof tg === "object" && typeof tg.id === "string") {
      out.push(tg.id);
      continue;
    }
    if (typeof tg !== "string") continue;
    let node;
    if (tg.startsWith("#")) {
      node = source.machine.getStateNodeById(tg);
    } else {
      const internal = tg.startsWith(".");
      let at = internal ? source : source.parent;
      const path = internal ? tg.slice(1) : tg;
      if (at == null) at = source;
      for (const key of path.split(".")) {
        if (!key.length) break;
        at = at.states?.[key];
        if (at == null) break;
      }
      node = at;
    }
    if (node && typeof node.id === "string") out.push(node.id);
  }
  return out;
}

function noteTaken(t) {
  flushAtoms();
  if (!rec.open) {
    rec.step += 1;
    rec.open = true;
  } else if (rec.last === t) {
    return; // `if (t.actions) push(...t.actions)` reads it twice: one transition, once
  }
  rec.last = t;
  let targets;
  let reenter = !!t.reenter;
  if (typeof t.to === "function") {
    const r = toResults.get(t);
    targets = r && r.target !== undefined ? resolveTargetIds(t.source, r.target) : [];
    if (r && r.reenter !== undefined) reenter = !!r.reenter;
  } else {
    targets = Array.isArray(t.target) ? t.target.map((n) => n.id) : [];
  }
  rec.rows.push([rec.step, rec.eventType, edgeOf.get(t) ?? null, targets, reenter]);
}

// Whether every object the hooks go on can take them (a frozen machine or transition cannot:
// the step then reports no transitions, and the views infer the move from the state change).
function hookable(m) {
  const own = (o, k) => {
    const d = Object.getOwnPropertyDescriptor(o, k);
    return d === undefined ? Object.isExtensible(o) : d.configurable || d.writable;
  };
  if (!own(m, "getTransitionData") || !own(m, "_transitionFast")) return false;
  for (const t of edgeOf.keys()) {
    const d = Object.getOwnPropertyDescriptor(t, "actions");
    if (d !== undefined ? !d.configurable : !Object.isExtensible(t)) return false;
    if (typeof t.to === "function" && !own(t, "to")) return false;
  }
  const ok = (sn) => {
    const d = Object.getOwnPropertyDescriptor(sn, "always");
    if (d !== undefined && !d.configurable) return false;
    return Object.values(sn.states ?? {}).every(ok);
  };
  return ok(m.root);
}

// Install the hooks once; false when the machine cannot take them (nothing is then installed).
function installHooks(m) {
  if (hooked) return hooksOk;
  hooked = true;
  hooksOk = hookable(m);
  if (!hooksOk) {
    process.stderr.write("agentscope runner: the machine is frozen; steps report no transitions\n");
    return false;
  }
  for (const t of edgeOf.keys()) {
    let actions = t.actions;
    Object.defineProperty(t, "actions", {
      configurable: true,
      enumerable: true,
      get() {
        if (rec !== null && !rec.fast) noteTaken(t);
        return actions;
      },
      set(v) {
        actions = v;
      },
    });
    if (typeof t.to === "function") {
      const to = t.to;
      t.to = function (...args) {
        const r = to.apply(this, args);
        if (rec !== null) toResults.set(t, r);
        return r;
      };
    }
  }
  const visit = (sn) => {
    const atomic = isAtomic(sn);
    if (sn.always !== undefined || atomic) {
      let always = sn.always;
      Object.defineProperty(sn, "always", {
        configurable: true,
        enumerable: true,
        get() {
          if (rec !== null && !rec.fast) {
            if (rec.atoms === null) noteSelection(undefined);
            if (atomic) (rec.atoms ??= new Set()).add(sn);
          }
          return always;
        },
        set(v) {
          always = v;
        },
      });
    }
    for (const c of Object.values(sn.states ?? {})) visit(c);
  };
  visit(m.root);
  const proto = Object.getPrototypeOf(m);
  const getTransitionData = proto.getTransitionData;
  m.getTransitionData = function (snapshot, event, ...rest) {
    if (rec !== null) noteSelection(event && typeof event === "object" ? String(event.type) : undefined, snapshot);
    return getTransitionData.call(this, snapshot, event, ...rest);
  };
  const transitionFast = proto._transitionFast;
  if (typeof transitionFast === "function") {
    m._transitionFast = function (snapshot, event, actorScope) {
      if (rec === null) return transitionFast.call(this, snapshot, event, actorScope);
      rec.fast = true;
      let out;
      try {
        out = transitionFast.call(this, snapshot, event, actorScope);
      } finally {
        rec.fast = false;
      }
      if (out) {
        // the fast path applies the one candidate of the atomic top-level state (no `to`)
        const t = this.root.states[snapshot.value].transitions.get(event.type)[0];
        noteSelection(String(event.type));
        noteTaken(t);
      }
      return out;
    };
  }
  return true;
}

// The initial entry as XState's initialMicrostep builds it: from the root to the deepest initial
// state nodes (history nodes excepted), re-entering.
function initialRow(m) {
  const set = new Set();
  const iter = (sn) => {
    if (set.has(sn)) return;
    set.add(sn);
    if (sn.type === "compound") for (const t of sn.initial.target ?? []) iter(t);
    else if (sn.type === "parallel") for (const c of Object.values(sn.states)) if (c.type !== "history") iter(c);
  };
  iter(m.root);
  const all = [...set];
  const isDesc = (c, p) => {
    for (let a = c.parent; a; a = a.parent) if (a === p) return true;
    return false;
  };
  const leaves = all.filter((n) => !all.some((o) => o !== n && isDesc(o, n)));
  return [0, "@xstate.init", null, leaves.map((n) => n.id), true];
}

// Run `fn` (one pure step) while recording the transitions it takes; returns [result, rows].
// Run `fn` (one pure step: returns [snapshot, effects]) while recording the transitions it
// takes; returns [its result, rows, the value after each microstep].
function recording(eventType, fn, first) {
  rec = newRecording(eventType);
  if (first) {
    rec.rows.push(first);
    rec.step = 0;
  }
  try {
    const out = fn();
    flushAtoms();
    const values = rec.values;
    values.length = rec.step + 1;
    for (let k = 0; k < values.length; k++) if (values[k] === undefined) values[k] = out[0].value;
    return [out, rec.rows, values];
  } finally {
    rec = null;
  }
}

// ---------------------------------------------------------------------------------------------
// Loading.
function isMachine(v) {
  if (v === null || typeof v !== "object") return false;
  if (xs && typeof xs.StateMachine === "function" && v instanceof xs.StateMachine) return true;
  return (
    typeof v.transition === "function" &&
    typeof v.getPersistedSnapshot === "function" &&
    typeof v.restoreSnapshot === "function" &&
    "root" in v &&
    "config" in v
  );
}

// Does Node treat this file as CommonJS? (.cjs/.cts always; .js/.ts by the nearest package.json
// "type" field, CommonJS when absent.)
function isCommonJs(modulePath) {
  const ext = path.extname(modulePath).toLowerCase();
  if (ext === ".cjs" || ext === ".cts") return true;
  if (ext === ".mjs" || ext === ".mts") return false;
  let dir = path.dirname(modulePath);
  for (;;) {
    const pj = path.join(dir, "package.json");
    if (fs.existsSync(pj)) {
      try {
        return JSON.parse(fs.readFileSync(pj, "utf8")).type !== "module";
      } catch {
        return true;
      }
    }
    const up = path.dirname(dir);
    if (up === dir) return true;
    dir = up;
  }
}

function missingXstate(modulePath, err) {
  const dir = path.dirname(modulePath);
  return new RunnerError(
    "xstate-missing",
    `Cannot resolve 'xstate' from ${modulePath}: it is not installed in the module's project` +
      (globalThis.agentscopeNodePath?.length
        ? ` nor in ${globalThis.agentscopeNodePath.join(", ")} (AGENTSCOPE_NODE_PATH, then the per-user cache)`
        : "") +
      `. Run \`agentscope setup-node\` (installs xstate@6.0.0-alpha.48 for your user), or ` +
      `\`npm install xstate@6.0.0-alpha.48\` in ${dir} (or the project root above it). ` +
      `(${err && err.code ? err.code : err})`,
  );
}

// Resolve and load `xstate` exactly as the user's module does: with the "import" conditions for
// an ES module (import.meta.resolve with the module as parent; the runner is started with
// --experimental-import-meta-resolve for that), with the "require" conditions for CommonJS.
async function resolveXstate(modulePath) {
  const moduleUrl = pathToFileURL(modulePath);
  let resolved;
  let mod;
  const viaImport = !isCommonJs(modulePath) && process.execArgv.includes("--experimental-import-meta-resolve");
  if (viaImport) {
    try {
      resolved = import.meta.resolve("xstate", moduleUrl.href);
    } catch (err) {
      throw missingXstate(modulePath, err);
    }
    mod = await import(resolved);
    resolved = resolved.startsWith("file:") ? fileURLToPath(resolved) : resolved;
  } else {
    const req = createRequire(moduleUrl);
    try {
      resolved = req.resolve("xstate");
    } catch (err) {
      throw missingXstate(modulePath, err);
    }
    mod = req("xstate");
  }
  let version = null;
  try {
    let dir = path.dirname(resolved);
    for (let i = 0; i < 6; i++) {
      const pj = path.join(dir, "package.json");
      if (fs.existsSync(pj)) {
        const meta = JSON.parse(fs.readFileSync(pj, "utf8"));
        if (meta.name === "xstate") {
          version = meta.version ?? null;
          break;
        }
      }
      dir = path.dirname(dir);
    }
  } catch {
    version = null;
  }
  return { resolved, module: mod, version };
}

async function opLoad(req) {
  const modulePath = path.resolve(req.path);
  if (!fs.existsSync(modulePath)) {
    throw new RunnerError("module-not-found", `Machine module not found: ${modulePath}`);
  }
  const x = await resolveXstate(modulePath);
  xs = x.module;
  if (typeof xs.transition !== "function" || typeof xs.initialTransition !== "function") {
    throw new RunnerError(
      "xstate-incompatible",
      `The xstate resolved from ${modulePath} (${x.resolved}, version ${x.version}) has no pure ` +
        "`transition`/`initialTransition`; install xstate@6.0.0-alpha.48.",
    );
  }
  let ns;
  try {
    ns = await import(pathToFileURL(modulePath).href);
  } catch (err) {
    throw new RunnerError("import-failed", `Importing ${modulePath} threw: ${errText(err)}`, {
      stack: err && err.stack ? String(err.stack) : undefined,
    });
  }
  const names = Object.keys(ns);
  let exportName;
  let picked;
  if (req.export != null) {
    exportName = String(req.export);
    if (!(exportName in ns)) {
      // A CommonJS module's exports object sits under `default`.
      const d = ns.default;
      if (d && typeof d === "object" && exportName in d) {
        picked = d[exportName];
      } else {
        throw new RunnerError(
          "export-not-found",
          `${modulePath} has no export '${exportName}'; its exports are: ${names.join(", ") || "(none)"}`,
        );
      }
    } else {
      picked = ns[exportName];
    }
    if (!isMachine(picked)) {
      throw new RunnerError(
        "not-a-machine",
        `Export '${exportName}' of ${modulePath} is not an XState machine (got ${describeValue(picked)})`,
      );
    }
  } else if (isMachine(ns.default)) {
    exportName = "default";
    picked = ns.default;
  } else {
    const found = new Map();
    const consider = (obj, prefix) => {
      for (const k of Object.keys(obj)) {
        if (k === "default") continue;
        let v;
        try {
          v = obj[k];
        } catch {
          continue;
        }
        if (isMachine(v)) {
          if (![...found.values()].includes(v)) found.set(prefix + k, v);
        }
      }
    };
    consider(ns, "");
    if (found.size === 0 && ns.default && typeof ns.default === "object") consider(ns.default, "");
    if (found.size === 0) {
      throw new RunnerError(
        "not-a-machine",
        `${modulePath} exports no XState machine (exports: ${names.join(", ") || "(none)"})`,
      );
    }
    if (found.size > 1) {
      throw new RunnerError(
        "ambiguous-export",
        `${modulePath} exports several machines (${[...found.keys()].join(", ")}); pass export=<name>`,
      );
    }
    [[exportName, picked]] = [...found.entries()];
  }
  machine = picked;
  const declared = machine.version;
  return {
    machineId: typeof machine.id === "string" ? machine.id : "(machine)",
    declaredVersion: declared === undefined || declared === null ? null : String(declared),
    structural: structuralString(machine.config),
    exportName,
    graph: extractGraph(machine),
    xstatePath: x.resolved,
    xstateVersion: x.version,
  };
}

function describeValue(v) {
  if (v === null) return "null";
  if (typeof v === "object") return `an object with keys ${Object.keys(v).slice(0, 8).join(", ")}`;
  return typeof v;
}

function errText(err) {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  try {
    return String(err);
  } catch {
    return "<unprintable>";
  }
}

// ---------------------------------------------------------------------------------------------
// Snapshots.
function requireMachine() {
  if (!machine) throw new RunnerError("protocol", "no machine loaded (send 'load' first)");
  return machine;
}

function persistJson(snap) {
  // JSON.stringify drops undefined-valued keys (output/error/_nextActorIds), as the reference
  // JSON-serializes the persisted snapshot.
  const p = machine.getPersistedSnapshot(snap);
  return [JSON.stringify(p), stateHash(p)];
}

function childSessions(snap) {
  const out = {};
  const ch = snap && snap.children;
  if (ch) {
    for (const k of Object.keys(ch)) {
      const sid = ch[k] && ch[k].sessionId;
      if (typeof sid === "string") out[k] = sid;
    }
  }
  return out;
}

function newHandle(snap, cache, sinceSeed) {
  const id = nextHandle++;
  handles.set(id, { snap, cache, sinceSeed });
  return id;
}

function restoreFrom(persisted) {
  const m = requireMachine();
  return m.restoreSnapshot(JSON.parse(JSON.stringify(persisted)));
}

// The rebinding cache of one fold: `map` is actorId + "\0" + recordedSessionId -> minted session
// id; `byMinted` indexes the keys by minted id so a restore can move the entries of running
// children in O(children). Session ids are `<process nonce>:<system counter>:<actor counter>`,
// so an id minted by one actor system never equals one minted by another: entries that pointed
// at an old system's finished child stay stale (never match) without being touched.
class SessionCache {
  constructor(entries) {
    this.map = new Map();
    this.byMinted = new Map();
    if (entries) for (const [k, v] of entries) this.set(k, v);
  }
  get(key) {
    return this.map.get(key);
  }
  set(key, minted) {
    const prev = this.map.get(key);
    if (prev !== undefined) {
      const keys = this.byMinted.get(prev);
      if (keys) {
        const j = keys.indexOf(key);
        if (j >= 0) keys.splice(j, 1);
        if (!keys.length) this.byMinted.delete(prev);
      }
    }
    this.map.set(key, minted);
    const keys = this.byMinted.get(minted);
    if (keys) keys.push(key);
    else this.byMinted.set(minted, [key]);
  }
  clone() {
    const c = new SessionCache();
    c.map = new Map(this.map);
    for (const [m, keys] of this.byMinted) c.byMinted.set(m, keys.slice());
    return c;
  }
  // Only the entries of running children can move at a restore: the index forgets the others
  // (their keys stay in `map`, bound to sessions no child has any more: stale, as they must be).
  // Called at each re-seed, it keeps the index as small as the running children, not the log.
  keepIndexOf(liveChildren) {
    const live = Object.values(liveChildren);
    if (this.byMinted.size <= live.length) return;
    const kept = new Map();
    for (const minted of live) {
      const keys = this.byMinted.get(minted);
      if (keys) kept.set(minted, keys);
    }
    this.byMinted = kept;
  }
  // Carry the cache over a restore: entries that pointed at a child's session in the old
  // snapshot now point at the same child's session in the restored one.
  remap(oldChildren, newChildren, delta) {
    for (const actorId of Object.keys(oldChildren)) {
      const before = oldChildren[actorId];
      const after = newChildren[actorId];
      if (after === undefined || after === before) continue;
      const keys = this.byMinted.get(before);
      if (!keys) continue;
      for (const key of keys.slice()) {
        if (key.slice(0, key.indexOf("\u0000")) !== actorId) continue;
        this.set(key, after);
        if (delta) delta[key] = after;
      }
    }
  }
}

function machineCall(what, fn) {
  try {
    return fn();
  } catch (err) {
    throw new RunnerError("machine-error", `${what} threw: ${errText(err)}`, {
      stack: err && err.stack ? String(err.stack) : undefined,
    });
  }
}

function opInitial(req) {
  const m = requireMachine();
  const init = () => ("input" in req ? xs.initialTransition(m, req.input) : xs.initialTransition(m));
  if (req.taken && installHooks(m)) {
    const [[snap], rows, values] = machineCall("initialTransition", () =>
      recording("@xstate.init", init, initialRow(m)),
    );
    return finishSingle(snap, [rows, values]);
  }
  const [snap] = machineCall("initialTransition", init);
  return finishSingle(snap);
}

function opRestore(req) {
  return finishSingle(machineCall("restoreSnapshot", () => restoreFrom(req.persisted)));
}

function finishSingle(snap, taken) {
  let persisted;
  let hash;
  try {
    [persisted, hash] = persistJson(snap);
  } catch (err) {
    throw new RunnerError("not-serializable", `the persisted snapshot is not JSON: ${errText(err)}`);
  }
  const children = childSessions(snap);
  const handle = newHandle(snap, new SessionCache(), 0);
  return {
    raw:
      `{"handle":${handle},"persisted":${persisted},"hash":"${hash}","children":${JSON.stringify(children)}` +
      (taken === undefined ? "}" : `,"taken":${JSON.stringify(JSON.stringify(taken))}}`),
  };
}

function rebind(ev, snap, cache, delta) {
  if (ev === null || typeof ev !== "object") return ev;
  const actorId = ev.actorId;
  const recorded = ev.sessionId;
  if (typeof actorId !== "string" || typeof recorded !== "string") return ev;
  const key = actorId + "\u0000" + recorded;
  let minted = cache.get(key);
  if (minted === undefined) {
    const child = snap.children ? snap.children[actorId] : undefined;
    const sid = child ? child.sessionId : undefined;
    if (typeof sid !== "string") return ev;
    minted = sid;
    cache.set(key, minted);
    delta[key] = minted;
  }
  return { ...ev, sessionId: minted };
}

// A fold reply is streamed: "part" lines of at most ~partBytes of snapshots each, then the final
// reply. Each snapshot comes with its state hash (spec §2, computed here); a persisted snapshot
// identical to the previous one of the same fold is sent as null (Python reuses the previous
// object), and so are the children's session ids (except for the last snapshot). With emit "last" only the last persisted snapshot is sent (hashes for every one).
// With emit "sparse" (a verifying pass that keeps no snapshots) a persisted snapshot is sent
// only where the caller needs it to judge the entry: the first and last of the request, one
// whose hash is not `expect[i]` (the recorded hash), and one that may hold timers. The rest are
// null (not sent: a placeholder, not "the same again"), and so are the children's session ids
// but the last's. `same[i]` says whether snapshot i equals the one before it as JSON values
// (what Python's == says of the two parsed snapshots; null for the first).
// Output back-pressure: folding pauses while more than OUT_HIGH bytes wait to be written (each
// waiting byte is a copy outside the JS heap; 8 MB here cost the runner ~70 MB of peak RSS on the
// 300 KB-snapshot benchmark, for no measured speed: Python parses a part faster than it is folded).
const OUT_HIGH = 1 << 20;
const DEFAULT_PART_BYTES = 1 << 20;

async function writePart(id, raw) {
  const line = `{"id":${JSON.stringify(id)},"ok":true,"part":${raw}}\n`;
  if (protocolOut.writableLength > OUT_HIGH) await writeAll(line);
  else rawWrite(line);
}

// Whether `p.timers` may be truthy once parsed in Python (a non-empty object or array, a
// non-empty string, a non-zero number, true). False only where it surely is not.
function mayHoldTimers(p) {
  const t = p.timers;
  if (t === undefined || t === null || t === false || t === 0 || t === "") return false;
  if (typeof t !== "object" || typeof t.toJSON === "function") return true;
  for (const _ in t) return true;
  return false;
}

// Two persisted snapshots with equal canonical text differ at most in what the hash leaves out
// (session ids, timer and actor counters, agentMeta) or in key order: compare them as JSON values.
function sameJsonValue(a, b) {
  const ja = JSON.stringify(a);
  const jb = JSON.stringify(b);
  return ja === jb || jsonValueEqual(JSON.parse(ja), JSON.parse(jb));
}

function jsonValueEqual(a, b) {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonValueEqual(a[i], b[i])) return false;
    return true;
  }
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) if (!Object.hasOwn(b, k) || !jsonValueEqual(a[k], b[k])) return false;
  return true;
}

async function opFold(req, id) {
  const m = requireMachine();
  const events = req.events;
  if (!Array.isArray(events)) throw new RunnerError("protocol", "fold: 'events' must be an array");
  const reseedEvery =
    !reseedBroken && Number.isInteger(req.reseedEvery) && req.reseedEvery > 0 ? req.reseedEvery : 0;
  const rebindOn = req.rebind !== false;
  const partBytes = Number.isInteger(req.partBytes) && req.partBytes > 0 ? req.partBytes : DEFAULT_PART_BYTES;
  const lastOnly = req.emit === "last";
  const sparse = req.emit === "sparse";
  const expect = sparse && req.expect != null ? req.expect : null;
  const wantTaken = req.taken === true && installHooks(m);
  if (expect !== null && (!Array.isArray(expect) || expect.length !== events.length)) {
    throw new RunnerError("protocol", "fold: 'expect' must hold one hash (or null) per event");
  }
  const delta = {};
  let snap;
  let cache;
  let sinceSeed;
  const seed = req.seed ?? {};
  if (seed.after !== undefined && seed.after !== null) {
    // Continue from the last snapshot of an earlier fold request (pipelined folds).
    const hid = foldResults.get(seed.after);
    foldResults.delete(seed.after);
    if (hid === undefined) throw new RunnerError("unknown-handle", `fold request ${seed.after} left no snapshot`);
    seed.handle = hid;
  }
  if (seed.handle !== undefined && seed.handle !== null) {
    const h = handles.get(seed.handle);
    if (!h) throw new RunnerError("unknown-handle", `unknown snapshot handle ${seed.handle}`);
    snap = h.snap;
    if (req.sessions == null) {
      // The cache moves to the new handle (no copy); this handle cannot continue a fold with
      // its own cache again (the caller then re-sends its copy: "unknown-handle").
      if (h.cache === null) throw new RunnerError("unknown-handle", `handle ${seed.handle} gave away its cache`);
      cache = h.cache;
      h.cache = null;
    } else {
      cache = new SessionCache(Object.entries(req.sessions));
    }
    sinceSeed = h.sinceSeed;
  } else if (seed.persisted !== undefined) {
    snap = machineCall("restoreSnapshot", () => restoreFrom(seed.persisted));
    cache = new SessionCache(Object.entries(req.sessions ?? {}));
    cache.remap(seed.children ?? {}, childSessions(snap), delta);
    sinceSeed = 0;
  } else {
    throw new RunnerError("protocol", "fold: 'seed' needs 'handle' or 'persisted'");
  }
  let parts = [];
  let kids = [];
  let hashes = [];
  let bytes = 0;
  let same = [];
  let taken = [];
  let prevJson = null;
  let prevKids = null;
  let prevP = null; // sparse: the previous persisted snapshot and its canonical text
  let prevCanon = null;
  const flush = () => {
    const tail = (sparse ? `,"same":${JSON.stringify(same)}` : "") + (wantTaken ? `,"taken":[${taken.join(",")}]` : "");
    const raw = `{"persisted":[${parts.join(",")}],"hashes":${JSON.stringify(hashes)},"children":[${kids.join(",")}]${tail}}`;
    parts = [];
    kids = [];
    hashes = [];
    same = [];
    taken = [];
    bytes = 0;
    return raw;
  };
  for (let i = 0; i < events.length; i++) {
    if (reseedEvery && !reseedBroken && sinceSeed >= reseedEvery) {
      // alpha.48 grows the pure actor system's prototype chain by one per transition; a restore
      // from the persisted form starts a fresh chain (proved hash-neutral by the test suite).
      // A machine whose persisted form cannot be restored keeps folding the live snapshot.
      const before = childSessions(snap);
      let fresh;
      try {
        fresh = m.restoreSnapshot(m.getPersistedSnapshot(snap));
      } catch (err) {
        if (!reseedWarned) {
          process.stderr.write(`agentscope runner: re-seeding disabled, restore failed: ${errText(err)}\n`);
          reseedWarned = true;
        }
        reseedBroken = true;
      }
      if (fresh !== undefined) {
        snap = fresh;
        const now = childSessions(snap);
        cache.remap(before, now, delta);
        cache.keepIndexOf(now);
      }
      sinceSeed = 0;
    }
    const ev = events[i];
    let next;
    try {
      const e = rebindOn ? rebind(ev, snap, cache, delta) : ev;
      if (wantTaken) {
        const [[after], rows, values] = recording(e && typeof e === "object" ? String(e.type) : undefined, () =>
          xs.transition(m, snap, e),
        );
        next = after;
        // each step's [rows, values] as one JSON string: Python keys its cache of records by it
        taken.push(rows.length ? JSON.stringify(JSON.stringify([rows, values])) : '""');
      } else {
        [next] = xs.transition(m, snap, e);
      }
    } catch (err) {
      throw new RunnerError("machine-error", `machine threw on event ${i} of the batch: ${errText(err)}`, {
        index: i,
        eventType: ev && typeof ev === "object" ? ev.type : undefined,
        stack: err && err.stack ? String(err.stack) : undefined,
      });
    }
    snap = next;
    sinceSeed += 1;
    const last = i === events.length - 1;
    let hash;
    let sent; // the persisted snapshot's JSON as it goes out, or null (see above)
    let size; // characters of the state's text: what the heap policy looks at
    let p;
    try {
      p = m.getPersistedSnapshot(snap);
      if (sparse) {
        const canon = canonicalSnapshotJson(p);
        hash = djb2Hex(canon);
        same.push(i === 0 ? null : canon === prevCanon && sameJsonValue(p, prevP) ? 1 : 0);
        const misses = expect !== null && typeof expect[i] === "string" && expect[i] !== hash;
        sent = i === 0 || last || misses || mayHoldTimers(p) ? JSON.stringify(p) : null;
        size = canon.length;
        prevP = p;
        prevCanon = canon;
      } else {
        const json = JSON.stringify(p);
        hash = stateHash(p);
        sent = (lastOnly ? !last : json === prevJson) ? null : json;
        size = json.length;
        prevJson = json;
      }
    } catch (err) {
      let shown = err;
      if (sparse && p !== undefined) {
        try {
          JSON.stringify(p); // name what JSON.stringify objects to, as the other modes do
        } catch (jsonErr) {
          shown = jsonErr;
        }
      }
      throw new RunnerError(
        "not-serializable",
        `the persisted snapshot after event ${i} of the batch is not JSON: ${errText(shown)}`,
        { index: i, eventType: ev && typeof ev === "object" ? ev.type : undefined },
      );
    }
    noteStateSize(size);
    hashes.push(hash);
    if (sent === null) {
      parts.push("null");
    } else {
      parts.push(sent);
      bytes += sent.length;
    }
    const k = sparse && !last ? "null" : JSON.stringify(childSessions(snap));
    kids.push(k === prevKids && !last ? "null" : k);
    prevKids = k;
    if (bytes >= partBytes && !last) await writePart(id, flush());
  }
  const handle = newHandle(snap, cache, sinceSeed);
  if (id !== null) {
    foldResults.set(id, handle);
    if (foldResults.size > 64) foldResults.delete(foldResults.keys().next().value);
  }
  const raw = flush();
  return { raw: raw.slice(0, -1) + `,"handle":${handle},"sessions":${JSON.stringify(delta)}}` };
}

function referenceOrNull(value) {
  try {
    return referenceStateHash(value);
  } catch (err) {
    if (err instanceof RangeError) return null; // its map() recursion is deeper per level
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Dispatch.
async function handle(req) {
  // Handles the caller dropped. Never the seed of this request: the caller still holds it.
  if (Array.isArray(req.release)) for (const h of req.release) handles.delete(h);
  switch (req.op) {
    case "load":
      loading = true;
      try {
        loaded = await opLoad(req);
      } finally {
        loading = false;
      }
      return loaded;
    case "describe":
      if (!loaded) throw new RunnerError("protocol", "no machine loaded (send 'load' first)");
      return loaded;
    case "initial":
      return opInitial(req);
    case "restore":
      return opRestore(req);
    case "fold":
      return await opFold(req, req.id ?? null);
    case "release":
      return null;
    case "ping":
      return { pid: process.pid, handles: handles.size };
    case "hash":
      // Both JS implementations of the spec §2 hash on a value, as JSON.parse read it (tests).
      return { hash: stateHash(req.value), reference: referenceOrNull(req.value), json: JSON.stringify(req.value) };
    default:
      throw new RunnerError("protocol", `unknown op '${req.op}'`);
  }
}

async function serve(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    await writeAll(
      JSON.stringify({ id: null, ok: false, error: { kind: "protocol", message: `bad request line: ${errText(err)}` } }) +
        "\n",
    );
    return;
  }
  const id = req && typeof req === "object" ? (req.id ?? null) : null;
  let reply;
  try {
    const result = await handle(req);
    if (result && typeof result === "object" && typeof result.raw === "string") {
      reply = `{"id":${JSON.stringify(id)},"ok":true,"result":${result.raw}}`;
    } else {
      reply = JSON.stringify({ id, ok: true, result: result ?? null });
    }
  } catch (err) {
    const error =
      err instanceof RunnerError
        ? { kind: err.kind, message: err.message, ...err.extra }
        : { kind: "internal", message: errText(err), stack: err && err.stack ? String(err.stack) : undefined };
    if (error.stack === undefined && err && err.stack && err instanceof RunnerError && error.kind !== "machine-error") {
      delete error.stack;
    }
    reply = JSON.stringify({ id, ok: false, error });
  }
  await writeAll(reply + "\n");
}

// Robust line reader: chunks are kept as a list and joined once per line, so a 50 MB line
// costs one copy, not a quadratic string build.
let pending = [];
let queue = Promise.resolve();
process.stdin.on("data", (chunk) => {
  let start = 0;
  for (;;) {
    const nl = chunk.indexOf(10, start);
    if (nl === -1) {
      if (start < chunk.length) pending.push(chunk.subarray(start));
      break;
    }
    pending.push(chunk.subarray(start, nl));
    const line = pending.length === 1 ? pending[0].toString("utf8") : Buffer.concat(pending).toString("utf8");
    pending = [];
    start = nl + 1;
    if (line.trim().length) queue = queue.then(() => serve(line));
  }
});
process.stdin.on("end", () => {
  // A module whose import never settles (a top-level await on a promise that never resolves)
  // would keep the queue pending forever: the caller has gone, so stop now.
  if (loading) process.exit(0);
  queue.then(() => process.exit(0));
});
// When the Python process dies, stdin's EOF only reaches a runner that is idle. A machine stuck
// in user code (a guard looping forever) never reads it again, so a watchdog thread, which runs
// even while the main thread is busy, kills the runner once it has been orphaned (re-parented).
const watchdog = new Worker(
  `const ppid = ${process.ppid};
   setInterval(() => { if (process.ppid !== ppid) process.kill(${process.pid}, "SIGKILL"); }, 500);`,
  { eval: true },
);
watchdog.unref();

process.on("uncaughtException", (err) => {
  process.stderr.write(`agentscope runner: uncaught ${err && err.stack ? err.stack : err}\n`);
});
process.on("unhandledRejection", (err) => {
  process.stderr.write(`agentscope runner: unhandled rejection ${err && err.stack ? err.stack : err}\n`);
});

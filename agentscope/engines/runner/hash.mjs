// agentscope: the verification state hash of spec §2 in JavaScript (no dependencies).
// Used by runner.mjs (one hash per folded snapshot) and by benchmarks/node_fold.mjs (the pure
// Node baseline). Pure functions.

// The verification state hash (spec §2, Era C 02a45590), computed on the persisted snapshot as
// its JSON text reads back (JSON.stringify semantics: toJSON, undefined/function members
// dropped, undefined/function array items null, non-finite numbers null), so it is byte-exact
// with agentscope.hashing.state_hash of the dict Python receives. Python's writer stays the
// checked reference (tests compare the two on every fixture and on generated values).
const SNAPSHOT = 0;
const CHILDREN = 1;
const CHILD = 2;
const DATA = 3;
const INDEX_KEY = /^(?:0|[1-9][0-9]*)$/;

function isIndexKey(k) {
  return INDEX_KEY.test(k) && (k.length < 10 || Number(k) <= 4294967294);
}

function nextPosition(pos, key) {
  if (pos === SNAPSHOT) return key === "children" ? CHILDREN : DATA;
  if (pos === CHILDREN) return CHILD;
  if (pos === CHILD) return key === "snapshot" ? SNAPSHOT : DATA;
  return DATA;
}

function skipKey(pos, key) {
  if (key === "__proto__") return true;
  if (pos === SNAPSHOT) return key === "sessionId" || key === "_nextTimerId" || key === "_nextActorIds";
  if (pos === CHILD) return key === "sessionId";
  return false;
}

function jsonable(v, key) {
  if (v !== null && typeof v === "object" && typeof v.toJSON === "function") return v.toJSON(key);
  return v;
}

function canonWrite(v, pos, out) {
  if (v === null) {
    out.push("null");
    return;
  }
  switch (typeof v) {
    case "string":
      out.push(JSON.stringify(v));
      return;
    case "number":
      out.push(Number.isFinite(v) ? String(v) : "null");
      return;
    case "boolean":
      out.push(v ? "true" : "false");
      return;
    case "bigint":
      throw new TypeError("Do not know how to serialize a BigInt"); // as JSON.stringify
    default:
      break;
  }
  if (Array.isArray(v)) {
    out.push("[");
    for (let i = 0; i < v.length; i++) {
      if (i) out.push(",");
      const item = jsonable(v[i], String(i));
      const t = typeof item;
      if (item === undefined || t === "function" || t === "symbol") out.push("null");
      else canonWrite(item, DATA, out);
    }
    out.push("]");
    return;
  }
  // Array-index keys first (numerically), then the rest by UTF-16 code units (spec §2.2).
  const keys = Object.keys(v);
  const index = [];
  const other = [];
  for (const k of keys) (isIndexKey(k) ? index : other).push(k);
  if (index.length > 1) index.sort((a, b) => Number(a) - Number(b));
  other.sort();
  out.push("{");
  let first = true;
  const emit = (k) => {
    if (skipKey(pos, k)) return;
    const item = jsonable(v[k], k);
    const t = typeof item;
    if (item === undefined || t === "function" || t === "symbol") return;
    if (!first) out.push(",");
    first = false;
    out.push(JSON.stringify(k), ":");
    canonWrite(item, nextPosition(pos, k), out);
  };
  for (const k of index) emit(k);
  for (const k of other) emit(k);
  out.push("}");
}

export function canonicalSnapshotJson(persisted) {
  let p = jsonable(persisted, "");
  if (p !== null && typeof p === "object" && !Array.isArray(p) && Object.hasOwn(p, "agentMeta")) {
    p = { ...p };
    delete p.agentMeta;
  }
  const out = [];
  canonWrite(p, SNAPSHOT, out);
  return out.join("");
}

export function djb2Hex(text) {
  let h = 5381;
  for (let i = 0; i < text.length; i++) h = (Math.imul(h, 33) + text.charCodeAt(i)) | 0;
  return (h >>> 0).toString(16).padStart(8, "0");
}

export function stateHash(persisted) {
  return djb2Hex(canonicalSnapshotJson(persisted));
}

// The reference library's own way (spec §2.1-§2.2), kept as an independent cross-check for
// tests: build the canonical object by assignment (so `__proto__` members vanish, as there),
// with keys assigned in sorted order, then JSON.stringify it.
export function referenceStateHash(persisted) {
  const canon = (v, pos) => {
    if (v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) return v.map((x) => canon(x, DATA));
    const out = {};
    for (const k of Object.keys(v).sort()) {
      if (v[k] === undefined) continue;
      if (pos === SNAPSHOT && (k === "sessionId" || k === "_nextTimerId" || k === "_nextActorIds")) continue;
      if (pos === CHILD && k === "sessionId") continue;
      out[k] = canon(v[k], nextPosition(pos, k));
    }
    return out;
  };
  let p = persisted;
  if (p !== null && typeof p === "object" && !Array.isArray(p) && Object.hasOwn(p, "agentMeta")) {
    p = { ...p };
    delete p.agentMeta;
  }
  return djb2Hex(JSON.stringify(canon(p, SNAPSHOT)));
}

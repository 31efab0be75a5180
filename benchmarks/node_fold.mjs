// The pure Node fold: the limit a Node `verify` can approach (issue 10, "Speed, close to the
// limit"). For a JSONL log of the loop machine on stdin-less argv: XState `transition` (with
// session rebinding, spec §4.1, and the runner's re-seed interval), `getPersistedSnapshot` and
// the spec §2 hash in JS (the runner's own hash.mjs), compared with each recorded hash. No IPC.
//
// Usage: node --stack-size=4000 benchmarks/node_fold.mjs LOG.jsonl MACHINE.mjs [reseedEvery]
// Prints one JSON line: {entries, seconds, cpuSeconds, rate, mismatches, rssPeakMb}.
import fs from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { stateHash } from "../agentscope/engines/runner/hash.mjs";

const [logPath, machinePath, reseedArg] = process.argv.slice(2);
const reseedEvery = reseedArg === undefined ? 32 : Number(reseedArg);
const require = createRequire(pathToFileURL(machinePath));
const xs = require("xstate");
const mod = await import(pathToFileURL(machinePath).href);
const machine = mod.default;

const entries = fs
  .readFileSync(logPath, "utf8")
  .split("\n")
  .filter((l) => l.length)
  .map((l) => JSON.parse(l));

const t0 = process.hrtime.bigint();
const cpu0 = process.cpuUsage();
const init = entries[0].event;
let snap = "snapshot" in init ? machine.restoreSnapshot(init.snapshot) : xs.initialTransition(machine, init.input)[0];
let mismatches = stateHash(machine.getPersistedSnapshot(snap)) === entries[0].verification?.stateHash ? 0 : 1;
// Spec §4.1: the rebinding cache lives as long as the fold and is never cleared (a key whose child
// has finished stays bound to its stale session). The loop machine's children finish every step,
// so no key ever moves at a re-seed and none needs remapping here.
const sessions = new Map();
let since = 0;
for (let i = 1; i < entries.length; i++) {
  if (reseedEvery && since >= reseedEvery) {
    snap = machine.restoreSnapshot(machine.getPersistedSnapshot(snap));
    since = 0;
  }
  let ev = entries[i].event;
  if (typeof ev.actorId === "string" && typeof ev.sessionId === "string") {
    const key = ev.actorId + "\u0000" + ev.sessionId;
    let minted = sessions.get(key);
    if (minted === undefined) {
      const sid = snap.children?.[ev.actorId]?.sessionId;
      if (typeof sid === "string") {
        minted = sid;
        sessions.set(key, sid);
      }
    }
    if (minted !== undefined) ev = { ...ev, sessionId: minted };
  }
  [snap] = xs.transition(machine, snap, ev);
  since += 1;
  const h = stateHash(machine.getPersistedSnapshot(snap));
  if (h !== entries[i].verification?.stateHash) mismatches += 1;
}
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
const cpuSeconds = (cpu.user + cpu.system) / 1e6;
const rssPeakMb = process.resourceUsage().maxRSS / 1024;
console.log(
  JSON.stringify({ entries: entries.length, seconds, cpuSeconds, rate: entries.length / seconds, mismatches, rssPeakMb }),
);

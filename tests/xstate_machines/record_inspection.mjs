// Runs lampMachine with an inspector that writes every inspection event as one JSON line.
//   node record_inspection.mjs OUT.jsonl STYLE [ROOTS]
// STYLE "statelyai": the @statelyai/inspect record shapes (@xstate.actor, @xstate.event,
//   @xstate.snapshot; sessionId/sourceId/rootId strings; createdAt epoch ms);
// STYLE "v6": XState v6's own events (@xstate.actor, @xstate.transition) with every actor ref
//   written as its session id; createdAt an ISO string.
// The root's @xstate.actor record carries `definition` (JSON text of machine.config).
// Snapshots are written persisted (actorRef.logic.getPersistedSnapshot(snapshot)), except the
// @xstate.actor record's initial snapshot, which is written as JSON.stringify gives it.
// ROOTS (default 1): how many root actors share the recording (each runs the same scenario).
import { writeFileSync } from "node:fs";
import { createActor } from "xstate";
import { lampMachine } from "./inspected.mjs";

const [out, style = "statelyai", roots = "1"] = process.argv.slice(2);
const lines = [];
const sid = (ref) => (ref ? ref.sessionId : undefined);
const persisted = (ev) => {
  const logic = ev.actorRef.logic;
  return typeof logic.getPersistedSnapshot === "function" ? logic.getPersistedSnapshot(ev.snapshot) : ev.snapshot;
};
let seq = 0;
const write = (record) => lines.push(JSON.stringify({ ...record, id: `upd-${seq++}` }));

function inspect(ev) {
  const base = { rootId: ev.rootId, sessionId: sid(ev.actorRef) };
  const now = Date.now();
  if (ev.type === "@xstate.actor") {
    write({
      type: "@xstate.actor", ...base, parentId: sid(ev.parentRef), actorId: ev.id,
      src: typeof ev.src === "string" ? ev.src : ev.id,
      snapshot: JSON.parse(JSON.stringify(ev.snapshot)),
      // the machine config, as @statelyai/inspect sends it (JSON text); roots only
      ...(ev.parentRef ? {} : { definition: JSON.stringify(ev.actorRef.logic.config) }),
      createdAt: style === "v6" ? new Date(now).toISOString() : now,
    });
    return;
  }
  if (ev.type !== "@xstate.transition") return;
  const snapshot = JSON.parse(JSON.stringify(persisted(ev)));
  if (style === "v6") {
    write({
      type: "@xstate.transition", ...base, eventType: ev.eventType, event: ev.event,
      sourceRef: sid(ev.sourceRef), targetRef: sid(ev.targetRef), snapshot,
      createdAt: new Date(now).toISOString(),
    });
  } else {
    write({ type: "@xstate.event", ...base, sourceId: sid(ev.sourceRef), event: ev.event, createdAt: now });
    write({ type: "@xstate.snapshot", ...base, event: ev.event, snapshot, createdAt: now });
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const actors = [];
for (let r = 0; r < Number(roots); r++) {
  const actor = createActor(lampMachine, { input: { start: 1 + r }, inspect });
  actors.push(actor);
  actor.start();
  actor.send({ type: "GO", by: 2 });
}
await sleep(5);
for (const actor of actors) actor.send({ type: "NOTE", text: "warm \u2603" });
await sleep(60);
for (const actor of actors) {
  if (actor.getSnapshot().status !== "done") throw new Error("scenario did not finish");
}
writeFileSync(out, lines.join("\n") + "\n");

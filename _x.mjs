import { createMachine, setup, initialTransition, transition, getMicrosteps } from "xstate";
const P = (m, s) => JSON.stringify(m.getPersistedSnapshot(s));
const m = createMachine({ id: "m", initial: "a", context: { log: [] },
  states: {
    a: { on: { GO: ({ context }, enq) => { enq.raise({ type: "R1" }); enq.raise({ type: "D" }, { delay: 500, id: "d1" }); enq.raise({ type: "D2" }, { delay: "PT2S" }); enq.raise({ type: "D3" }, { delay: 100 }); return { target: "b" }; } },
      exit: (_, enq) => { enq.raise({ type: "X1" }); } },
    b: { entry: (_, enq) => { enq.raise({ type: "E1" }); },
      after: { PT1S: "c", "1.5s": "c", "200ms": "c" },
      on: { R1: { context: ({ context, event }) => ({ log: [...context.log, event.type] }) },
            X1: { context: ({ context, event }) => ({ log: [...context.log, event.type] }) },
            E1: ({ context, event }, enq) => { enq.cancel("d1"); enq.cancel("nope"); enq.emit({type: "EMITTED"}); return { context: { log: [...context.log, event.type] } }; } } },
    c: {},
  } });
let [s] = initialTransition(m);
let [s2, eff] = transition(m, s, { type: "GO" });
console.log(P(m, s2));
console.log(JSON.stringify(eff.map(e => [e.kind, e.type, e.id, e.delay, e.event])));
const ms = getMicrosteps(m, s, { type: "GO" });
console.log(ms.length, ms.map(([x, a]) => JSON.stringify(x.value) + " " + a.map(y => y.type).join(",")));

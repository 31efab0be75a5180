// Records the expected values of tests/test_statechart_ported.py from real XState
// (node_modules/xstate, 6.0.0-alpha.48): `node tests/ported/record.mjs` prints, per scenario, the
// persisted snapshot after init and after each event. The scenarios follow tests of XState's own
// suite (history, parallel, final/done events, transition order, eventless, after, raise, choice,
// stateIn); each is written again in Python in the test, whose literals are this script's output.
import { createMachine, initialTransition, transition, checkStateIn } from "xstate";

// `hook(label)` for entry/exit, `patch(label)` for a transition's `context`: append "label:EVENT"
const patch = (label) => ({ context, event }) => ({ log: [...context.log, `${label}:${event.type}`] });
const hook = (label) => (args) => ({ context: patch(label)(args) });

const scenarios = {
  history: [
    createMachine({
      id: "h", initial: "off", context: {},
      states: {
        off: { on: { POWER: "on.hist", DEEP_POWER: "on.deep" } },
        on: {
          initial: "first",
          on: { POWER: "off" },
          states: {
            first: { on: { SWITCH: "second" } },
            second: { initial: "A", states: { A: { on: { INNER: "B" } }, B: {} } },
            hist: { type: "history", history: "shallow", target: "first" },
            deep: { type: "history", history: "deep", target: "first" },
          },
        },
      },
    }),
    [{ type: "POWER" }, { type: "SWITCH" }, { type: "INNER" }, { type: "POWER" }, { type: "POWER" }, { type: "POWER" }, { type: "DEEP_POWER" }],
  ],
  parallelOrder: [
    createMachine({
      id: "p", type: "parallel", context: { log: [] },
      states: {
        a: { initial: "a1", states: { a1: { exit: hook("exit a1"), on: { GO: "a2" } }, a2: { entry: hook("enter a2") } } },
        b: { initial: "b1", states: { b1: { exit: hook("exit b1"), on: { GO: { target: "b2", context: patch("t b") } } }, b2: { entry: hook("enter b2") } } },
      },
    }),
    [{ type: "GO" }],
  ],
  doneEvents: [
    createMachine({
      id: "d", initial: "work", context: { log: [] },
      output: ({ context }) => ({ steps: context.log.length }),
      states: {
        work: {
          type: "parallel",
          onDone: { target: "end", context: patch("done work") },
          states: {
            x: { initial: "x1", states: { x1: { on: { X: "x2" } }, x2: { type: "final" } }, onDone: { context: patch("done x") } },
            y: { initial: "y1", states: { y1: { on: { Y: "y2" } }, y2: { type: "final" } }, onDone: { context: patch("done y") } },
          },
        },
        end: { type: "final" },
      },
    }),
    [{ type: "X" }, { type: "Y" }],
  ],
  entryExitOrder: [
    createMachine({
      id: "o", initial: "a", context: { log: [] },
      states: {
        a: {
          initial: "a1", entry: hook("enter a"), exit: hook("exit a"),
          states: { a1: { entry: hook("enter a1"), exit: hook("exit a1"), on: { NEXT: { target: "#o.b.b1", context: patch("t") } } } },
        },
        b: { initial: "b1", entry: hook("enter b"), exit: hook("exit b"), states: { b1: { entry: hook("enter b1") } } },
      },
    }),
    [{ type: "NEXT" }],
  ],
  eventless: [
    createMachine({
      id: "e", initial: "counting", context: { n: 0 },
      states: {
        counting: {
          always: [
            { guard: ({ context }) => context.n >= 3, target: "big" },
            { context: ({ context }) => ({ n: context.n + 1 }) },
          ],
        },
        big: { on: { RESET: { target: "counting", context: { n: -2 } } } },
      },
    }),
    [{ type: "RESET" }],
  ],
  after: [
    createMachine({
      id: "t", initial: "green", context: {},
      states: {
        green: { after: { 1000: "yellow", PT2S: "red" } },
        yellow: { after: { "1.5s": "red" }, on: { STOP: "red" } },
        red: {},
      },
    }),
    [{ type: "xstate.timer", id: "xstate.after.1000.t.green" }, { type: "STOP" }],
  ],
  raised: [
    createMachine({
      id: "r", initial: "a", context: { log: [] },
      on: { "*": { context: ({ context, event }) => ({ log: [...context.log, event.type] }) } },
      states: {
        a: {
          exit: (_, enq) => { enq.raise({ type: "FROM_EXIT" }); },
          on: {
            GO: (_, enq) => {
              enq.raise({ type: "FROM_TRANSITION" });
              enq.raise({ type: "LATER" }, { delay: 500, id: "later" });
              enq.raise({ type: "AUTO" }, { delay: "PT1M" });
              return { target: "b" };
            },
          },
        },
        b: {
          entry: (_, enq) => { enq.raise({ type: "FROM_ENTRY" }); },
          on: { DROP: (_, enq) => { enq.cancel("later"); return {}; } },
        },
      },
    }),
    [{ type: "GO" }, { type: "EXTERNAL" }, { type: "DROP" }, { type: "xstate.timer", id: "xstate.timer.auto.0" }],
  ],
  choice: [
    createMachine({
      id: "c", initial: "idle", context: { score: 0 },
      states: {
        idle: { on: { SCORE: { target: "routing", context: ({ event }) => ({ score: event.score }) } } },
        routing: { type: "choice", choice: ({ context }) => (context.score >= 90 ? { target: "gold" } : context.score >= 50 ? { target: "silver" } : undefined) },
        gold: { on: { BACK: "idle" } },
        silver: { on: { BACK: "idle" } },
      },
    }),
    [{ type: "SCORE", score: 95 }, { type: "BACK" }, { type: "SCORE", score: 60 }, { type: "BACK" }, { type: "SCORE", score: 10 }],
  ],
  stateIn: [
    createMachine({
      id: "s", type: "parallel", context: {},
      states: {
        light: { initial: "off", states: { off: { on: { FLIP: "on" } }, on: { on: { FLIP: "off" } } } },
        door: {
          initial: "closed",
          states: {
            closed: { on: { OPEN: { target: "open", guard: (a) => checkStateIn(a._snapshot, { light: "on" }) } } },
            open: { on: { CLOSE: { target: "closed", guard: (a) => checkStateIn(a._snapshot, "#s.light.off") } } },
          },
        },
      },
    }),
    [{ type: "OPEN" }, { type: "FLIP" }, { type: "OPEN" }, { type: "CLOSE" }, { type: "FLIP" }, { type: "CLOSE" }],
  ],
  undefinedOutput: [
    createMachine({
      id: "u", initial: "a", context: { log: [] },
      states: {
        a: { on: { SET: { context: ({ context }) => ({ gone: context.missing, log: [...context.log, context.missing] }) }, END: "z" } },
        z: { type: "final", output: ({ context }) => ({ kept: 1, gone: context.missing }) },
      },
    }),
    [{ type: "SET" }, { type: "END" }],
  ],
};

const out = {};
for (const [name, [machine, events]] of Object.entries(scenarios)) {
  const steps = [];
  try {
    let [s] = initialTransition(machine);
    steps.push(JSON.parse(JSON.stringify(machine.getPersistedSnapshot(s))));
    for (const ev of events) {
      [s] = transition(machine, s, ev);
      steps.push(JSON.parse(JSON.stringify(machine.getPersistedSnapshot(s))));
    }
  } catch (err) {
    steps.push({ error: String(err.message) });
  }
  out[name] = steps.map(({ status, value, context, timers, output, error }) => ({ status, value, context, timers, output, error }));
}
console.log(JSON.stringify(out, null, 1));

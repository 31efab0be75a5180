// Test machine for the transitions a step takes (tests/test_transitions_taken.py): a re-entering
// self-transition, a targetless (value-unchanged) one, an event raised by a function transition,
// an eventless chain, the same event taken in two parallel regions, and effects that would write
// a file and throw if anything ran them (replay must run none: they are only enqueued).
import fs from "node:fs";
import { createMachine } from "xstate";

// Writes the file named by AGENTSCOPE_EDGES_PROBE, then throws: proof that an effect ran.
export function sideEffect() {
  fs.writeFileSync(process.env.AGENTSCOPE_EDGES_PROBE ?? "agentscope-edges-probe.txt", "an effect ran");
  throw new Error("an effect ran during a pure transition");
}

export const edgesMachine = createMachine({
  id: "edges",
  type: "parallel",
  context: { n: 0 },
  states: {
    a: {
      initial: "idle",
      states: {
        idle: {
          entry: (_, enq) => {
            enq(sideEffect);
          },
          on: {
            SELF: { target: "idle", reenter: true, actions: sideEffect },
            STAY: { context: ({ context }) => ({ n: context.n + 1 }) },
            GO: (_, enq) => {
              enq.raise({ type: "POKE" });
              enq(sideEffect);
              return { target: "check" };
            },
          },
        },
        check: {
          always: [{ guard: ({ context }) => context.n > 5, target: "idle" }, { target: "busy" }],
        },
        busy: {
          on: {
            POKE: { context: ({ context }) => ({ n: context.n + 10 }) },
            PING: { target: "busy", reenter: true },
            BACK: { target: "idle" },
          },
        },
      },
    },
    b: {
      initial: "off",
      states: {
        off: { on: { PING: { target: "on" } } },
        on: { on: { PING: { target: "off" } } },
      },
    },
  },
});

export default edgesMachine;

// Test machine that cannot take the runner's hooks: the machine object is frozen, so the Node
// engine reports no transitions for it (Snapshot.transitions is None) and views infer moves.
import { createMachine } from "xstate";

export const frozenMachine = Object.freeze(
  createMachine({
    id: "frozen",
    initial: "a",
    states: { a: { on: { GO: { target: "b" } } }, b: { always: { target: "a" } } },
  }),
);

export default frozenMachine;

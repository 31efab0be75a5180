// Test machine: a `type: "choice"` state routing by context (tests/test_transitions_both_engines.py).
import { createMachine } from "xstate";
export const choiceMachine = createMachine({
  id: "ch", initial: "idle", context: { n: 0 },
  states: {
    idle: { on: { GO: { target: "route", context: ({ context }) => ({ n: context.n + 1 }) } } },
    route: { type: "choice", choice: ({ context }) => (context.n > 1 ? { target: "big" } : { target: "small" }) },
    small: { on: { GO: { target: "route", context: ({ context }) => ({ n: context.n + 1 }) } } },
    big: {},
  },
});

// Test machine for tests/test_review_xstate.py: a guard that never returns (a machine stuck in
// user code), so the runner stops reading its stdin.
import { createMachine } from "xstate";

export const spinsMachine = createMachine({
  id: "spins",
  initial: "idle",
  states: {
    idle: {
      on: {
        SPIN: {
          guard: () => {
            for (;;) {
              // never returns
            }
          },
          target: "idle",
        },
        PING: "idle",
      },
    },
  },
});

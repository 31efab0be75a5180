// Test machine with an inline invoked actor (no `setup({actors})`): its persisted snapshot may not
// be restorable, which must not break folds (the runner then stops re-seeding).
import { createAsyncLogic, createMachine } from "xstate";

export const inlineMachine = createMachine({
  id: "inline",
  initial: "idle",
  context: { n: 0 },
  states: {
    idle: { on: { GO: "working" } },
    working: {
      invoke: {
        id: "job",
        src: createAsyncLogic({ run: async () => 1 }),
        onDone: ({ context }) => ({ target: "idle", context: { n: context.n + 1 } }),
      },
    },
  },
});

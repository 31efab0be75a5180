// A plain XState machine (no agent library) recorded through XState's inspection API by
// record_inspection.mjs: an async child actor, a delayed transition, external events, input.
import { createAsyncLogic, setup } from "xstate";

const double = createAsyncLogic({ run: async ({ input }) => ({ n: input.n * 2 }) });

export const lampMachine = setup({ actors: { double } }).createMachine({
  id: "lamp",
  initial: "idle",
  context: ({ input }) => ({ n: input?.start ?? 0, notes: [] }),
  states: {
    idle: {
      on: { GO: ({ context, event }) => ({ target: "busy", context: { n: context.n + event.by } }) },
    },
    busy: {
      invoke: {
        id: "doubler",
        src: "double",
        input: ({ context }) => ({ n: context.n }),
        onDone: ({ output }) => ({ target: "waiting", context: { n: output.n } }),
      },
    },
    waiting: {
      after: { 30: { target: "off" } },
      on: { NOTE: ({ context, event }) => ({ context: { notes: [...context.notes, event.text] } }) },
    },
    off: { type: "final" },
  },
  output: ({ context }) => ({ n: context.n }),
});

export default lampMachine;

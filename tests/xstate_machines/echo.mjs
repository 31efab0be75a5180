// Test machine: keeps the last SET event's payload in context (any JSON value), so a value
// crosses the pipe into the fold, back out in the persisted snapshot, and into the hash.
import { createMachine } from "xstate";

export const echoMachine = createMachine({
  id: "echo",
  initial: "idle",
  context: () => ({ last: null, n: 0 }),
  states: {
    idle: {
      on: {
        SET: ({ context, event }) => ({ context: { last: event.payload, n: context.n + 1 } }),
        ADD: ({ context, event }) => ({ context: { n: context.n + event.by } }),
      },
    },
  },
});

export default echoMachine;

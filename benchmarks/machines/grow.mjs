// Standalone ES module: the "grow" machine for bench_timeline. Each ADD appends its text to
// context.items, so the persisted snapshot grows linearly (2,500 x 120 chars ~ 300 KB).
import { setup } from "xstate";

export const growMachine = setup({}).createMachine({
  id: "grow",
  version: "1",
  initial: "open",
  context: { items: [], n: 0 },
  states: {
    open: {
      on: {
        ADD: ({ context, event }) => ({
          context: { items: [...context.items, event.text], n: context.n + 1 },
        }),
      },
    },
  },
});

export default growMachine;

// Test machine for graph extraction: delayed transitions, deep history, wildcard, named guard.
import { setup } from "xstate";

export const timersMachine = setup({
  guards: { isReady: () => true },
}).createMachine({
  id: "timers",
  initial: "wait",
  states: {
    wait: {
      after: { 1000: { target: "deep.hist" } },
      on: { GO: { target: "deep", guard: "isReady", actions: ["noteGo"] }, "*": { target: "wait" } },
    },
    deep: {
      initial: "x",
      tags: ["busy"],
      states: {
        x: { on: { NEXT: "y" } },
        y: {},
        hist: { type: "history", history: "deep", target: "y" },
      },
    },
  },
});

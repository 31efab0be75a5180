// Test module exporting two distinct machines and no default (ambiguous export).
import { createMachine } from "xstate";

export const first = createMachine({ id: "first", initial: "a", states: { a: {} } });
export const second = createMachine({ id: "second", initial: "b", states: { b: {} } });

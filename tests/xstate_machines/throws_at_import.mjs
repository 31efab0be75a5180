// Test module whose top level throws (tests/test_xstate_faults.py).
import { createMachine } from "xstate";

export const m = createMachine({ id: "never", initial: "a", states: { a: {} } });
throw new Error("exploded while importing");

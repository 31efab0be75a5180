// Test machine for tests/test_xstate_load_timeout.py: a module whose import never finishes (a
// top-level await on a promise that never settles), so the runner's 'load' never replies.
import { createMachine } from "xstate";

await new Promise(() => {});

export const neverMachine = createMachine({ id: "never", initial: "a", states: { a: {} } });

// Test machine for tests/test_xstate_load_timeout.py: a module that loops forever at import
// (the runner at 100% CPU, never reading its stdin again).
import { createMachine } from "xstate";

for (;;) {
  // never returns
}

export const neverMachine = createMachine({ id: "never", initial: "a", states: { a: {} } });

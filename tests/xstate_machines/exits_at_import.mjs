// Test module that ends the process while being imported (tests/test_xstate_faults.py).
import fs from "node:fs";
import { createMachine } from "xstate";

export const m = createMachine({ id: "early", initial: "a", states: { a: {} } });
fs.writeSync(2, "leaving now\n");
process.exit(3);

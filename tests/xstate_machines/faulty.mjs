// Test machine for the Node engine's fault handling (tests/test_xstate_faults.py).
// Guards run during pure transitions, so crafted events can make the machine misbehave.
import fs from "node:fs";
import { createMachine } from "xstate";

export const faultyMachine = createMachine({
  id: "faulty",
  initial: "idle",
  context: ({ input }) => ({ size: 0, stored: null, label: input?.label ?? null }),
  states: {
    idle: {
      on: {
        // Keeps a (possibly huge) payload in context: the 50 MB case.
        STORE: ({ event }) => ({ context: { stored: event.payload, size: String(event.payload).length } }),
        // Throws inside a dynamic transition.
        BOOM: () => {
          throw new Error("boom from the machine");
        },
        // Puts a BigInt into context: the persisted snapshot is not JSON.
        BIGINT: () => ({ context: { size: 10n } }),
        // The guard kills the runner process mid-fold.
        DIE: {
          guard: () => {
            process.kill(process.pid, "SIGKILL");
            return true;
          },
          target: "idle",
        },
        // The guard writes garbage straight to the protocol stream (fd 1).
        JUNK: {
          guard: () => {
            fs.writeSync(1, "this is not json\n");
            return true;
          },
          target: "idle",
        },
        // console.log from user code must not corrupt the protocol (it goes to stderr).
        CHATTY: {
          guard: () => {
            console.log("hello from a guard");
            return true;
          },
          target: "idle",
        },
      },
    },
  },
});

export const notAMachine = { id: "faulty", states: {} };

// CommonJS test module (module.exports = machine); the spec §3 "toggle" example machine.
const { createMachine } = require("xstate");

module.exports = createMachine({
  id: "toggle",
  initial: "off",
  states: { off: { on: { TOGGLE: "on" } }, on: { on: { TOGGLE: "off" } } },
});

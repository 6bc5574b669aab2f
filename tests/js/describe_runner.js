// Runs tinytf/viz/figure_core.js in node for tests/viz/test_figure_describe.py: reads a JSON job from stdin
// ({core: path, strings: {english: translation} or null, traces: [plotly trace, ...]}), writes the text
// alternative of each trace (describeTrace: a string, or null for a trace it says nothing about) to stdout.
"use strict";
const fs = require("fs");
const vm = require("vm");
const job = JSON.parse(fs.readFileSync(0, "utf8"));
globalThis.window = globalThis;
if (job.strings) window.tinytfStrings = job.strings;
// a classic script: its top-level var is global only when run as a script, not as a CommonJS module
vm.runInThisContext(fs.readFileSync(job.core, "utf8") + "\n;globalThis.tinytfCore = tinytfCore;", { filename: job.core });
process.stdout.write(JSON.stringify(job.traces.map((t) => globalThis.tinytfCore.describeTrace(t))));

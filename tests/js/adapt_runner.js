// Runs tinytf/viz/figure_core.js in node for tests/viz/test_diagram.py: reads a JSON job from stdin
// ({core: path, spec: a figure {data, layout}, widths: [px, ...]}), writes for each width the layout that
// adapt draws there ({width, height, annotations: [text, ...], template: whether it has one, domains: each x
// axis's domain, e.g. {xaxis: [0, 0.4], xaxis2: [0.6, 1]}}) to stdout.
"use strict";
const fs = require("fs");
const vm = require("vm");
const job = JSON.parse(fs.readFileSync(0, "utf8"));
globalThis.window = globalThis;
// a classic script: its top-level var is global only when run as a script, not as a CommonJS module
vm.runInThisContext(fs.readFileSync(job.core, "utf8") + "\n;globalThis.tinytfCore = tinytfCore;", { filename: job.core });
const th = { dark: false, text: "#222832", muted: "#48566b", grid: "rgba(0,0,0,0.10)", line: "rgba(0,0,0,0.45)",
  background: "#ffffff" };
process.stdout.write(JSON.stringify(job.widths.map((w) => {
  const L = globalThis.tinytfCore.adapt(job.spec, w, th).layout;
  return { width: L.width, height: L.height, annotations: (L.annotations || []).map((a) => a.text),
    template: !!L.template, domains: Object.fromEntries(Object.keys(L).filter((k) => /^xaxis\d*$/.test(k))
      .map((k) => [k, L[k].domain])) };
})));

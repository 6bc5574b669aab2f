// Runs _static/tinytf-bind.js in node for tests/viz/test_bindings.py: reads a JSON job from stdin
// ({static, cases: [{template, outputs: {name: {dims, f32: base64}}, labels}], tokenize: [{text, table}]}),
// writes {figures: [...], tokens: [...]} (a case that throws gives {error}) to stdout.
"use strict";
const fs = require("fs");
const job = JSON.parse(fs.readFileSync(0, "utf8"));
globalThis.window = globalThis;
require(job.static);
const out = { figures: [], tokens: [] };
for (const c of job.cases) {
  const outputs = {};
  for (const [name, t] of Object.entries(c.outputs)) {
    const buf = Buffer.from(t.f32, "base64");
    outputs[name] = { dims: t.dims, data: new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4) };
  }
  try {
    out.figures.push(window.tinytfBind.apply(c.template, outputs, c.labels));
  } catch (e) {
    out.figures.push({ error: String(e && e.message || e) });
  }
}
for (const t of job.tokenize || []) out.tokens.push(window.tinytfBind.tokenize(t.text, t.table));
for (const f of job.fixed || []) out.fixed = (out.fixed || []).concat([window.tinytfBind.format(f[0], [f[1]])]);
out.ops = Object.keys(window.tinytfBind.ops);
process.stdout.write(JSON.stringify(out));

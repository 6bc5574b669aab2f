// tinytf book: the lab (served locally, no network). text-4l, the book's model trained on English text,
// runs in the reader's browser: the next-byte distribution of a prompt under chapter 11's sampler
// (temperature, top-k, top-p), seeded generation byte by byte through a KV cache, the attention map of
// any layer and head.
//
// A page holds <div class="tinytf-lab" data-lab="{...}"> (tinytf.lab.browser_lab.lab_html: defaults,
// limits, messages; a note until this script runs). Nothing is fetched before the reader's first
// interaction with the lab; then onnxruntime-web (_static/ort/), _static/lab/lab.json and the model's
// ONNX graph (tinytf.lab.browser_lab.export_lab_onnx: ids, head_mask, past K/V -> last logits, logit lens,
// attention, present K/V) load once per page, with a progress bar. The attention figure is a template
// emitted by Python (tinytf.viz.lab), filled by tinytfBind.apply and drawn by the figure core.
//
// The sampler is tinytf.generation.next_token_probs in float64; its random numbers come from mulberry32
// (the same 32-bit generator as tinytf.lab.browser_lab.mulberry32), so a seed gives the same text here and
// in Python. Everything a test needs is on the lab's element: el.tinytfLab (state, probs, run, ...).
(function () {
  "use strict";
  var script = document.currentScript;
  var STATIC = script && script.src ? script.src.replace(/[^/]*(\?.*)?$/, "") : "_static/";
  var LAB_DIR = STATIC + "lab/";
  var ORT_DIR = STATIC + "ort/";
  var serial = 0;
  // what each view of the lab shows ("all": everything); chapters embed the view they teach
  var VIEWS = { sampling: ["sampling", "generate"], parts: ["snapshots", "ablation", "lens", "attention"] };

  // ------------------------------------------------------------------ loaders (once per page)
  var loading = {};
  function once(key, make) {
    if (!loading[key]) {
      loading[key] = make();
      loading[key].catch(function () { delete loading[key]; });
    }
    return loading[key];
  }
  function loadScript(src) {
    return once("script:" + src, function () {
      return new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = src;
        s.onload = function () { resolve(); };
        s.onerror = function () { reject(new Error(tr("could not load {src}", { src: src }))); };
        document.head.appendChild(s);
      });
    });
  }
  function runtime() {
    return loadScript(ORT_DIR + "ort.wasm.min.js").then(function () {
      var ort = window.ort;
      if (!ort) { throw new Error(tr("onnxruntime-web did not load")); }
      ort.env.wasm.numThreads = 1;
      ort.env.wasm.wasmPaths = new URL(ORT_DIR, document.baseURI).href;
      return ort;
    });
  }
  function plotly() {
    return window.Plotly ? Promise.resolve(window.Plotly) : loadScript(STATIC + "plotly.min.js");
  }
  function manifest() {
    return once("lab.json", function () {
      return fetch(LAB_DIR + "lab.json").then(function (r) {
        if (!r.ok) { throw new Error("lab.json: HTTP " + r.status); }
        return r.json();
      });
    });
  }
  // the model's bytes, reporting progress (done, total) as they arrive
  function fetchBytes(url, total, progress) {
    return fetch(url).then(function (r) {
      if (!r.ok) { throw new Error(url + ": HTTP " + r.status); }
      if (!r.body || !r.body.getReader) { return r.arrayBuffer().then(function (b) { return new Uint8Array(b); }); }
      var reader = r.body.getReader(), parts = [], done = 0;
      function pump() {
        return reader.read().then(function (chunk) {
          if (chunk.done) {
            var out = new Uint8Array(done), at = 0;
            parts.forEach(function (p) { out.set(p, at); at += p.length; });
            return out;
          }
          parts.push(chunk.value); done += chunk.value.length;
          progress(done, total);
          return pump();
        });
      }
      return pump();
    });
  }
  function session(entry, progress) {
    return once("session:" + entry.key, function () {
      return Promise.all([runtime(), fetchBytes(LAB_DIR + entry.file, entry.bytes, progress)]).then(function (r) {
        return r[0].InferenceSession.create(r[1], { executionProviders: ["wasm"] });
      });
    });
  }

  // ------------------------------------------------------------------ the sampler (chapter 11, float64)
  function mulberry32(seed) {
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6D2B79F5) >>> 0;
      var t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  function softmax(x) {
    var m = -Infinity, i, out = new Float64Array(x.length), s = 0;
    for (i = 0; i < x.length; i++) { if (x[i] > m) { m = x[i]; } }
    if (m === -Infinity) { return out; }
    for (i = 0; i < x.length; i++) { out[i] = x[i] === -Infinity ? 0 : Math.exp(x[i] - m); s += out[i]; }
    for (i = 0; i < x.length; i++) { out[i] /= s; }
    return out;
  }
  function argmax(x) {
    var best = 0;
    for (var i = 1; i < x.length; i++) { if (x[i] > x[best]) { best = i; } }
    return best;
  }
  // tinytf.generation.next_token_probs: temperature, then top-k (ties with the k-th kept), then top-p
  // (the smallest set of most probable bytes reaching p, ties with the last one kept), renormalised
  function nextProbs(logits, s) {
    var V = logits.length, i, x = new Float64Array(V);
    if (s.temperature === 0) { x[argmax(logits)] = 1; return x; }
    for (i = 0; i < V; i++) { x[i] = Math.fround(logits[i] / s.temperature); }  // float32, as torch divides
    if (s.top_k !== null) {
      var sorted = Array.from(x).sort(function (a, b) { return b - a; });
      var kth = sorted[s.top_k - 1];
      for (i = 0; i < V; i++) { if (x[i] < kth) { x[i] = -Infinity; } }
    }
    if (s.top_p !== null) {
      var p = softmax(x), order = Array.from(p).sort(function (a, b) { return b - a; });
      var before = 0, cutoff = order[0];
      for (i = 0; i < V; i++) {
        if (i === 0 || before < s.top_p - 1e-9) { cutoff = order[i]; }
        before += order[i];
      }
      for (i = 0; i < V; i++) { if (p[i] < cutoff) { x[i] = -Infinity; } }
    }
    return softmax(x);
  }
  function pick(probs, u) {
    var total = 0, last = 0;
    for (var i = 0; i < probs.length; i++) {
      if (probs[i] > 0) { total += probs[i]; last = i; if (total > u) { return i; } }
    }
    return last;
  }

  // ------------------------------------------------------------------ words
  // the lab's words: English, or the page's translation (window.tinytfStrings, which the Chinese edition gives
  // from the figure catalogue: scripts/figure_strings.py extracts the string of every tr call in this file),
  // through the core's tr; {name} is filled from values. The page's state (data-lab: names, rules, messages) comes
  // translated in the Chinese edition's HTML (figure_strings.Catalogue.raw_html).
  function tr(text, values) {
    var core = window.tinytfCore || window.tinytfFigures;
    return core && core.tr ? core.tr(text, values) : values ? fill(text, values) : text;
  }
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (m, k) { return k in values ? String(values[k]) : m; });
  }
  function utf8(text) { return Array.from(new TextEncoder().encode(text)); }
  function byteName(labels, b) {
    if (b === 32) { return tr("␣ (space)"); }
    if (b === 10) { return tr("↵ (new line)"); }
    return labels[b];
  }

  // ------------------------------------------------------------------ the page's controls
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function field(box, id, label, input) {
    var wrap = el("div", { "class": "tinytf-lab-field" });
    wrap.appendChild(el("label", { "for": id }, label));
    wrap.appendChild(input);
    box.appendChild(wrap);
    return input;
  }
  function numberBox(id, value, limits, step) {
    var attrs = { id: id, type: "text", inputmode: limits[2] ? "numeric" : "decimal", autocomplete: "off",
                  spellcheck: "false", size: "8" };
    var input = el("input", attrs);
    input.value = value === null ? "" : String(value);
    input.dataset.step = String(step);
    return input;
  }
  function select(id, options, value) {
    var s = el("select", { id: id });
    options.forEach(function (o) {
      var opt = el("option", { value: String(o[0]) }, o[1]);
      if (String(o[0]) === String(value)) { opt.selected = true; }
      s.appendChild(opt);
    });
    return s;
  }

  function build(root, state) {
    var id = "tinytf-lab-" + (++serial);
    var d = state.defaults;
    root.textContent = "";
    var ui = { root: root, id: id };
    var form = el("div", { "class": "tinytf-lab-form" });
    ui.prompt = field(form, id + "-prompt", tr("Prompt (the text the model continues)"),
                      el("textarea", { id: id + "-prompt", rows: "3", spellcheck: "false" }));
    ui.prompt.value = d.prompt;
    var row = el("div", { "class": "tinytf-lab-row", role: "group", "aria-label": tr("Sampling settings") });
    ui.settings = {};
    ["temperature", "top_k", "top_p", "seed", "n_bytes"].forEach(function (name) {
      var step = name === "temperature" ? 0.1 : name === "top_p" ? 0.05 : 1;
      ui.settings[name] = field(row, id + "-" + name, state.names[name],
                                numberBox(id + "-" + name, d[name], state.limits[name], step));
      ui.settings[name].setAttribute("aria-describedby", id + "-" + name + "-rule");
      var rule = el("span", { id: id + "-" + name + "-rule", "class": "tinytf-lab-rule" }, state.rules[name]);
      ui.settings[name].parentNode.appendChild(rule);
    });
    form.appendChild(row);
    var actions = el("div", { "class": "tinytf-lab-row" });
    ui.generate = el("button", { type: "button", "class": "tinytf-lab-button", id: id + "-generate" }, tr("Generate"));
    actions.appendChild(ui.generate);
    form.appendChild(actions);
    root.appendChild(form);
    ui.status = el("p", { "class": "tinytf-lab-status", role: "status", "aria-live": "polite", id: id + "-status" });
    ui.progress = el("progress", { max: "1", value: "0", "aria-label": tr("Loading the model"), hidden: "" });
    root.appendChild(ui.progress);
    root.appendChild(ui.status);
    ui.message = el("div", { "class": "tinytf-lab-message", "aria-live": "polite", id: id + "-message" });
    root.appendChild(ui.message);
    // the distribution
    ui.table = el("table", { "class": "tinytf-lab-table", id: id + "-dist" });
    ui.caption = el("caption", {}, "");
    ui.table.appendChild(ui.caption);
    var head = el("thead"), headRow = el("tr");
    [tr("Rank"), tr("Byte"), tr("Probability")].forEach(function (h) {
      headRow.appendChild(el("th", { scope: "col" }, h));
    });
    head.appendChild(headRow);
    ui.table.appendChild(head);
    ui.tbody = el("tbody");
    ui.table.appendChild(ui.tbody);
    var tableBox = el("div", { "class": "tinytf-lab-tablebox" });
    tableBox.appendChild(ui.table);
    root.appendChild(tableBox);
    // the generated text
    root.appendChild(el("p", { "class": "tinytf-lab-label", id: id + "-out-label" },
                        tr("Generated text (the prompt, then what the model wrote)")));
    ui.output = el("pre", { "class": "tinytf-lab-output", id: id + "-output", "aria-labelledby": id + "-out-label",
                            tabindex: "0" });
    root.appendChild(ui.output);
    // filled once lab.json is loaded (they need the model's layers and heads): the snapshot chooser, the head
    // switches, the logit lens and the attention map
    ui.modelBox = el("div", { "class": "tinytf-lab-row" });
    form.insertBefore(ui.modelBox, row);
    ui.ablateBox = el("div", { "class": "tinytf-lab-section" });
    ui.lensBox = el("div", { "class": "tinytf-lab-section" });
    ui.attnBox = el("div", { "class": "tinytf-lab-section" });
    [ui.ablateBox, ui.lensBox, ui.attnBox].forEach(function (b) { root.appendChild(b); });
    return ui;
  }

  // ------------------------------------------------------------------ one lab
  // Every function below takes the lab (its state, controls and model outputs) as its first argument.
  function Lab(root) {
    var state = JSON.parse(root.getAttribute("data-lab"));
    var lab = { root: root, state: state, M: state.messages, ui: build(root, state), settings: {}, outputs: null,
                ids: [], labels: [], probs: null, generated: [], busy: false, loaded: false, errors: {}, started: null };
    Object.keys(state.limits).forEach(function (k) { lab.settings[k] = state.defaults[k]; });
    lab.run = function (ids, pastK, pastV) { return run(lab, ids, pastK, pastV); };
    lab.refresh = function () { return refresh(lab); };
    lab.generate = function () { return generate(lab); };
    root.tinytfLab = lab;
    wire(lab);
    say(lab, lab.M.idle);
    return lab;
  }
  function say(lab, text) { lab.ui.status.textContent = text; }
  function report(lab) {
    return function (err) { say(lab, fill(lab.M.failed, { error: err && err.message ? err.message : String(err) })); };
  }
  function showMessages(lab) {
    var ui = lab.ui;
    ui.message.textContent = "";
    var extra = lab.headsOff ? [fill(lab.M.ablated, { k: lab.headsOff, total: lab.mask.length })] : [];
    var errors = Object.keys(lab.errors).map(function (k) { return lab.errors[k]; });
    (lab.inputMessages || []).concat(extra).concat(errors).forEach(function (m) { ui.message.appendChild(el("p", {}, m)); });
  }
  function start(lab) {
    if (lab.started) { return lab.started; }
    if (location.protocol === "file:") { say(lab, lab.M.file); return Promise.reject(new Error("file://")); }
    lab.ui.progress.hidden = false;
    var t0 = performance.now();
    plotly().catch(function () {});  // fetched and parsed while the runtime compiles
    lab.started = manifest().then(function (man) {
      lab.manifest = man;
      buildModelControls(lab, man);
      return load(lab, lab.state.defaults.model);
    }).then(function () {
      lab.loaded = true;
      return update(lab).then(function () { return lab.drawn; }).then(function () {
        lab.ready = true; lab.loadMs = performance.now() - t0;
      });
    }).catch(function (err) {
      lab.ui.progress.hidden = true;
      if (String(err.message) !== "file://") { say(lab, fill(lab.M.failed, { error: err.message })); }
      lab.started = null;
      throw err;
    });
    return lab.started;
  }

  // ---- the controls that need the model's shape: snapshot, head switches, lens, attention
  function has(lab, part) { return lab.state.view === "all" || (VIEWS[lab.state.view] || []).indexOf(part) !== -1; }
  function buildModelControls(lab, man) {
    var cfg = man.config, ui = lab.ui;
    lab.mask = new Float32Array(cfg.n_layers * cfg.n_heads).fill(1);
    if (has(lab, "snapshots")) {
      ui.model = field(ui.modelBox, ui.id + "-model", tr("Model (text-4l during its training)"),
                       select(ui.id + "-model", man.models.map(function (m) { return [m.key, tr(m.label)]; }),
                              lab.state.defaults.model));
      ui.model.addEventListener("change", function () {
        if (lab.busy) { ui.model.value = lab.entry.key; return; }  // not while generating
        load(lab, ui.model.value).then(function () { return refresh(lab); }).catch(report(lab));
      });
    }
    if (has(lab, "ablation")) { buildHeads(lab, cfg); }
    if (has(lab, "lens")) { buildLens(lab); }
    if (has(lab, "attention")) { buildAttention(lab, cfg); }
  }
  function buildHeads(lab, cfg) {
    var ui = lab.ui, fs = el("fieldset", { "class": "tinytf-lab-heads" });
    fs.appendChild(el("legend", {}, tr("Heads switched on (uncheck a head to remove its output before W_o)")));
    ui.heads = [];
    for (var l = 0; l < cfg.n_layers; l++) {
      var line = el("div", { "class": "tinytf-lab-headrow", role: "group", "aria-label": tr("Layer {l}", { l: l }) });
      line.appendChild(el("span", { "class": "tinytf-lab-headlayer", "aria-hidden": "true" },
                          tr("Layer {l}", { l: l })));
      for (var h = 0; h < cfg.n_heads; h++) {
        var box = el("input", { type: "checkbox", id: ui.id + "-head-" + l + "-" + h, "data-layer": String(l),
                                "data-head": String(h) });
        box.checked = true;
        var label = el("label", { "for": box.id, "class": "tinytf-lab-check" });
        label.appendChild(box);
        label.appendChild(el("span", { "aria-label": tr("layer {l} head {h}", { l: l, h: h }) }, "h" + h));
        line.appendChild(label);
        ui.heads.push(box);
        box.addEventListener("change", function () { onHeads(lab); });
      }
      fs.appendChild(line);
    }
    ui.allOn = el("button", { type: "button", "class": "tinytf-lab-button tinytf-lab-secondary", id: ui.id + "-all-on" },
                  tr("Switch every head on"));
    ui.allOn.addEventListener("click", function () {
      ui.heads.forEach(function (b) { b.checked = true; });
      onHeads(lab);
    });
    fs.appendChild(ui.allOn);
    ui.ablateBox.appendChild(fs);
  }
  function buildLens(lab) {
    var ui = lab.ui;
    ui.lensBox.appendChild(el("p", { "class": "tinytf-lab-label", id: ui.id + "-lens-label" },
      tr("Logit lens: the next-byte guess after each block, for every position of the prompt (the model's own final norm and LM head applied to the stream leaving each block)")));
    ui.lens = el("table", { "class": "tinytf-lab-table tinytf-lab-lens", id: ui.id + "-lens" });
    ui.lens.appendChild(el("caption", {},
      tr("Guess (and its probability) after each block; the last row is the byte that really comes next")));
    var box = el("div", { "class": "tinytf-lab-tablebox", tabindex: "0", role: "region",
                          "aria-labelledby": ui.id + "-lens-label" });
    box.appendChild(ui.lens);
    ui.lensBox.appendChild(box);
  }
  function buildAttention(lab, cfg) {
    var ui = lab.ui, d = lab.state.defaults;
    var attn = el("div", { "class": "tinytf-lab-row", role: "group", "aria-label": tr("Attention map") });
    var opts = function (n) { return Array.from({ length: n }, function (_, i) { return [i, String(i)]; }); };
    ui.layer = field(attn, ui.id + "-layer", tr("Layer"), select(ui.id + "-layer", opts(cfg.n_layers), d.layer));
    ui.head = field(attn, ui.id + "-head", tr("Head"), select(ui.id + "-head", opts(cfg.n_heads), d.head));
    ui.attnBox.appendChild(attn);
    ui.figure = el("div", { "class": "tinytf-lab-figure", id: ui.id + "-attn" });
    ui.attnBox.appendChild(ui.figure);
    ui.layer.addEventListener("change", function () { showAttention(lab).catch(report(lab)); });
    ui.head.addEventListener("change", function () { showAttention(lab).catch(report(lab)); });
  }
  function onHeads(lab) {
    var cfg = lab.manifest.config, off = 0;
    lab.ui.heads.forEach(function (b) {
      var v = b.checked ? 1 : 0;
      lab.mask[+b.dataset.layer * cfg.n_heads + +b.dataset.head] = v;
      off += 1 - v;
    });
    lab.headsOff = off;
    if (lab.loaded && !lab.busy) { lab.pending = refresh(lab); lab.pending.catch(report(lab)); }
  }
  // the model of `key` (a snapshot), loaded once per page with the progress bar
  function load(lab, key) {
    var ui = lab.ui, entry = lab.manifest.models.filter(function (m) { return m.key === key; })[0];
    var total = (entry.bytes / 1e6).toFixed(1);
    ui.progress.hidden = false;
    return session(entry, function (done) {
      ui.progress.value = done / entry.bytes;
      say(lab, fill(lab.M.loading, { done: (done / 1e6).toFixed(1), total: total }));
    }).then(function (sess) {
      lab.session = sess; lab.entry = entry;
      ui.progress.hidden = true;
      say(lab, fill(lab.M.ready, { model: tr(entry.label) }));
    }, function (err) { ui.progress.hidden = true; throw err; });
  }

  // ---- input: the prompt's bytes, or why not
  function readPrompt(lab) {
    var M = lab.M, text = lab.ui.prompt.value, msgs = [];
    if (text === "") { lab.inputMessages = [M.empty]; return null; }
    var tok = window.tinytfBind.tokenize(text, lab.manifest.byte_labels);
    var max = lab.manifest.config.max_seq_len;
    var odd = Array.from(new Set(Array.from(text).filter(function (c) { return c.codePointAt(0) > 127; })));
    if (odd.length) { msgs.push(fill(M.non_ascii, { chars: odd.slice(0, 8).join(" ") + (odd.length > 8 ? " …" : "") })); }
    if (tok.ids.length > max) {
      msgs.push(fill(M.cut, { n: tok.ids.length, max: max, cut: tok.ids.length - max }));
      tok = { ids: tok.ids.slice(-max), labels: tok.labels.slice(-max) };
    }
    lab.inputMessages = msgs;
    return tok;
  }
  function readSetting(lab, name) {
    var state = lab.state, box = lab.ui.settings[name];
    var lim = state.limits[name], raw = box.value.trim(), value = null, ok;
    if (raw === "" && lim[3]) { ok = true; }
    else {
      value = Number(raw);
      ok = raw !== "" && isFinite(value) && (!lim[2] || Number.isInteger(value)) && value <= lim[1] &&
        (name === "top_p" ? value > lim[0] : value >= lim[0]);
    }
    if (ok) { delete lab.errors[name]; lab.settings[name] = value; box.removeAttribute("aria-invalid"); }
    else {
      var kept = lab.settings[name] === null ? tr("no limit") : String(lab.settings[name]);
      lab.errors[name] = fill(lab.M.setting, { name: state.names[name], rule: state.rules[name], value: raw, kept: kept });
      box.setAttribute("aria-invalid", "true");
    }
    return ok;
  }

  // ---- the model
  function feeds(lab, ids, pastK, pastV) {
    var ort = window.ort, cfg = lab.manifest.config;
    var empty = [cfg.n_layers, cfg.n_kv_heads, 0, cfg.d_head];
    return {
      ids: new ort.Tensor("int64", BigInt64Array.from(ids.map(BigInt)), [1, ids.length]),
      head_mask: new ort.Tensor("float32", lab.mask, [cfg.n_layers, cfg.n_heads]),
      past_k: pastK || new ort.Tensor("float32", new Float32Array(0), empty),
      past_v: pastV || new ort.Tensor("float32", new Float32Array(0), empty)
    };
  }
  function run(lab, ids, pastK, pastV) { return lab.session.run(feeds(lab, ids, pastK, pastV)); }

  function showDistribution(lab) {
    if (!lab.outputs) { return; }
    var ui = lab.ui, probs = nextProbs(lab.outputs.logits.data, lab.settings);
    lab.probs = probs;
    var order = Array.from(probs.keys()).sort(function (a, b) { return probs[b] - probs[a] || a - b; });
    var kept = order.filter(function (b) { return probs[b] > 0; });
    ui.tbody.textContent = "";
    ui.caption.textContent = fill(lab.M.caption, { shown: Math.min(kept.length, lab.state.top), kept: kept.length });
    kept.slice(0, lab.state.top).forEach(function (b, r) {
      var p = probs[b], row = el("tr");
      row.appendChild(el("td", {}, String(r + 1)));
      row.appendChild(el("td", {}, byteName(lab.manifest.byte_labels, b)));
      var cell = el("td", { "class": "tinytf-lab-pcell" });
      var bar = el("span", { "class": "tinytf-lab-bar", "aria-hidden": "true" });
      bar.style.width = (100 * p).toFixed(1) + "%";
      cell.appendChild(bar);
      cell.appendChild(el("span", { "class": "tinytf-lab-p" }, (100 * p).toFixed(p < 0.001 ? 3 : 1) + "%"));
      row.appendChild(cell);
      ui.tbody.appendChild(row);
    });
  }
  function showLens(lab) {
    var ui = lab.ui;
    if (!ui.lens || !lab.outputs) { return; }
    var lens = lab.outputs.lens, L = lens.dims[0], T = lens.dims[1], V = lens.dims[2], names = lab.manifest.byte_labels;
    var body = el("tbody"), thead = el("thead"), headRow = el("tr");
    headRow.appendChild(el("th", { scope: "col" }, tr("after the byte")));
    lab.labels.forEach(function (lb, t) { headRow.appendChild(el("th", { scope: "col" }, t + ": " + lb)); });
    thead.appendChild(headRow);
    lab.lensTop = [];
    for (var l = 0; l < L; l++) {
      var line = el("tr"), tops = [];
      line.appendChild(el("th", { scope: "row" }, tr("block {l}", { l: l })));
      for (var t = 0; t < T; t++) {
        var p = softmax(lens.data.subarray((l * T + t) * V, (l * T + t + 1) * V)), b = argmax(p);
        tops.push([b, p[b]]);
        line.appendChild(el("td", {}, byteName(names, b) + " " + (100 * p[b]).toFixed(0) + "%"));
      }
      lab.lensTop.push(tops);
      body.appendChild(line);
    }
    var truth = el("tr");
    truth.appendChild(el("th", { scope: "row" }, tr("really next")));
    for (var u = 0; u < T; u++) { truth.appendChild(el("td", {}, u + 1 < T ? byteName(names, lab.ids[u + 1]) : "?")); }
    body.appendChild(truth);
    var cap = ui.lens.querySelector("caption");
    ui.lens.textContent = "";
    ui.lens.appendChild(cap); ui.lens.appendChild(thead); ui.lens.appendChild(body);
  }
  function showAttention(lab) {
    var ui = lab.ui;
    if (!lab.outputs || !ui.figure) { return Promise.resolve(); }
    var tpl = lab.manifest.attention[ui.layer.value + "-" + ui.head.value], a = lab.outputs.attn;
    var spec = window.tinytfBind.apply(tpl, { attn: { dims: a.dims, data: a.data } }, lab.labels);
    lab.spec = spec;
    return plotly().then(function () {
      var core = window.tinytfFigures || window.tinytfCore;
      if (ui.figure._tinytf) { return core.update(ui.figure, spec); }
      var drawn = core.draw(ui.figure, spec);
      watchWidth(lab, core);
      return drawn;
    });
  }
  // the theme can change the column's width after the window's last resize event (its sidebars settle
  // later): redraw when the figure's box and the drawn width disagree
  function watchWidth(lab, core) {
    if (!window.ResizeObserver) { return; }
    var fig = lab.ui.figure, pending = null;
    new ResizeObserver(function () {
      var rec = fig._tinytf;
      if (!rec || !rec.box.clientWidth || Math.abs(rec.width - Math.max(rec.box.clientWidth, 200)) < 2) { return; }
      clearTimeout(pending);
      pending = setTimeout(function () { core.update(fig, lab.spec); }, 160);
    }).observe(fig._tinytf.box);
  }
  function update(lab) {
    var ui = lab.ui, tok = readPrompt(lab);
    showMessages(lab);
    if (!tok) { lab.outputs = null; ui.tbody.textContent = ""; return Promise.resolve(); }
    lab.ids = tok.ids; lab.labels = tok.labels;
    ui.output.textContent = ui.prompt.value;
    var t0 = performance.now();
    return run(lab, tok.ids).then(function (out) {
      var t1 = performance.now();
      lab.outputs = out;
      showDistribution(lab);
      showLens(lab);
      lab.times = { model: t1 - t0, table: performance.now() - t1 };  // ms, the last update
      // the figure follows in its own queue, after the next paint: typing never waits for a drawing, the table is
      // on screen first, and the latest prompt wins
      if (!lab.drawQueue) { lab.drawQueue = window.tinytfCore.queue(function () { return showAttention(lab); }); }
      lab.drawn = new Promise(function (resolve) {
        requestAnimationFrame(function () { setTimeout(resolve, 0); });
      }).then(function () { return lab.drawQueue(); });
      lab.drawn.catch(report(lab));
    });
  }
  function refresh(lab) {
    if (!lab.loaded) { return start(lab); }
    if (!lab.queued) { lab.queued = window.tinytfCore.queue(function () { return update(lab); }); }
    return lab.queued();
  }

  // ---- generation: one run of the prompt, then one byte at a time through the cache
  function generate(lab) {
    if (lab.busy) { lab.stop = true; return Promise.resolve(); }
    return (lab.loaded ? Promise.resolve() : start(lab)).then(function () {
      ["temperature", "top_k", "top_p", "seed", "n_bytes"].forEach(function (n) { readSetting(lab, n); });
      var tok = readPrompt(lab);
      showMessages(lab);
      if (!tok) { return; }
      var g = { s: Object.assign({}, lab.settings), ids: tok.ids.slice(), bytes: [], refill: null,
                max: lab.manifest.config.max_seq_len, decoder: new TextDecoder("utf-8"), t0: performance.now(),
                prefix: lab.ui.prompt.value };
      g.draw = mulberry32(g.s.seed);
      lab.busy = true; lab.stop = false; lab.generated = g.bytes; lab.stepTimes = [];
      lab.ui.generate.textContent = tr("Stop");
      function loop(out) {
        var next = step(lab, g, out);
        if (!next) { return null; }
        return next.then(function (o) { return new Promise(function (r) { setTimeout(function () { r(o); }, 0); }); })
          .then(loop);
      }
      return run(lab, g.ids).then(loop).then(function () {
        var secs = (performance.now() - g.t0) / 1000;
        lab.rate = g.bytes.length / secs;
        say(lab, fill(lab.M.generated, { n: g.bytes.length, seconds: secs.toFixed(2), rate: lab.rate.toFixed(0) }) +
            (g.refill !== null ? fill(lab.M.refill, { at: g.refill + 1, max: g.max }) : ""));
      }).finally(function () {
        lab.busy = false;
        lab.ui.generate.textContent = tr("Generate");
      });
    });
  }
  // one byte: drawn from the sampler's distribution, written, then fed (through the cache, or afresh once the
  // context is full); null when done
  function step(lab, g, out) {
    var s = g.s, probs = nextProbs(out.logits.data, s);
    var b = s.temperature === 0 ? argmax(out.logits.data) : pick(probs, g.draw());
    g.bytes.push(b); g.ids.push(b);
    lab.stepTimes.push(performance.now() - g.t0);  // ms from the start to each byte written
    lab.ui.output.textContent = g.prefix + g.decoder.decode(new Uint8Array(g.bytes));
    say(lab, fill(lab.M.generating, { i: g.bytes.length, n: s.n_bytes }));
    if (g.bytes.length >= s.n_bytes || lab.stop) { return null; }
    if (out.present_k.dims[2] + 1 > g.max) {
      if (g.refill === null) { g.refill = g.bytes.length; }
      g.ids = g.ids.slice(-g.max);
      return run(lab, g.ids);
    }
    return run(lab, [b], out.present_k, out.present_v);
  }

  // ---- wiring: the first interaction loads the model
  function wire(lab) {
    var ui = lab.ui, quiet = function () {};
    lab.root.addEventListener("focusin", function () { start(lab).catch(quiet); });
    lab.root.addEventListener("pointerdown", function () { start(lab).catch(quiet); });
    ui.prompt.addEventListener("input", function () {
      if (lab.busy) { return; }
      lab.pending = refresh(lab);  // resolves when the page shows this text (a test or the bench waits for it)
      lab.pending.catch(report(lab));
    });
    Object.keys(ui.settings).forEach(function (name) {
      var input = ui.settings[name];
      input.addEventListener("input", function () {
        readSetting(lab, name);
        showMessages(lab);
        if (lab.loaded && name !== "seed" && name !== "n_bytes") { showDistribution(lab); }
      });
      input.addEventListener("keydown", function (ev) { spin(lab, name, input, ev); });
    });
    ui.generate.addEventListener("click", function () { generate(lab).catch(report(lab)); });
  }
  // the arrow keys step a number box, as a spin button
  function spin(lab, name, input, ev) {
    if (ev.key !== "ArrowUp" && ev.key !== "ArrowDown") { return; }
    var lim = lab.state.limits[name], cur = Number(input.value);
    if (input.value.trim() === "" || !isFinite(cur)) { return; }
    var stepBy = Number(input.dataset.step), next = cur + (ev.key === "ArrowUp" ? stepBy : -stepBy);
    next = Math.min(lim[1], Math.max(lim[0], Math.round(next * 1000) / 1000));
    if (name === "top_p" && next <= 0) { next = stepBy; }
    input.value = String(next);
    ev.preventDefault();
    input.dispatchEvent(new Event("input"));
  }

  function init() {
    Array.prototype.forEach.call(document.querySelectorAll(".tinytf-lab"), function (root) {
      if (!root.tinytfLab) { Lab(root); }
    });
  }
  window.tinytfLabTools = { nextProbs: nextProbs, mulberry32: mulberry32, pick: pick };
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
})();

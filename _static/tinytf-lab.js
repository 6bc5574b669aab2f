// tinytf book: the lab (served locally, no network). text-4l, the book's model trained on English text,
// runs in the reader's browser: the next-byte distribution of a prompt under chapter 10's sampler
// (temperature, top-k, top-p), seeded generation byte by byte through a KV cache, the attention map of
// any layer and head, the logit lens, the training snapshots.
//
// A page holds <div class="tinytf-lab" data-lab="{...}"> (tinytf.lab.browser_lab.lab_html: defaults,
// limits, messages, the model's shape and snapshots, help lines, hints; a note until this script runs). Every
// control shows at once, marked as waiting for the model; nothing is fetched before the reader's first
// interaction with the lab (a control used, focused or clicked, the Load button, a hint): then onnxruntime-web
// (_static/ort/), _static/lab/lab.json and the model's ONNX graph (tinytf.lab.browser_lab.export_lab_onnx: ids,
// head_mask, past K/V -> last logits, logit lens, attention, present K/V) load once per page, with a progress
// bar, and what the reader set meanwhile applies. The attention map and the logit lens are templates emitted by
// Python (tinytf.viz.lab), filled by tinytfBind.apply and drawn by the figure core.
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

  // ------------------------------------------------------------------ the sampler (chapter 10, float64)
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
  var SETTINGS = ["temperature", "top_k", "top_p", "seed", "n_bytes"];
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
  // the plain words under a control or view (browser_lab.HELP), with links to the chapters that teach it
  function help(ui, state, key) {
    var h = state.help && state.help[key], id = ui.id + "-" + key + "-help";
    var p = el("p", { "class": "tinytf-lab-help", id: id });
    if (!h) { return p; }
    p.appendChild(document.createTextNode(h.text));
    h.chapters.forEach(function (n) {
      var href = new URL("../" + state.chapters[String(n)], new URL(STATIC, document.baseURI)).href;
      p.appendChild(document.createTextNode(" "));
      p.appendChild(el("a", { href: href, "class": "tinytf-lab-chapter" }, tr("→ chapter {n}", { n: n })));
    });
    return p;
  }
  function describedBy(input, ids) { input.setAttribute("aria-describedby", ids.join(" ")); }
  // a view's box: a note in place of the view until there is something to show (waiting, or an empty prompt)
  function viewBox(ui, key, cls) {
    var box = el("div", { "class": "tinytf-lab-view " + (cls || "") });
    var wait = el("p", { "class": "tinytf-lab-placeholder", id: ui.id + "-" + key + "-wait" });
    var body = el("div", { "class": "tinytf-lab-viewbody", hidden: "" });
    box.appendChild(wait); box.appendChild(body);
    ui.views = ui.views || [];
    ui.views.push({ wait: wait, body: body, key: key });
    return { box: box, body: body };
  }

  function build(root, state) {
    var id = "tinytf-lab-" + (++serial);
    root.textContent = "";
    var ui = { root: root, id: id };
    buildLoadBar(ui, state);
    if (state.hints && state.hints.length) { root.appendChild(buildHints(ui, state)); }
    buildForm(ui, state);
    ui.message = el("div", { "class": "tinytf-lab-message", "aria-live": "polite", id: id + "-message" });
    root.appendChild(ui.message);
    buildDistribution(ui, state);
    root.appendChild(el("p", { "class": "tinytf-lab-label", id: id + "-out-label" },
                        tr("Generated text (the prompt, then what the model wrote)")));
    ui.output = el("pre", { "class": "tinytf-lab-output", id: id + "-output", "aria-labelledby": id + "-out-label",
                            tabindex: "0" });
    root.appendChild(ui.output);
    return ui;
  }
  // the status line, the Load button and the progress bar: at the top, so the reader sees the lab waits for
  // the model and what loading it costs
  function buildLoadBar(ui, state) {
    // nothing in it changes height when the load starts (a click that starts it must land where it was aimed)
    var bar = el("div", { "class": "tinytf-lab-loadbar" });
    ui.idle = el("p", { "class": "tinytf-lab-idle", id: ui.id + "-idle" }, state.messages.idle);
    ui.load = el("button", { type: "button", "class": "tinytf-lab-button", id: ui.id + "-load" },
                 tr("Load the model (3.9 MB)"));
    ui.status = el("p", { "class": "tinytf-lab-status", role: "status", "aria-live": "polite", id: ui.id + "-status" });
    ui.progress = el("progress", { max: "1", value: "0", "aria-label": tr("Loading the model"), hidden: "" });
    [ui.idle, ui.load, ui.status, ui.progress].forEach(function (e) { bar.appendChild(e); });
    ui.root.appendChild(bar);
  }
  function buildHints(ui, state) {
    var box = el("div", { "class": "tinytf-lab-hints", role: "group", "aria-labelledby": ui.id + "-hints" });
    box.appendChild(el("p", { "class": "tinytf-lab-label", id: ui.id + "-hints" }, tr("Try this")));
    var list = el("ul");
    ui.hints = [];
    state.hints.forEach(function (h) {
      var item = el("li"), text = el("span", { id: ui.id + "-hint-" + h.key }, h.text);
      var b = el("button", { type: "button", "class": "tinytf-lab-button tinytf-lab-secondary",
                             id: ui.id + "-try-" + h.key, "aria-describedby": text.id }, tr("Try it"));
      item.appendChild(text); item.appendChild(document.createTextNode(" ")); item.appendChild(b);
      list.appendChild(item);
      ui.hints.push({ hint: h, button: b });
    });
    box.appendChild(list);
    return box;
  }
  function buildForm(ui, state) {
    var id = ui.id, d = state.defaults;
    var form = el("div", { "class": "tinytf-lab-form tinytf-lab-waits" });
    ui.prompt = field(form, id + "-prompt", tr("Prompt (the text the model continues)"),
                      el("textarea", { id: id + "-prompt", rows: "3", spellcheck: "false" }));
    ui.prompt.value = d.prompt;
    form.appendChild(help(ui, state, "prompt"));
    describedBy(ui.prompt, [id + "-prompt-help"]);
    ui.modelBox = el("div", { "class": "tinytf-lab-row" });
    form.appendChild(ui.modelBox);
    var row = el("div", { "class": "tinytf-lab-row", role: "group", "aria-label": tr("Sampling settings") });
    ui.settings = {};
    SETTINGS.forEach(function (name) {
      var step = name === "temperature" ? 0.1 : name === "top_p" ? 0.05 : 1;
      var box = ui.settings[name] = field(row, id + "-" + name, state.names[name],
                                          numberBox(id + "-" + name, d[name], state.limits[name], step));
      var rule = el("span", { id: id + "-" + name + "-rule", "class": "tinytf-lab-rule" }, state.rules[name]);
      box.parentNode.appendChild(rule);
      box.parentNode.appendChild(help(ui, state, name));
      describedBy(box, [rule.id, id + "-" + name + "-help"]);
    });
    form.appendChild(row);
    // Generate, and next to it what generation is doing and what it did (where the reader pressed: on a phone the
    // status line at the top of the lab is off-screen by then)
    var actions = el("div", { "class": "tinytf-lab-row tinytf-lab-actions" });
    ui.generate = el("button", { type: "button", "class": "tinytf-lab-button", id: id + "-generate" }, tr("Generate"));
    ui.genStatus = el("p", { "class": "tinytf-lab-genstatus", role: "status", "aria-live": "polite",
                             id: id + "-genstatus" });
    actions.appendChild(ui.generate);
    actions.appendChild(ui.genStatus);
    form.appendChild(actions);
    ui.root.appendChild(form);
  }
  function buildDistribution(ui, state) {
    var id = ui.id, v = viewBox(ui, "dist");
    ui.root.appendChild(el("p", { "class": "tinytf-lab-label", id: id + "-dist-label" }, tr("Next byte")));
    ui.root.appendChild(help(ui, state, "table"));
    ui.caption = el("p", { "class": "tinytf-lab-caption", id: id + "-dist-caption" });
    v.body.appendChild(ui.caption);
    ui.table = el("table", { "class": "tinytf-lab-table", id: id + "-dist", "aria-labelledby": ui.caption.id });
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
    v.body.appendChild(tableBox);
    ui.root.appendChild(v.box);
  }

  // ------------------------------------------------------------------ one lab
  // Every function below takes the lab (its state, controls and model outputs) as its first argument.
  function Lab(root) {
    var state = JSON.parse(root.getAttribute("data-lab"));
    var lab = { root: root, state: state, M: state.messages, ui: build(root, state), settings: {}, outputs: null,
                ids: [], labels: [], probs: null, generated: [], busy: false, loaded: false, errors: {}, started: null,
                spec: null, lensSpec: null };
    Object.keys(state.limits).forEach(function (k) { lab.settings[k] = state.defaults[k]; });
    lab.mask = new Float32Array(state.shape.n_layers * state.shape.n_heads).fill(1);
    buildModelControls(lab, state.shape);
    lab.run = function (ids, pastK, pastV) { return run(lab, ids, pastK, pastV); };
    lab.refresh = function () { return refresh(lab); };
    lab.generate = function () { return generate(lab); };
    lab.start = function () { return start(lab); };
    lab.tryHint = function (key) { return tryHint(lab, key); };
    root.tinytfLab = lab;
    wire(lab);
    setPhase(lab, "idle");
    return lab;
  }
  // idle (nothing loaded) -> loading -> ready; the views say what they wait for
  function setPhase(lab, phase) {
    lab.phase = phase;
    lab.root.setAttribute("data-phase", phase);
    lab.ui.load.hidden = lab.ui.idle.hidden = phase === "ready";
    lab.ui.load.disabled = phase === "loading";
    showProgress(lab, phase === "loading");
    if (phase !== "ready") { showViews(lab, false); }
  }
  // a view's note: what it waits for (the model, or a prompt)
  function viewNote(key, ready) {
    var notes = ready ? {
      dist: tr("Type a few letters in the prompt to see which byte the model expects next."),
      lens: tr("Type a few letters in the prompt to see each block's guess."),
      attn: tr("Type a few letters in the prompt to see which bytes this head reads.")
    } : {
      dist: tr("Waiting for the model: the table of next bytes appears here once it has loaded."),
      lens: tr("Waiting for the model: the logit lens appears here once it has loaded."),
      attn: tr("Waiting for the model: the attention map appears here once it has loaded.")
    };
    return notes[key];
  }
  // show the views (true) or their notes
  function showViews(lab, on) {
    lab.ui.views.forEach(function (v) {
      v.body.hidden = !on;
      v.wait.hidden = on;
      if (!on) { v.wait.textContent = viewNote(v.key, lab.phase === "ready"); }
    });
  }
  function say(lab, text) { lab.ui.status.textContent = text; }
  // generation's progress and result, next to the Generate button
  function sayGenerated(lab, text) { lab.ui.genStatus.textContent = text; }
  // the progress bar: until the model has loaded it keeps its place, shown or not (nothing moves under the
  // reader's pointer when a click starts the load); then it takes room only while a snapshot loads
  function showProgress(lab, on) {
    var bar = lab.ui.progress, early = lab.phase !== "ready";
    bar.hidden = !on && !early;
    bar.style.visibility = on ? "" : "hidden";
  }
  function report(lab, where) {
    return function (err) {
      var why = err && err.message ? err.message : String(err);
      (where || say)(lab, why === "file://" ? lab.M.file : fill(lab.M.failed, { error: why }));
    };
  }
  // the singular of a message where the number is 1 ("1 byte", not "1 bytes")
  function plural(lab, key, n, values) { return fill(n === 1 && lab.M[key + "_one"] ? lab.M[key + "_one"] : lab.M[key], values); }
  function showMessages(lab) {
    var ui = lab.ui, off = lab.headsOff || 0;
    ui.message.textContent = "";
    var extra = off ? [plural(lab, "ablated", off, { k: off, total: lab.mask.length })] : [];
    var errors = Object.keys(lab.errors).map(function (k) { return lab.errors[k]; });
    (lab.inputMessages || []).concat(extra).concat(errors).forEach(function (m) { ui.message.appendChild(el("p", {}, m)); });
  }
  function start(lab) {
    if (lab.started) { return lab.started; }
    if (location.protocol === "file:") { say(lab, lab.M.file); return Promise.reject(new Error("file://")); }
    setPhase(lab, "loading");
    showProgress(lab, true);
    var t0 = performance.now();
    plotly().catch(function () {});  // fetched and parsed while the runtime compiles
    lab.started = manifest().then(function (man) {
      lab.manifest = man;
      return load(lab, lab.ui.model ? lab.ui.model.value : lab.state.defaults.model);
    }).then(function () {
      lab.loaded = true;
      setPhase(lab, "ready");
      return update(lab).then(function () { return lab.drawn; }).then(function () {
        lab.ready = true; lab.loadMs = performance.now() - t0;
      });
    }).catch(function (err) {
      showProgress(lab, false);
      if (String(err.message) !== "file://") { say(lab, fill(lab.M.failed, { error: err.message })); }
      lab.started = null;
      setPhase(lab, "idle");
      throw err;
    });
    return lab.started;
  }

  // ---- the controls of the model's parts: snapshot, head switches, lens, attention (from the page's state, so
  // they show before the model loads)
  function has(lab, part) { return lab.state.view === "all" || (VIEWS[lab.state.view] || []).indexOf(part) !== -1; }
  function buildModelControls(lab, shape) {
    var ui = lab.ui, state = lab.state;
    if (has(lab, "snapshots")) {
      ui.model = field(ui.modelBox, ui.id + "-model", tr("Model (text-4l during its training)"),
                       select(ui.id + "-model", state.models.map(function (m) { return [m[0], tr(m[1])]; }),
                              state.defaults.model));
      ui.model.parentNode.appendChild(help(ui, state, "model"));
      describedBy(ui.model, [ui.id + "-model-help"]);
      ui.model.addEventListener("change", function () { onModel(lab); });
    }
    var sections = [];
    if (has(lab, "ablation")) { sections.push(buildHeads(lab, shape)); }
    if (has(lab, "lens")) { sections.push(buildLens(lab)); }
    if (has(lab, "attention")) { sections.push(buildAttention(lab, shape)); }
    sections.forEach(function (b) { ui.root.appendChild(b); });
  }
  function onModel(lab) {
    var ui = lab.ui;
    if (lab.busy) { ui.model.value = lab.entry.key; return; }  // not while generating
    start(lab).then(function () { return useModel(lab); }).then(function () { return refresh(lab); }).catch(report(lab));
  }
  // the model the chooser names, loaded (once per page) if it is not the one in use
  function useModel(lab) {
    var key = lab.ui.model ? lab.ui.model.value : lab.state.defaults.model;
    return lab.entry && lab.entry.key === key ? Promise.resolve() : load(lab, key);
  }
  function buildHeads(lab, shape) {
    var ui = lab.ui, box = el("div", { "class": "tinytf-lab-section tinytf-lab-headbox" });
    var fs = el("fieldset", { "class": "tinytf-lab-heads tinytf-lab-waits", "aria-describedby": ui.id + "-heads-help" });
    fs.appendChild(el("legend", {}, tr("Heads switched on (uncheck a head to remove its output before W_o)")));
    fs.appendChild(help(ui, lab.state, "heads"));
    ui.heads = [];
    for (var l = 0; l < shape.n_layers; l++) {
      var line = el("div", { "class": "tinytf-lab-headrow", role: "group", "aria-label": tr("Block {l}", { l: l }),
                             style: "--heads: " + shape.n_heads + "; --half: " + Math.ceil(shape.n_heads / 2) });
      line.appendChild(el("span", { "class": "tinytf-lab-headlayer", "aria-hidden": "true" }, tr("Block {l}", { l: l })));
      for (var h = 0; h < shape.n_heads; h++) {
        var b = el("input", { type: "checkbox", id: ui.id + "-head-" + l + "-" + h, "data-layer": String(l),
                              "data-head": String(h) });
        b.checked = true;
        var label = el("label", { "for": b.id, "class": "tinytf-lab-check" });
        label.appendChild(b);
        label.appendChild(el("span", { "aria-label": tr("block {l} head {h}", { l: l, h: h }) }, "h" + h));
        line.appendChild(label);
        ui.heads.push(b);
        b.addEventListener("change", function () { onHeads(lab); });
      }
      fs.appendChild(line);
    }
    ui.allOn = el("button", { type: "button", "class": "tinytf-lab-button tinytf-lab-secondary", id: ui.id + "-all-on" },
                  tr("Switch every head on"));
    ui.allOn.addEventListener("click", function () {
      ui.heads.forEach(function (c) { c.checked = true; });
      onHeads(lab);
    });
    fs.appendChild(ui.allOn);
    box.appendChild(fs);
    return box;
  }
  function buildLens(lab) {
    var ui = lab.ui, id = ui.id, box = el("div", { "class": "tinytf-lab-section" }), v = viewBox(ui, "lens");
    box.appendChild(el("p", { "class": "tinytf-lab-label", id: id + "-lens-label" }, tr("Logit lens")));
    box.appendChild(help(ui, lab.state, "lens"));
    ui.lensNote = el("p", { "class": "tinytf-lab-help", id: id + "-lens-note" });
    v.body.appendChild(ui.lensNote);
    ui.lensFigure = el("div", { "class": "tinytf-lab-figure", id: id + "-lens" });
    v.body.appendChild(ui.lensFigure);
    // the figure's numbers as a table (a screen reader's way through them; anyone may open it)
    var details = el("details", { "class": "tinytf-lab-lensdetails" });
    details.appendChild(el("summary", {}, tr("The lens as a table")));
    ui.lensCaption = el("p", { "class": "tinytf-lab-caption", id: id + "-lens-caption" },
      tr("The guess (and its probability) after each block; the last row is the byte that really comes next"));
    details.appendChild(ui.lensCaption);
    ui.lens = el("table", { "class": "tinytf-lab-table tinytf-lab-lens", id: id + "-lens-table",
                            "aria-labelledby": ui.lensCaption.id });
    var tbox = el("div", { "class": "tinytf-lab-tablebox", tabindex: "0", role: "region", "aria-labelledby": ui.lensCaption.id });
    tbox.appendChild(ui.lens);
    details.appendChild(tbox);
    v.body.appendChild(details);
    box.appendChild(v.box);
    return box;
  }
  function buildAttention(lab, shape) {
    var ui = lab.ui, d = lab.state.defaults, box = el("div", { "class": "tinytf-lab-section" }), v = viewBox(ui, "attn");
    box.appendChild(el("p", { "class": "tinytf-lab-label" }, tr("Attention map")));
    box.appendChild(help(ui, lab.state, "attention"));
    var attn = el("div", { "class": "tinytf-lab-row tinytf-lab-waits", role: "group", "aria-label": tr("Attention map") });
    var opts = function (n) { return Array.from({ length: n }, function (_, i) { return [i, String(i)]; }); };
    ui.layer = field(attn, ui.id + "-layer", tr("Block"), select(ui.id + "-layer", opts(shape.n_layers), d.layer));
    ui.head = field(attn, ui.id + "-head", tr("Head"), select(ui.id + "-head", opts(shape.n_heads), d.head));
    [ui.layer, ui.head].forEach(function (s) { describedBy(s, [ui.id + "-attention-help"]); });
    box.appendChild(attn);
    ui.figure = el("div", { "class": "tinytf-lab-figure", id: ui.id + "-attn" });
    v.body.appendChild(ui.figure);
    box.appendChild(v.box);
    [ui.layer, ui.head].forEach(function (s) {
      s.addEventListener("change", function () {
        if (!lab.loaded) { start(lab).catch(function () {}); return; }  // drawn with these once loaded
        redraw(lab);
      });
    });
    return box;
  }
  function redraw(lab) {
    if (!lab.outputs) { return; }
    if (!lab.drawQueue) { lab.drawQueue = window.tinytfCore.queue(function () { return showFigures(lab); }); }
    lab.drawn = lab.drawQueue();
    lab.drawn.catch(report(lab));
  }
  // the head mask from the switches (1 = on, 0 = off)
  function readHeads(lab) {
    var n = lab.state.shape.n_heads, off = 0;
    lab.ui.heads.forEach(function (b) {
      var v = b.checked ? 1 : 0;
      lab.mask[+b.dataset.layer * n + +b.dataset.head] = v;
      off += 1 - v;
    });
    lab.headsOff = off;
    showMessages(lab);
  }
  function onHeads(lab) {
    readHeads(lab);
    if (lab.busy) { return; }
    lab.pending = refresh(lab);
    lab.pending.catch(report(lab));
  }
  // the model of `key` (a snapshot), loaded once per page with the progress bar
  function load(lab, key) {
    var ui = lab.ui, entry = lab.manifest.models.filter(function (m) { return m.key === key; })[0];
    var total = (entry.bytes / 1e6).toFixed(1);
    showProgress(lab, true);
    return session(entry, function (done) {
      ui.progress.value = done / entry.bytes;
      say(lab, fill(lab.M.loading, { done: (done / 1e6).toFixed(1), total: total }));
    }).then(function (sess) {
      lab.session = sess; lab.entry = entry;
      showProgress(lab, false);
      say(lab, fill(lab.M.ready, { model: tr(entry.label) }));
    }, function (err) { showProgress(lab, false); throw err; });
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
      var cut = tok.ids.length - max;
      msgs.push(plural(lab, "cut", cut, { n: tok.ids.length, max: max, cut: cut }));
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
    var shown = Math.min(kept.length, lab.state.top);
    ui.tbody.textContent = "";
    ui.caption.textContent = fill(kept.length === 1 ? lab.M.caption_one : kept.length <= lab.state.top ?
                                  lab.M.caption_all : lab.M.caption, { shown: shown, kept: kept.length });
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
  // the figures: Python's templates filled with the model's outputs (tinytfBind.apply) and drawn by the core
  function showFigures(lab) {
    var t0 = performance.now(), t1;
    return showLens(lab).then(function () { t1 = performance.now(); return showAttention(lab); }).then(function () {
      lab.figureTimes = { lens: t1 - t0, attention: performance.now() - t1 };  // ms, the last drawing
    });
  }
  function drawFigure(lab, box, spec) {
    return plotly().then(function () {
      var core = window.tinytfFigures || window.tinytfCore;
      if (box._tinytf) { return core.update(box, spec); }
      var drawn = core.draw(box, spec);
      watchWidth(lab, core, box);
      return drawn;
    });
  }
  // the positions the lens shows: its templates (tinytf.viz.lab.LENS_WINDOWS) for a narrow and a wide box
  function lensWindow(lab) {
    var keys = Object.keys(lab.manifest.lens).map(Number).sort(function (a, b) { return a - b; });
    var w = lab.ui.lensFigure.parentNode.clientWidth || lab.ui.root.clientWidth;
    return w < 600 ? keys[0] : keys[keys.length - 1];
  }
  function showLens(lab) {
    var ui = lab.ui;
    if (!lab.outputs || !ui.lensFigure) { return Promise.resolve(); }
    var n = lensWindow(lab), T = lab.labels.length, l = lab.outputs.lens;
    var spec = window.tinytfBind.apply(lab.manifest.lens[String(n)], { lens: { dims: l.dims, data: l.data } }, lab.labels);
    lab.lensSpec = spec; lab.lensWindow = n;
    ui.lensNote.textContent = T > n ? tr("The last {n} of the prompt's {total} positions are shown.", { n: n, total: T }) : "";
    ui.lensNote.hidden = T <= n;
    lensTable(lab, spec);
    return drawFigure(lab, ui.lensFigure, spec);
  }
  // the lens figure's own numbers and bytes as a table (nothing recomputed)
  function lensTable(lab, spec) {
    var heat = spec.data[0], truth = spec.data[1];
    var thead = el("thead"), body = el("tbody"), headRow = el("tr");
    headRow.appendChild(el("th", { scope: "col" }, tr("after the byte")));
    heat.x.forEach(function (x) { headRow.appendChild(el("th", { scope: "col" }, x)); });
    thead.appendChild(headRow);
    heat.y.forEach(function (y, r) {
      var line = el("tr");
      line.appendChild(el("th", { scope: "row" }, y));
      heat.text[r].forEach(function (t, c) { line.appendChild(el("td", {}, t + " " + (100 * heat.z[r][c]).toFixed(0) + "%")); });
      body.appendChild(line);
    });
    var last = el("tr");
    last.appendChild(el("th", { scope: "row" }, truth.y[0]));
    truth.text.forEach(function (t) { last.appendChild(el("td", {}, t)); });
    body.appendChild(last);
    lab.ui.lens.textContent = "";
    lab.ui.lens.appendChild(thead); lab.ui.lens.appendChild(body);
  }
  function showAttention(lab) {
    var ui = lab.ui;
    if (!lab.outputs || !ui.figure) { return Promise.resolve(); }
    var l = +ui.layer.value, h = +ui.head.value, off = lab.mask[l * lab.state.shape.n_heads + h] === 0;
    var tpl = lab.manifest.attention[l + "-" + h + (off ? "-off" : "")], a = lab.outputs.attn;
    var spec = window.tinytfBind.apply(tpl, { attn: { dims: a.dims, data: a.data } }, lab.labels);
    lab.spec = spec;
    ui.figure.closest(".tinytf-lab-view").classList.toggle("tinytf-lab-off", off);
    return drawFigure(lab, ui.figure, spec);
  }
  // the theme can change the column's width after the window's last resize event (its sidebars settle
  // later): redraw when the figure's box and the drawn width disagree; the lens takes its window anew
  function watchWidth(lab, core, box) {
    if (!window.ResizeObserver) { return; }
    var pending = null;
    new ResizeObserver(function () {
      var rec = box._tinytf;
      if (!rec || !rec.box.clientWidth || Math.abs(rec.width - Math.max(rec.box.clientWidth, 200)) < 2) { return; }
      clearTimeout(pending);
      pending = setTimeout(function () {
        if (box === lab.ui.lensFigure && lab.lensWindow !== lensWindow(lab)) { redraw(lab); return; }
        core.update(box, box === lab.ui.lensFigure ? lab.lensSpec : lab.spec);
      }, 160);
    }).observe(box._tinytf.box);
  }
  function clearViews(lab) {
    lab.outputs = null; lab.probs = null; lab.spec = null; lab.lensSpec = null; lab.ids = []; lab.labels = [];
    lab.ui.tbody.textContent = "";
    lab.ui.caption.textContent = "";
    lab.ui.output.textContent = "";
    showViews(lab, false);
  }
  function update(lab) {
    var ui = lab.ui, tok = readPrompt(lab);
    showMessages(lab);
    if (!tok) { clearViews(lab); return Promise.resolve(); }
    var t0 = performance.now();
    return run(lab, tok.ids).then(function (out) {
      var t1 = performance.now();
      if (ui.prompt.value === "") { return; }  // emptied while the model ran
      lab.ids = tok.ids; lab.labels = tok.labels;
      ui.output.textContent = ui.prompt.value;
      lab.outputs = out;
      showViews(lab, true);
      showDistribution(lab);
      lab.times = { model: t1 - t0, table: performance.now() - t1 };  // ms, the last update
      // the figures follow in their own queue, after the next paint: typing never waits for a drawing, the table
      // is on screen first, and the latest prompt wins
      if (!lab.drawQueue) { lab.drawQueue = window.tinytfCore.queue(function () { return showFigures(lab); }); }
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
      SETTINGS.forEach(function (n) { readSetting(lab, n); });
      var tok = readPrompt(lab);
      showMessages(lab);
      if (!tok) { clearViews(lab); return; }
      var g = { s: Object.assign({}, lab.settings), ids: tok.ids.slice(), bytes: [], refill: null,
                max: lab.manifest.config.max_seq_len, decoder: new TextDecoder("utf-8"), t0: performance.now(),
                prefix: lab.ui.prompt.value };
      g.draw = mulberry32(g.s.seed);
      lab.busy = true; lab.stop = false; lab.generated = g.bytes; lab.stepTimes = [];
      sayGenerated(lab, "");
      lab.ui.generate.textContent = tr("Stop");
      function loop(out) {
        var next = step(lab, g, out);
        if (!next) { return null; }
        return next.then(function (o) { return new Promise(function (r) { setTimeout(function () { r(o); }, 0); }); })
          .then(loop);
      }
      return run(lab, g.ids).then(loop).then(function () {
        var secs = (performance.now() - g.t0) / 1000, n = g.bytes.length;
        lab.rate = n / secs;
        sayGenerated(lab, plural(lab, "generated", n, { n: n, seconds: secs.toFixed(2), rate: lab.rate.toFixed(0) }) +
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
    write(lab, g, g.prefix + g.decoder.decode(new Uint8Array(g.bytes)));
    sayGenerated(lab, fill(lab.M.generating, { i: g.bytes.length, n: s.n_bytes }));
    if (g.bytes.length >= s.n_bytes || lab.stop) { return null; }
    if (out.present_k.dims[2] + 1 > g.max) {
      if (g.refill === null) { g.refill = g.bytes.length; }
      g.ids = g.ids.slice(-g.max);
      return run(lab, g.ids);
    }
    return run(lab, [b], out.present_k, out.present_v);
  }

  // the text so far in the output box, its newest bytes in sight: the box scrolls to its end as they arrive (from
  // the first byte on, wherever it was), unless the reader has scrolled up in it since; back at the end, it follows
  function write(lab, g, text) {
    var box = lab.ui.output, atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 4;
    box.textContent = text;
    if (g.bytes.length === 1 || atEnd) { box.scrollTop = box.scrollHeight; }
  }

  // ---- a hint: set what it names (the prompt, settings, heads switched off, the model), then run (and generate)
  function tryHint(lab, key) {
    var found = lab.ui.hints.filter(function (h) { return h.hint.key === key; })[0];
    if (!found || lab.busy) { return Promise.resolve(); }
    var s = found.hint.set, ui = lab.ui;
    if ("prompt" in s) { ui.prompt.value = s.prompt; }
    SETTINGS.forEach(function (n) {
      if (n in s) { ui.settings[n].value = s[n] === null ? "" : String(s[n]); readSetting(lab, n); }
    });
    if (ui.heads) {
      var off = (s.off || []).map(function (p) { return p[0] + "-" + p[1]; });
      ui.heads.forEach(function (b) { b.checked = off.indexOf(b.dataset.layer + "-" + b.dataset.head) === -1; });
    }
    if (ui.heads) { readHeads(lab); }
    if (ui.model) { ui.model.value = s.model || lab.state.defaults.model; }
    return start(lab).then(function () { return useModel(lab); }).then(function () { return refresh(lab); }).then(function () {
      return s.generate ? generate(lab) : null;
    });
  }

  // ---- wiring: the first interaction loads the model; a control used before applies once it has loaded
  function wire(lab) {
    var ui = lab.ui, quiet = function () {};
    lab.root.addEventListener("focusin", function () { start(lab).catch(quiet); });
    lab.root.addEventListener("pointerdown", function () { start(lab).catch(quiet); });
    ui.load.addEventListener("click", function () { start(lab).catch(report(lab)); });
    ui.prompt.addEventListener("input", function () {
      if (lab.busy) { return; }
      lab.pending = refresh(lab);  // resolves when the page shows this text (a test or the bench waits for it)
      lab.pending.catch(report(lab));
    });
    SETTINGS.forEach(function (name) {
      var input = ui.settings[name];
      input.addEventListener("input", function () {
        readSetting(lab, name);
        showMessages(lab);
        if (!lab.loaded) { start(lab).catch(quiet); return; }  // the setting applies once the model has loaded
        if (name !== "seed" && name !== "n_bytes") { showDistribution(lab); }
      });
      input.addEventListener("keydown", function (ev) { spin(lab, name, input, ev); });
    });
    ui.generate.addEventListener("click", function () { generate(lab).catch(report(lab, sayGenerated)); });
    (ui.hints || []).forEach(function (h) {
      h.button.addEventListener("click", function () { tryHint(lab, h.hint.key).catch(report(lab)); });
    });
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

// tinytf book: the live panel on a static page (served locally, no network).
//
// A panel cell's HTML output is <div class="tinytf-static-panel" data-panel="{...}"> holding a note
// (tinytf/viz/static_panel.py writes it). Here it becomes a working panel: a text box for the tokens,
// the model, the view, the head and the layer. On the reader's first use of a control the page loads
// onnxruntime-web, the model's ONNX file (logits and every trace tensor as outputs, tinytf.onnx_export)
// and the view templates of that model (tinytf.viz.binding); then every change runs the model in the
// browser and window.tinytfBind.apply recomputes the figure from the outputs: the same view, layout and
// numbers as tinytf.viz in Python. The figure is drawn by the book's figure core, window.tinytfCore
// (_static/tinytf-core.js: theme, reflow, keyboard controls, text alternative) and updated in place,
// staying on the stepper's stage; the core's queue runs one update at a time.
//
// Nothing loads before the first interaction, so the page's first load does not grow. Messages for bad
// input are the Python panel's (the templates come from Python in data-panel). A page opened as file://
// cannot fetch the model: the panel says how to serve the folder instead.
(function () {
  "use strict";
  var script = document.currentScript;
  var STATIC = script && script.src ? script.src.replace(/[^/]*(\?.*)?$/, "") : "_static/";
  var MODELS_DIR = STATIC + "models/";
  var ORT_DIR = STATIC + "ort/";
  var serial = 0;
  // the panel's words: English, or the page's translation (window.tinytfStrings, through the core's tr)
  function tr(text, values) {
    var core = window.tinytfCore || window.tinytfFigures;
    return core && core.tr ? core.tr(text, values) : text;
  }
  function fileMessage() {
    return tr("This page was opened as a file (file://), and browsers do not let such a page load the model. Serve the book's folder instead: run `python -m http.server --directory _build/html` in the book's folder and open http://localhost:8000/ in the browser");
  }

  // ------------------------------------------------------------------ shared loaders (once per page)
  var loading = {};
  function once(key, make) {
    if (!loading[key]) {
      loading[key] = make();
      loading[key].catch(function () { delete loading[key]; });  // a failed load may be retried
    }
    return loading[key];
  }
  function loadScript(src) {
    return once("script:" + src, function () {
      return new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = src;
        s.onload = function () { resolve(); };
        s.onerror = function () { reject(new Error("could not load " + src)); };
        document.head.appendChild(s);
      });
    });
  }
  function fetchJSON(url) {
    return once("json:" + url, function () {
      return fetch(url).then(function (r) {
        if (!r.ok) { throw new Error(url + ": HTTP " + r.status); }
        return r.json();
      });
    });
  }
  function runtime() {
    return loadScript(ORT_DIR + "ort.wasm.min.js").then(function () {
      var ort = window.ort;
      if (!ort) { throw new Error("onnxruntime-web did not load"); }
      ort.env.wasm.numThreads = 1;      // no cross-origin isolation on a static host
      ort.env.wasm.wasmPaths = ORT_DIR;
      return ort;
    });
  }
  function manifest() { return fetchJSON(MODELS_DIR + "manifest.json"); }
  function session(entry) {
    return once("session:" + entry.key, function () {
      return runtime().then(function (ort) {
        return ort.InferenceSession.create(MODELS_DIR + entry.file, { executionProviders: ["wasm"] });
      });
    });
  }
  // the figure templates of a model (tinytf.viz.templates): an index, then one file per view and layer
  function templateIndex(entry) { return fetchJSON(MODELS_DIR + entry.key + "/index.json"); }
  function templateFile(entry, index, view, layer) {
    var name = index.files[view] && index.files[view][String(layer)];
    if (!name) { return Promise.reject(new Error("no template for view " + view + ", layer " + layer)); }
    var url = MODELS_DIR + entry.key + "/" + name;
    return once("tpl:" + url, function () { return window.tinytfBind.loadJSON(url); });
  }

  // ------------------------------------------------------------------ Python's wording, in JS
  // repr() of a str, as Python prints it (the messages quote the reader's text with it)
  function pyRepr(s) {
    var q = s.indexOf("'") !== -1 && s.indexOf('"') === -1 ? '"' : "'";
    var out = q;
    Array.from(s).forEach(function (ch) {
      var c = ch.codePointAt(0);
      if (ch === "\\") { out += "\\\\"; }
      else if (ch === q) { out += "\\" + q; }
      else if (ch === "\n") { out += "\\n"; }
      else if (ch === "\r") { out += "\\r"; }
      else if (ch === "\t") { out += "\\t"; }
      else if (ch !== " " && /[\p{C}\p{Z}]/u.test(ch)) {  // not str.isprintable()
        var hex = c.toString(16);
        out += c < 0x100 ? "\\x" + ("0" + hex).slice(-2)
          : c < 0x10000 ? "\\u" + ("000" + hex).slice(-4) : "\\U" + ("0000000" + hex).slice(-8);
      } else { out += ch; }
    });
    return out + q;
  }
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (m, k) { return k in values ? String(values[k]) : m; });
  }
  function utf8(text) { return Array.from(new TextEncoder().encode(text)); }
  // the ids of the text for this model, or a message (the order and words of the Python panel)
  function encode(state, text, entry) {
    var M = state.messages;
    if (text === "") { return { error: M.empty }; }
    var V = entry.vocab_size;
    var bad = [];
    Array.from(text).forEach(function (ch) {
      if (utf8(ch).some(function (b) { return b >= V; }) && bad.indexOf(ch) === -1) { bad.push(ch); }
    });
    if (bad.length) { return { error: fill(M.vocab, { chars: pyRepr(bad.join("")), vocab: V, last: V - 1 }) }; }
    var ids = utf8(text);
    var limit = Math.min(entry.max_seq_len, state.max_tokens);
    if (ids.length > limit) {
      var why = limit === entry.max_seq_len ? fill(M.why_model, { max_seq_len: entry.max_seq_len })
        : fill(M.why_panel, { max_tokens: state.max_tokens });
      return { error: fill(M.too_many, { n: ids.length, text: pyRepr(text), why: why, limit: limit }) };
    }
    return { ids: ids };
  }

  // What the panel does with text beyond ASCII (Chinese, accents, emoji): the model reads one token per UTF-8
  // byte, and a CJK character is 3 bytes, so "你好" is 6 tokens; a model trained on English text has seen few
  // such bytes. Said in the status line, before the timing ("" for ASCII text).
  function bytesNote(text, entry) {
    var chars = Array.from(text).length, n = utf8(text).length;
    if (n === chars) { return ""; }
    var note = tr("{text} is {chars} characters and {n} bytes in UTF-8: the model reads one token per byte (a Chinese character is 3 bytes).",
      { text: pyRepr(text), chars: chars, n: n });
    if (/English/.test(entry.label || "")) {
      note += " " + tr("This model was trained on English text, so what it makes of these bytes says little.");
    }
    return note + " ";
  }

  // ------------------------------------------------------------------ the panel
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text != null) { e.textContent = text; }
    return e;
  }
  function field(box, labelText, control) {
    var wrap = el("span", { "class": "tinytf-panel-field" });
    var lab = el("label", { "for": control.id }, labelText);
    wrap.appendChild(lab); wrap.appendChild(control); box.appendChild(wrap);
    return control;
  }
  function options(select, items, value) {
    select.textContent = "";
    items.forEach(function (it) {
      var o = el("option", { value: String(it[0]) }, it[1]);
      select.appendChild(o);
    });
    var keep = items.some(function (it) { return String(it[0]) === String(value); });
    select.value = keep ? String(value) : String(items[0][0]);
  }

  function headOptions(n) {  // the "heads" choices: all, their mean, then each head of a model with n
    var heads = [["all", tr("all heads")], ["mean", tr("mean of heads")]];
    for (var h = 0; h < n; h++) { heads.push([h, tr("head {h}", { h: h })]); }
    return heads;
  }

  function Panel(root) {
    var state = JSON.parse(root.getAttribute("data-panel"));
    var id = "tinytf-panel-" + (++serial);
    this.root = root; this.state = state; this.id = id;
    this.entry = null; this.ready = false; this.figure = null;
    root.textContent = "";
    root.setAttribute("role", "group");
    root.setAttribute("aria-label", tr("Live panel: run the block on your own tokens, in this browser"));
    var intro = el("p", { "class": "tinytf-panel-intro" },
      tr("Live panel: type your own tokens or pick a view; the model then runs in this browser (nothing is sent anywhere)."));
    root.appendChild(intro);
    var box = el("div", { "class": "tinytf-panel-controls" });
    root.appendChild(box);
    this.text = field(box, tr("tokens"), el("input", { type: "text", id: id + "-text", spellcheck: "false",
      autocomplete: "off", "aria-describedby": id + "-msg" }));
    this.text.value = state.text;
    this.model = field(box, tr("model"), el("select", { id: id + "-model" }));
    options(this.model, state.models.map(function (k) { return [k, k]; }), state.models[0]);
    this.view = field(box, tr("view"), el("select", { id: id + "-view" }));
    options(this.view, Object.keys(state.views).map(function (k) { return [k, state.views[k]]; }), state.view);
    this.head = field(box, tr("heads"), el("select", { id: id + "-head" }));
    options(this.head, headOptions(0), state.head);
    this.layer = field(box, tr("block"), el("select", { id: id + "-layer" }));
    options(this.layer, [[state.layer, String(state.layer)]], state.layer);
    this.run = el("button", { type: "button", "class": "tinytf-anim-btn tinytf-panel-run" }, tr("▶ Run in this browser"));
    box.appendChild(this.run);
    this.msg = el("div", { id: id + "-msg", "class": "tinytf-panel-message", role: "alert" });
    this.status = el("div", { "class": "tinytf-panel-status", role: "status", "aria-live": "polite" });
    this.msg.hidden = true;
    root.appendChild(this.msg); root.appendChild(this.status);
    this.figBox = el("div", { "class": "tinytf-panel-figure" });
    root.appendChild(this.figBox);
    var self = this;
    var later = null;
    this.text.addEventListener("input", function () {  // typing: redraw shortly after the last key
      clearTimeout(later);
      later = setTimeout(function () { self.request(); }, 120);
    });
    this.text.addEventListener("change", function () { clearTimeout(later); self.request(); });
    var heads = function () { self.head.disabled = self.view.value !== "attention"; };  // only the map has heads
    this.view.addEventListener("change", heads);
    heads();
    [this.model, this.view, this.head, this.layer].forEach(function (s) {
      s.addEventListener("change", function () { self.request(); });
    });
    this.run.addEventListener("click", function () { self.request(); });
    if (location.protocol === "file:") { this.say(null, fileMessage(), true); }
    root._tinytfPanel = this;
  }
  Panel.prototype.say = function (status, message, keep) {
    if (status != null) { this.status.textContent = status; }
    if (message != null || !keep) {
      this.msg.textContent = message ? "⚠ " + message : "";
      this.msg.hidden = !message;
    }
  };
  // one update at a time; a change made while one runs is applied when it ends (the latest wins):
  // window.tinytfCore.queue; panel.busy is the update under way (or null), panel.again whether one more is due
  Panel.prototype.request = function () {
    var self = this;
    if (!this.queue) {
      this.queue = window.tinytfCore.queue(function () {
        return self.update().catch(function (err) {
          self.say("", tr("the panel could not run the model ({error})", { error: err && err.message ? err.message : err }));
        });
      });
    }
    return this.queue();
  };
  Object.defineProperty(Panel.prototype, "busy", { get: function () { return this.queue ? this.queue.busy : null; } });
  Object.defineProperty(Panel.prototype, "again", { get: function () { return this.queue ? this.queue.again : false; } });
  Panel.prototype.load = function () {
    var self = this;
    return manifest().then(function (man) {
      var byKey = {};
      man.models.forEach(function (m) { byKey[m.key] = m; });
      var keys = self.state.models.filter(function (k) { return byKey[k]; });
      if (!keys.length) { throw new Error("no model of this panel is in the book's manifest"); }
      self.byKey = byKey;
      if (!self.ready) {
        options(self.model, keys.map(function (k) { return [k, tr(byKey[k].label || k)]; }), self.model.value);
        self.ready = true;
      }
      return byKey[self.model.value];
    });
  };
  Panel.prototype.update = function () {
    var self = this;
    var t0 = performance.now();
    var first = !this.figure;
    if (location.protocol === "file:") { this.say("", fileMessage()); return Promise.resolve(null); }
    if (first) { this.say(tr("Loading the model and onnxruntime-web (once per page)…"), null, true); }
    return this.load().then(function (entry) {
      var changedModel = self.entry !== entry;
      self.entry = entry;
      if (changedModel) { self.fitControls(entry); }
      var enc = encode(self.state, self.text.value, entry);
      if (enc.error) {
        var kept = self.figure ? self.state.messages.kept : "";
        self.say("", tr("{message}.", { message: enc.error.replace(/\.+$/, "") }) + kept);
        return null;
      }
      var view = self.viewKey();
      var layer = parseInt(self.layer.value, 10);
      return Promise.all([session(entry), templateIndex(entry).then(function (index) {
        return templateFile(entry, index, view, layer).then(function (file) { return [index, file]; });
      })]).then(function (parts) {
        var t1 = performance.now();
        return self.compute(parts[0], parts[1][0], parts[1][1], enc.ids).then(function (fig) {
          var t2 = performance.now();
          return self.draw(fig).then(function () {
            var t3 = performance.now();
            self.timing = { total: t3 - t0, load: t1 - t0, run: fig.runMs, figure: t2 - t1 - fig.runMs, draw: t3 - t2 };
            self.run.hidden = true;  // from now on every control redraws by itself
            self.root.setAttribute("data-update-ms", String(Math.round(t3 - t0)));
            self.root.setAttribute("data-updates", String((+self.root.getAttribute("data-updates") || 0) + 1));
            self.say((first ? tr("Ready: the model runs in this browser.") + " " : "") + bytesNote(self.text.value, entry) +
              tr("Updated in {total} ms (model {model} ms, figure {figure} ms).", { total: Math.round(t3 - t0),
                model: Math.round(fig.runMs), figure: Math.round(t3 - t1 - fig.runMs) }), "");
          });
        });
      });
    });
  };
  Panel.prototype.fitControls = function (entry) {
    options(this.head, headOptions(entry.n_heads), this.head.value);
    var layers = [];
    for (var l = 0; l < entry.n_layers; l++) { layers.push([l, String(l)]); }
    options(this.layer, layers, this.layer.value);
  };
  Panel.prototype.viewKey = function () {
    var v = this.view.value;
    return v === "attention" ? "attention-" + this.head.value : v;
  };
  Panel.prototype.compute = function (sess, index, file, ids) {
    var self = this;
    var ort = window.ort;
    var feeds = {};
    feeds[sess.inputNames[0]] = new ort.Tensor("int64", BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);
    var t = performance.now();
    return sess.run(feeds).then(function (outputs) {
      var runMs = performance.now() - t;
      var tok = window.tinytfBind.tokenize(self.text.value, index.byte_labels);
      var template = file.templates[String(ids.length)];
      if (!template) { throw new Error("no template for " + ids.length + " tokens"); }
      var fig = window.tinytfBind.apply(template, outputs, tok.labels);
      fig.runMs = runMs;
      // kept for the tests (the figure is recomputed from them and compared with Python's)
      self.lastTemplate = template; self.lastOutputs = outputs; self.lastLabels = tok.labels; self.lastIds = ids;
      return fig;
    });
  };
  Panel.prototype.draw = function (fig) {
    var spec = { data: fig.data, layout: fig.layout, frames: fig.frames || [] };
    if (!this.figure) {
      this.figure = el("div", { "class": "plotly-graph-div", id: this.id + "-figure" });
      this.figBox.appendChild(this.figure);
      return Promise.resolve(window.tinytfCore.draw(this.figure, spec));
    }
    return Promise.resolve(window.tinytfCore.update(this.figure, spec));
  };

  function init() {
    document.querySelectorAll(".tinytf-static-panel[data-panel]").forEach(function (root) {
      if (!root._tinytfPanel) { new Panel(root); }
    });
  }
  window.tinytfPanel = { pyRepr: pyRepr, encode: encode, fill: fill, init: init };
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", init); } else { init(); }
})();

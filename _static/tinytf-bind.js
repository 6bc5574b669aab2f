/* tinytf-bind.js: recompute tinytf's figures in the browser from the model's outputs.
 *
 * The figures are laid out in Python (tinytf.viz); each comes as a template per number of
 * tokens T (tinytf.viz.templates.export_templates): the figure JSON with its trace-dependent
 * values left out, and bindings [path, recipe] that say how to compute each from the model's
 * outputs (ONNX output names = trace names, e.g. "blocks.0.attn.weights") and the token labels.
 * This file is the browser's copy of the recipe operations of tinytf/viz/binding.py (OPS);
 * it knows nothing about any view. Plain script, no imports:
 *
 *   const fig = tinytfBind.apply(template, outputs, labels);  // {data, layout, frames}
 *     outputs: {name: {dims: number[], data: Float32Array}} (onnxruntime-web tensors)
 *     labels:  the token labels, e.g. tinytfBind.tokenize(text, index.byte_labels).labels
 *   tinytfBind.tokenize(text, byteLabels) -> {ids, labels}  (UTF-8 bytes; "你¹" "你²" "你³")
 *   tinytfBind.loadJSON(url) -> Promise of the parsed file (.json or .json.gz)
 */
(function () {
  "use strict";

  // ---- n-dimensional arrays: {nd: true, dims, data} (C order) ----
  function nd(dims, data) { return { nd: true, dims: dims, data: data }; }
  function isNd(x) { return x !== null && typeof x === "object" && x.nd === true; }
  function count(dims) { let n = 1; for (const d of dims) n *= d; return n; }
  function axisOf(axis, ndim) {
    const a = axis < 0 ? axis + ndim : axis;
    if (a < 0 || a >= ndim) throw new Error("axis " + axis + " out of range for " + ndim + " dimensions");
    return a;
  }
  function flat(x) { return isNd(x) ? x.data : x; }

  function reduce(x, axis, init, step, finish) {
    const a = axisOf(axis, x.dims.length);
    const outer = count(x.dims.slice(0, a)), n = x.dims[a], inner = count(x.dims.slice(a + 1));
    const out = new Array(outer * inner);
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < inner; i++) {
        let acc = init;
        for (let k = 0; k < n; k++) acc = step(acc, x.data[(o * n + k) * inner + i]);  // in order, as numpy
        out[o * inner + i] = finish(acc, n);
      }
    }
    const dims = x.dims.slice(0, a).concat(x.dims.slice(a + 1));
    return dims.length ? nd(dims, out) : out[0];
  }

  // f(lane) for every lane of x along `axis` (the values x[..., k, ...] for k = 0..n-1, in order): f returns a
  // number (the axis is reduced, e.g. max, argmax) or an array of n numbers (kept, e.g. softmax)
  function lanes(x, axis, f) {
    const a = axisOf(axis, x.dims.length);
    const outer = count(x.dims.slice(0, a)), n = x.dims[a], inner = count(x.dims.slice(a + 1));
    const lane = new Array(n);
    let out = null, keep = false;
    for (let o = 0; o < outer; o++) {
      for (let i = 0; i < inner; i++) {
        for (let k = 0; k < n; k++) lane[k] = x.data[(o * n + k) * inner + i];
        const r = f(lane);
        if (out === null) { keep = Array.isArray(r); out = new Array(keep ? x.data.length : outer * inner); }
        if (keep) { for (let k = 0; k < n; k++) out[(o * n + k) * inner + i] = r[k]; } else { out[o * inner + i] = r; }
      }
    }
    if (keep) return nd(x.dims.slice(), out || []);
    const dims = x.dims.slice(0, a).concat(x.dims.slice(a + 1));
    return dims.length ? nd(dims, out || []) : out[0];
  }
  function laneSoftmax(v) {
    let m = -Infinity, s = 0;
    for (const u of v) if (u > m) m = u;
    const e = v.map(function (u) { return Math.exp(u - m); });
    for (const u of e) s += u;
    return e.map(function (u) { return u / s; });
  }
  function laneArgmax(v) {
    let best = 0;
    for (let k = 1; k < v.length; k++) if (v[k] > v[best]) best = k;
    return best;
  }
  // Python's start:stop of a length n: [first, end)
  function pyRange(n, start, stop) {
    const at = function (v, dflt) {
      if (v === null || v === undefined) return dflt;
      return v < 0 ? Math.max(0, n + v) : Math.min(v, n);
    };
    const s = at(start, 0);
    return [s, Math.max(s, at(stop, n))];
  }
  function sliceAxis(x, axis, start, stop) {
    if (!isNd(x)) {
      if (axis !== 0) throw new Error("slice: a list has one axis (0); got axis " + axis);
      const r = pyRange(x.length, start, stop);
      return Array.from(x).slice(r[0], r[1]);
    }
    const a = axisOf(axis, x.dims.length), n = x.dims[a], r = pyRange(n, start, stop), m = r[1] - r[0];
    const outer = count(x.dims.slice(0, a)), inner = count(x.dims.slice(a + 1)), out = new Array(outer * m * inner);
    for (let o = 0; o < outer; o++) {
      for (let k = 0; k < m; k++) {
        for (let i = 0; i < inner; i++) out[(o * m + k) * inner + i] = x.data[(o * n + r[0] + k) * inner + i];
      }
    }
    const dims = x.dims.slice();
    dims[a] = m;
    return nd(dims, out);
  }

  function elementwise(x, f) {
    if (isNd(x)) return nd(x.dims.slice(), Array.from(x.data, f));
    if (Array.isArray(x)) return x.map(f);
    return f(x);
  }

  function nonzeroCoords(x) {  // [[i0, i1, ...] per nonzero entry], C order
    const out = [], dims = x.dims;
    for (let f = 0; f < x.data.length; f++) {
      if (!x.data[f]) continue;
      const c = new Array(dims.length);
      let r = f;
      for (let d = dims.length - 1; d >= 0; d--) { c[d] = r % dims[d]; r = Math.floor(r / dims[d]); }
      out.push(c);
    }
    return out;
  }

  // ---- Python's number formatting for the fields the figures use ({:.Nf}, {:.N%}) ----
  function pyFixed(x, digits) {
    if (Number.isNaN(x)) return "nan";
    if (!Number.isFinite(x)) return x > 0 ? "inf" : "-inf";
    const neg = x < 0 || Object.is(x, -0);
    const a = Math.abs(x);
    let s = a.toFixed(digits);  // exact decimal rounding, but a tie goes up; Python rounds it to even
    if (a < 1e21) {
      const exact = a.toFixed(100), dot = exact.indexOf(".");
      if (/^50*$/.test(exact.slice(dot + 1 + digits))) {
        const down = exact.slice(0, digits ? dot + 1 + digits : dot);
        if (Number(down.slice(-1)) % 2 === 0) s = down;
      }
    }
    return (neg ? "-" : "") + s;
  }
  const FIELD = /\{(?::\.(\d+)([f%]))?\}/g;
  function formatOne(fmt, values) {
    let i = 0;
    return fmt.replace(FIELD, function (_, digits, kind) {
      const v = values[i++];
      if (kind === undefined) return String(v);
      const n = Number(digits);
      return kind === "%" ? pyFixed(v * 100, n) + "%" : pyFixed(v, n);
    });
  }
  function format(fmt, args) {
    const lists = args.map(function (a) { return isNd(a) ? Array.from(a.data) : a; });
    const n = lists.reduce(function (m, a) { return Array.isArray(a) ? a.length : m; }, -1);
    if (n < 0) return formatOne(fmt, lists);
    const out = [];
    for (let r = 0; r < n; r++) {
      out.push(formatOne(fmt, lists.map(function (a) { return Array.isArray(a) ? a[r] : a; })));
    }
    return out;
  }

  // ---- the operations (tinytf/viz/binding.py OPS) ----
  const OPS = {
    axis_labels: function (labels) { return labels.map(function (lab, i) { return i + ": " + lab; }); },
    index: function (x, idx) {
      let off = 0, stride = count(x.dims);
      idx.forEach(function (i, k) {
        const d = x.dims[k];
        const j = i < 0 ? i + d : i;
        if (j < 0 || j >= d) throw new Error("index " + i + " out of range for a dimension of " + d);
        stride /= d;
        off += j * stride;
      });
      const dims = x.dims.slice(idx.length);
      if (!dims.length) return x.data[off];
      return nd(dims, x.data.slice(off, off + count(dims)));
    },
    mean: function (x, axis) {
      return reduce(x, axis, 0, function (s, v) { return s + v; }, function (s, n) { return s / n; });
    },
    norm: function (x, axis) {
      return reduce(x, axis, 0, function (s, v) { return s + v * v; }, function (s) { return Math.sqrt(s); });
    },
    all: function (x, axis) {
      return reduce(x, axis, true, function (s, v) { return s && !!v; }, function (s) { return s; });
    },
    isneginf: function (x) { return elementwise(x, function (v) { return v === -Infinity; }); },
    not: function (x) { return elementwise(x, function (v) { return !v; }); },
    where: function (m, a, b) {
      const pick = function (v, f) { return v === null ? NaN : (isNd(v) || Array.isArray(v) ? flat(v)[f] : v); };
      return nd(m.dims.slice(), Array.from(m.data, function (c, f) { return c ? pick(a, f) : pick(b, f); }));
    },
    frac_eq: function (x, c) {  // float32 share, as torch's mean of a float32 mask
      const d = flat(x);
      let k = 0;
      for (const v of d) if (v === c) k++;
      return Math.fround(k / d.length);
    },
    frac_abs_lt: function (x, c) {
      const d = flat(x), c32 = Math.fround(c);
      let k = 0;
      for (const v of d) if (Math.abs(Math.fround(v)) < c32) k++;
      return Math.fround(k / d.length);
    },
    frac_abs_lt_rms: function (x, c) {  // |x| < c * RMS(x), RMS over all entries (float64 sum)
      const d = flat(x);
      let ss = 0;
      for (const v of d) ss += Math.fround(v) * Math.fround(v);
      const c32 = Math.fround(c * (d.length ? Math.sqrt(ss / d.length) : 0));
      let k = 0;
      for (const v of d) if (Math.abs(Math.fround(v)) < c32) k++;
      return Math.fround(k / d.length);
    },
    symrange: function (xs) {
      let m = 0;
      for (const x of xs) {
        for (const v of (isNd(x) || Array.isArray(x) ? flat(x) : [x])) {
          if (Number.isFinite(v) && Math.abs(v) > m) m = Math.abs(v);
        }
      }
      return m > 0 ? m : 1.0;
    },
    neg: function (x) { return elementwise(x, function (v) { return -v; }); },
    affine: function (x, shift, scale, offset) {
      return elementwise(x, function (v) { return offset + (v + shift) * scale; });
    },
    nonzero: function (x, k) { return nonzeroCoords(x).map(function (c) { return c[k]; }); },
    select: function (x, m) {
      const out = [];
      for (let f = 0; f < m.data.length; f++) if (m.data[f]) out.push(x.data[f]);
      return out;
    },
    take: function (lst, idx) { return Array.from(idx, function (i) { return lst[i < 0 ? i + lst.length : i]; }); },
    item: function (lst, i) { return lst[i < 0 ? i + lst.length : i]; },
    tolist: function (x) { return isNd(x) ? toNested(x) : Array.from(x); },
    list: function (xs) { return xs.slice(); },
    concat: function (ls) { return [].concat.apply([], ls); },
    repeat: function (lst, n) { let out = []; for (let i = 0; i < n; i++) out = out.concat(lst); return out; },
    format: format,
    softmax: function (x, axis) { return lanes(x, axis, laneSoftmax); },
    max: function (x, axis) { return lanes(x, axis, function (v) { return v[laneArgmax(v)]; }); },
    argmax: function (x, axis) { return lanes(x, axis, laneArgmax); },
    slice: sliceAxis,
    lookup: function (table, idx) { return elementwise(idx, function (i) { return table[i]; }); },
    relabel: function (lst, mapping) {
      return elementwise(lst, function (v) { return Object.prototype.hasOwnProperty.call(mapping, v) ? mapping[v] : v; });
    },
    fill: function (lst, v) { return Array.from({ length: isNd(lst) ? lst.dims[0] : lst.length }, function () { return v; }); },
    len: function (lst) { return isNd(lst) ? lst.dims[0] : lst.length; },
    at_most: function (x, c, a, b) { return x <= c ? a : b; },
  };

  function toNested(x) {
    if (x.dims.length === 1) return Array.from(x.data);
    const inner = count(x.dims.slice(1)), out = [];
    for (let i = 0; i < x.dims[0]; i++) {
      out.push(toNested(nd(x.dims.slice(1), x.data.slice(i * inner, (i + 1) * inner))));
    }
    return out;
  }

  function isRecipe(r) { return Array.isArray(r) && r.length > 0 && typeof r[0] === "string"; }

  function evaluator(outputs, labels) {
    const memo = new Map();
    function ev(r) {
      if (!isRecipe(r)) return Array.isArray(r) ? r.map(ev) : r;
      const key = JSON.stringify(r);
      if (memo.has(key)) return memo.get(key);
      const name = r[0], args = r.slice(1);
      let v;
      if (name === "out") {
        const t = outputs[args[0]];
        if (!t) throw new Error("the model outputs have no " + JSON.stringify(args[0]) + " (the figure needs it)");
        v = nd(Array.from(t.dims), Float64Array.from(t.data));
      } else if (name === "labels") {
        v = Array.from(labels);
      } else if (name === "const") {
        v = args[0];
      } else if (Object.prototype.hasOwnProperty.call(OPS, name)) {
        v = OPS[name].apply(null, args.map(ev));
      } else {
        throw new Error("unknown binding operation " + JSON.stringify(name));
      }
      memo.set(key, v);
      return v;
    }
    return ev;
  }

  // a value as plotly JSON: arrays nested, NaN and +-Infinity as null (a gap), as Python's JSON has them
  function toPlain(v) {
    if (isNd(v)) return toPlain(toNested(v));
    if (Array.isArray(v)) return v.map(toPlain);
    if (typeof v === "number" && !Number.isFinite(v)) return null;
    return v;
  }

  function setPath(obj, path, value) {
    let node = obj;
    for (let i = 0; i < path.length - 1; i++) node = node[path[i]];
    node[path[path.length - 1]] = value;
  }

  function apply(template, outputs, labels) {
    const T = template.T;
    if (T !== undefined && labels.length !== T) {
      throw new Error("this template is for " + T + " tokens; got " + labels.length + " labels");
    }
    const fig = JSON.parse(JSON.stringify(template.figure));
    const ev = evaluator(outputs, labels);
    for (const [path, recipe] of template.bindings) setPath(fig, path, toPlain(ev(recipe)));
    return fig;
  }

  // ---- token labels: tinytf's byte labels (shipped as a table), characters of several bytes numbered ----
  const SUPERSCRIPT = "⁰¹²³⁴⁵⁶⁷⁸⁹";
  function tokenize(text, byteLabels) {
    const enc = new TextEncoder(), ids = [], labels = [];
    for (const ch of text) {  // code points, as Python iterates a str
      const bytes = enc.encode(ch);
      bytes.forEach(function (b, j) {
        ids.push(b);
        if (bytes.length === 1) labels.push(byteLabels[b]);
        else labels.push(ch + String(j + 1).replace(/[0-9]/g, function (d) { return SUPERSCRIPT[Number(d)]; }));
      });
    }
    return { ids: ids, labels: labels };
  }

  // a template file, gzip or plain JSON (a server may already have undone the gzip: the bytes decide)
  async function loadJSON(url) {
    const res = await fetch(url);
    if (!res.ok) throw new Error(url + ": HTTP " + res.status);
    let bytes = new Uint8Array(await res.arrayBuffer());
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
      if (typeof DecompressionStream === "undefined") throw new Error("this browser cannot read gzip files");
      const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      bytes = new Uint8Array(await new Response(stream).arrayBuffer());
    }
    return JSON.parse(new TextDecoder().decode(bytes));
  }

  const api = { apply: apply, tokenize: tokenize, loadJSON: loadJSON, ops: OPS, pyFixed: pyFixed, format: format };
  if (typeof window !== "undefined") window.tinytfBind = api;
  if (typeof globalThis !== "undefined") globalThis.tinytfBind = api;
})();

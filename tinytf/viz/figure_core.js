// tinytf's figure core: the one piece of browser code that draws a figure of tinytf.viz (served locally,
// no network). One source, three users:
//
// * the HTML book: scripts/book_offline.py serves this file as _static/tinytf-core.js on every page;
//   loaded as a classic script it also answers to window.tinytfFigures, which the inline script of each
//   figure output calls (tinytf.viz.render);
// * the book's static panel (_static/tinytf-panel.js): draws and updates its figure with draw / update
//   and serialises its model runs with queue;
// * the live widget in JupyterLab (tinytf/viz/figure_view.js): FigureView's ES module is this file
//   followed by figure_view.js (tinytf.viz.figure_view); it draws with draw, redraws with update (on the
//   reader's step) and serialises its redraws with queue, so it shows the same HTML controls as the book.
//
// What the book's drawing does:
//
// * the title moves out of the SVG into an HTML caption above the figure, which wraps on any
//   screen (a plotly title never wraps); an animated figure's caption follows its frame;
// * the figure reflows to the width it gets: when a subplot would be narrower than MIN_SUBPLOT px,
//   the subplots stack into one column (each keeps its pixel height), annotations and colour bars
//   move with their subplot, legends go below the plot, long axis and subplot titles wrap;
// * the colours follow the page's light / dark mode (transparent backgrounds, text, grid and line
//   colours from the theme's CSS variables), redrawn with Plotly.react when the reader switches (the
//   book's data-theme, or JupyterLab's light / dark theme for the live widget);
// * an animated figure gets HTML controls bound to plotly's animation (a Play/Pause button,
//   previous / next buttons and a range input: Tab reaches them, Space / Enter press them, the
//   arrow keys step), in place of plotly's SVG slider and buttons, which a keyboard cannot reach;
// * every figure has a text alternative: role="figure", named by its caption and described by a
//   text (under "Describe this figure") generated from the numbers it draws; the SVG itself is
//   hidden from screen readers (read aloud it is every label run together);
// * the plotly toolbar is left out (the book's figures have nothing to zoom; it was 4 Tab stops a figure).
//
// What every user shares: frame merging (figureAt, mergeFrame: what Plotly.animate does), the steps of
// an animation (steps, stepFrame), and the redraw queue (queue: one run at a time, the latest request wins).
var tinytfCore = (function () {
  "use strict";
  var MIN_SUBPLOT = 130;      // px: narrower subplots make the figure stack its subplots
  var SPLIT_GAP = 30;         // px between stacked subplots, plus the room their titles need
  var figures = [];
  var serial = 0;

  // ------------------------------------------------------------------ words
  // Every word the core writes goes through tr(english, values). The page may give translations as
  // window.tinytfStrings (English -> translation: the Chinese edition's pages do, from the figure catalogue,
  // into which scripts/figure_strings.py extracts the English text of every tr call here); without it, English.
  // {name} is filled from values.
  function tr(text, values) {
    var T = typeof window !== "undefined" ? window.tinytfStrings : null;
    var s = T && Object.prototype.hasOwnProperty.call(T, text) ? T[text] : text;
    return !values ? s : s.replace(/\{(\w+)\}/g, function (m, k) { return k in values ? String(values[k]) : m; });
  }
  // CJK characters: as wide as the font is high (the 0.6 of a Latin letter would underestimate them), and a
  // line of them may break between any two
  var CJK = /[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]/;

  // ------------------------------------------------------------------ theme
  function cssVar(name, fallback) {
    var v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return v || fallback;
  }
  // dark: the book's data-theme="dark" on <html>; in JupyterLab (no data-theme) a dark Lab theme, which
  // marks <body> data-jp-theme-light="false"
  function isDark() {
    var mode = document.documentElement.getAttribute("data-theme");
    if (mode) { return mode === "dark"; }
    return !!document.body && document.body.getAttribute("data-jp-theme-light") === "false";
  }
  function theme() {
    var dark = isDark();
    return {
      dark: dark,
      text: cssVar("--pst-color-text-base", dark ? "#ced6dd" : "#222832"),
      muted: cssVar("--pst-color-text-muted", dark ? "#9ca4af" : "#48566b"),
      grid: dark ? "rgba(255,255,255,0.14)" : "rgba(0,0,0,0.10)",
      line: dark ? "rgba(255,255,255,0.45)" : "rgba(0,0,0,0.45)",
      background: cssVar("--pst-color-background", dark ? "#121212" : "#ffffff")
    };
  }
  function isGrey(c) {  // "#333", "#4d4d4d", "rgb(85,85,85)", "black", "#2a3f5f" (plotly's default text)
    if (typeof c !== "string") { return false; }
    c = c.trim().toLowerCase();
    if (c === "black" || c === "#2a3f5f" || c === "#222" || c === "#000" || c === "#000000") { return true; }
    var m = /^#([0-9a-f])([0-9a-f])([0-9a-f])$/.exec(c);
    if (m) { return m[1] === m[2] && m[2] === m[3]; }
    m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/.exec(c);
    if (m) { return m[1] === m[2] && m[2] === m[3]; }
    m = /^rgb\((\d+),\s*(\d+),\s*(\d+)\)$/.exec(c);
    return !!m && m[1] === m[2] && m[2] === m[3];
  }
  // every text colour becomes the theme's text colour; grey lines and marker outlines the theme's
  // line colour (heatmap colour scales and the data colours are left alone)
  function recolour(obj, th, key) {
    if (Array.isArray(obj)) { obj.forEach(function (v) { recolour(v, th, key); }); return; }
    if (!obj || typeof obj !== "object" || obj.bdata) { return; }
    Object.keys(obj).forEach(function (k) {
      var v = obj[k];
      if (k === "font" || k === "textfont" || k === "tickfont" || k === "insidetextfont" || k === "outsidetextfont") {
        if (v && typeof v === "object") { v.color = th.text; }
      } else if (k === "line" && v && typeof v === "object" && isGrey(v.color) && key !== "shape") {
        v.color = th.line;
      } else if (k === "colorscale" || k === "z" || k === "x" || k === "y" || k === "customdata") {
        return;
      } else if (v && typeof v === "object") {
        recolour(v, th, k);
      }
    });
  }
  function applyTheme(f, th) {
    var L = f.layout;
    L.paper_bgcolor = "rgba(0,0,0,0)";
    L.plot_bgcolor = "rgba(0,0,0,0)";
    L.font = Object.assign({}, L.font || {}, { color: th.text });
    // the template's own colours (plotly_white: white grid lines, blue-grey text) must not win
    if (L.template && L.template.layout) {
      L.template = { data: L.template.data, layout: Object.assign({}, L.template.layout, {
        paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: th.text } }) };
      ["xaxis", "yaxis"].forEach(function (a) { delete L.template.layout[a]; });
      delete L.template.layout.annotationdefaults;
    }
    axisNames(L).forEach(function (name) {
      var ax = L[name];
      ax.gridcolor = th.grid; ax.zerolinecolor = th.grid; ax.tickcolor = th.line;
      if (ax.ticks == null) { ax.ticks = ""; }  // as in plotly_white: no tick marks (empty subplots showed them)
      if (ax.showline) { ax.linecolor = th.line; }  // set on an axis without a line, plotly draws one at NaN
    });
    // text drawn on a filled box (a block diagram) keeps the dark colour that box was made for
    var boxes = (L.shapes || []).filter(function (sh) {
      return (sh.type === "rect" || sh.type === "circle") && sh.fillcolor && !/^(rgba\(.*,\s*0\)|transparent|none)$/.test(sh.fillcolor);
    });
    var onBox = function (a) {
      if (a.bgcolor && !/^(rgba\(.*,\s*0\)|transparent)$/.test(a.bgcolor)) { return true; }
      return boxes.some(function (sh) {
        return (sh.xref || "x") === (a.xref || "x") && (sh.yref || "y") === (a.yref || "y") &&
          a.x >= Math.min(sh.x0, sh.x1) && a.x <= Math.max(sh.x0, sh.x1) &&
          a.y >= Math.min(sh.y0, sh.y1) && a.y <= Math.max(sh.y0, sh.y1);
      });
    };
    (L.annotations || []).forEach(function (a) {
      if (isGrey(a.arrowcolor) || (a.showarrow && !a.arrowcolor)) { a.arrowcolor = th.line; }
      if (onBox(a) && a.text) {
        a.font = Object.assign({}, a.font || {});
        if (!a.font.color || !isGrey(a.font.color)) { a.font.color = a.font.color || "#1b1b1b"; }
        a._keep = true;
      }
    });
    recolour((L.annotations || []).filter(function (a) { return !a._keep; }), th, "annotations");
    (L.annotations || []).forEach(function (a) { delete a._keep; });
    recolour(L.shapes, th, "shape");
    ["legend", "coloraxis", "coloraxis2", "coloraxis3", "coloraxis4"].forEach(function (k) {
      if (L[k]) { recolour(L[k], th, k); }
    });
    if (L.legend) { L.legend.bgcolor = "rgba(0,0,0,0)"; L.legend.font = Object.assign({}, L.legend.font, { color: th.text }); }
    f.data.forEach(function (t) { recolour(t, th, "trace"); });
    (f.frames || []).forEach(function (fr) {
      recolour(fr.data, th, "trace");
      if (fr.layout) { recolour(fr.layout.annotations, th, "annotations"); recolour(fr.layout.shapes, th, "shape"); }
    });
  }

  // ------------------------------------------------------------------ geometry helpers
  function axisNames(L) {
    return Object.keys(L).filter(function (k) { return /^[xy]axis\d*$/.test(k); });
  }
  function axisKey(ref) {  // "x2" -> "xaxis2"
    return ref.charAt(0) + "axis" + ref.slice(1);
  }
  function stripTags(s) {
    return String(s == null ? "" : s).replace(/<br\s*\/?>/gi, " ").replace(/<[^>]+>/g, "")
      .replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&").replace(/\s+/g, " ").trim();
  }
  function lineCount(s) { return String(s || "").split(/<br\s*\/?>/i).length; }
  function textWidth(s, size) {
    var t = stripTags(s), wide = (t.match(new RegExp(CJK.source, "g")) || []).length;
    return (t.length - wide) * size * 0.6 + wide * size;
  }
  // insert <br> so that no line of a plotly text is wider than maxPx (estimated)
  function wrap(s, maxPx, size) {
    if (typeof s !== "string" || maxPx <= 0) { return s; }
    return s.split(/<br\s*\/?>/i).map(function (line) {
      if (textWidth(line, size) <= maxPx || /<[^b\/]/.test(line)) { return line; }
      var cjk = CJK.test(line), out = [], cur = "";
      var words = cjk ? line.match(new RegExp("<\\/?b>|" + CJK.source + "|[^\\s<\\u2e80-\\u9fff\\uf900-\\ufaff\\uff00-\\uffef]+|\\s+", "g"))
        : line.split(" ");
      words.forEach(function (w) {
        var next = cur ? cur + (cjk ? "" : " ") + w : w;
        if (cur && textWidth(next, size) > maxPx) { out.push(cur); cur = w; } else { cur = next; }
      });
      if (cur) { out.push(cur); }
      return fixBold(out).join("<br>");
    }).join("<br>");
  }
  function fixBold(lines) {  // keep <b>...</b> balanced on every wrapped line
    var open = false;
    return lines.map(function (l) {
      var s = (open ? "<b>" : "") + l;
      var o = (s.match(/<b>/g) || []).length, c = (s.match(/<\/b>/g) || []).length;
      open = o > c;
      return open ? s + "</b>" : s;
    });
  }

  function subplotsOf(f) {
    var L = f.layout, seen = {}, list = [];
    f.data.forEach(function (t) {
      var xr = t.xaxis || "x", yr = t.yaxis || "y", key = xr + yr;
      if (seen[key] || t.type === "pie") { return; }
      // a subplot whose traces are all hidden is not laid out (a step of an animation that leaves it empty)
      if (t.visible === false && !f.data.some(function (o) {
        return o.visible !== false && (o.xaxis || "x") + (o.yaxis || "y") === key;
      })) { return; }
      var xa = L[axisKey(xr)] || (L[axisKey(xr)] = {}), ya = L[axisKey(yr)] || (L[axisKey(yr)] = {});
      seen[key] = true;
      list.push({ key: key, xr: xr, yr: yr, xa: xa, ya: ya, x: (xa.domain || [0, 1]).slice(),
                  y: (ya.domain || [0, 1]).slice() });
    });
    return list;
  }
  function hasColorbar(f) {
    var L = f.layout, any = false;
    Object.keys(L).forEach(function (k) {
      if (/^coloraxis\d*$/.test(k) && L[k].showscale !== false) { any = true; }
    });
    f.data.forEach(function (t) {
      if (!t.coloraxis && (t.type === "heatmap" && t.showscale !== false)) { any = true; }
      if (t.marker && t.marker.showscale) { any = true; }
    });
    return any;
  }
  function colorbars(f) {  // every colour bar object, created where missing so it can be placed
    var L = f.layout, bars = [];
    Object.keys(L).forEach(function (k) {
      if (/^coloraxis\d*$/.test(k) && L[k].showscale !== false) { bars.push(L[k].colorbar || (L[k].colorbar = {})); }
    });
    f.data.forEach(function (t) {
      if (t.type === "heatmap" && !t.coloraxis && t.showscale !== false) { bars.push(t.colorbar || (t.colorbar = {})); }
      if (t.marker && t.marker.showscale) { bars.push(t.marker.colorbar || (t.marker.colorbar = {})); }
    });
    return bars;
  }

  // ------------------------------------------------------------------ reflow
  var NARROW = 600;  // px: below this every figure is laid out as one column
  function legendEntries(f) {
    return f.data.filter(function (t) {
      return t.showlegend !== false && t.name && t.type !== "heatmap" && !(t.type === "scatter" && t.showlegend == null &&
        f.data.length === 1);
    });
  }
  function legendWidth(f, size) {
    var w = 0;
    legendEntries(f).forEach(function (t) {
      w += Math.max.apply(null, String(t.name).split(/<br\s*\/?>/i).map(function (l) { return textWidth(l, size); })) + 50;
    });
    return w;
  }
  var TICK_FLOOR = 8;        // px: upright tick labels shrink to this font size, then every k-th is shown
  var TICK_LINE = 1.3;       // an upright label's width (1.1 px per px of font size) with a gap, per px of size
  // px under a subplot for its x tick labels: turned upright when they collide; upright labels that still
  // do not fit one per column get a smaller font (down to TICK_FLOOR) and then only every k-th is shown
  function tickRoom(f, s, width) {
    if (s.xa.showticklabels === false || s.xa.visible === false) { return 6; }
    var size = (s.xa.tickfont && s.xa.tickfont.size) || (f.layout.font && f.layout.font.size) || 12;
    var uniq = axisLabels(f, s, "x");
    if (!uniq.length) { return size + 14; }
    var longest = function (sz) { return Math.max.apply(null, uniq.map(function (v) { return textWidth(v, sz); })); };
    if (uniq.length * (longest(size) + 8) <= width) { return size + 14; }
    s.xa.tickangle = -90;  // crowded labels stand upright (plotly's own choice of angle can still collide)
    var column = tickColumn(s, uniq.length, width);  // px from one tick to the next
    // upright array ticks (every one drawn) that touch: a smaller font, then fewer labels (with automatic
    // ticks plotly itself draws only as many category labels as fit)
    if (s.xa.tickmode === "array" && Array.isArray(s.xa.tickvals) && size * TICK_LINE > column) {
      size = Math.max(TICK_FLOOR, Math.floor(column / TICK_LINE));
      s.xa.tickfont = Object.assign({}, s.xa.tickfont || {}, { size: size });
      if (size * TICK_LINE > column) { thinTicks(f, s, Math.ceil(size * TICK_LINE / column)); }
    }
    return Math.min(longest(size), 120) + size + 10;
  }
  // The tick labels subplot s may draw on its x or y axis (`letter`), one rule for both: where the axis has array
  // ticks (its own ticktext or a frame's), what is drawn is their text, on every frame; otherwise its category
  // labels: the string values of its traces in the figure and in every frame (a frame's trace j updates the
  // figure's trace frame.traces[j], or trace j) and its category array. Each label once, in order of appearance.
  // The room under (x) or left of (y) a subplot is sized for all of them, not only for frame 0's.
  function axisLabels(f, s, letter) {
    var ref = letter === "x" ? s.xr : s.yr, ax = letter === "x" ? s.xa : s.ya, key = axisKey(ref);
    var seen = {}, labels = [];
    var add = function (a) {
      if (!Array.isArray(a)) { return; }
      a.forEach(function (v) {
        if (typeof v === "string" && !seen.hasOwnProperty(v)) { seen[v] = true; labels.push(v); }
      });
    };
    var ticked = function (a) { return a && Array.isArray(a.ticktext) && a.ticktext.length > 0; };
    var frameAxes = (f.frames || []).map(function (fr) { return fr.layout && fr.layout[key]; });
    if (ticked(ax) || frameAxes.some(ticked)) {
      [ax].concat(frameAxes).forEach(function (a) { if (ticked(a)) { add(a.ticktext.map(String)); } });
      return labels;
    }
    [{ data: f.data }].concat(f.frames || []).forEach(function (fr) {
      (fr.data || []).forEach(function (t, j) {
        var k = Array.isArray(fr.traces) ? fr.traces[j] : j, base = f.data[k] || {};
        if ((t[letter + "axis"] || base[letter + "axis"] || letter) === ref) { add(t[letter]); }
      });
    });
    add(ax.categoryarray);
    return labels;
  }
  // px between neighbouring ticks: array ticks on a numeric range from their values, else one per label
  function tickColumn(s, n, width) {
    var vals = Array.isArray(s.xa.tickvals) ? s.xa.tickvals.filter(function (v) { return typeof v === "number"; }) : [];
    var r = s.xa.range;
    if (vals.length > 1 && Array.isArray(r) && typeof r[0] === "number" && r[1] !== r[0]) {
      vals = vals.slice().sort(function (a, b) { return a - b; });
      var step = Infinity;
      for (var i = 1; i < vals.length; i++) { if (vals[i] > vals[i - 1]) { step = Math.min(step, vals[i] - vals[i - 1]); } }
      return step * width / Math.abs(r[1] - r[0]);
    }
    return width / Math.max(n, 1);
  }
  // show every k-th array tick of subplot s, thinned alike on the figure and on every frame (a frame that
  // carries its own ticktext or tickvals keeps them in step with the figure's)
  function thinTicks(f, s, k) {
    var keep = function (v, i) { return i % k === 0; }, key = axisKey(s.xr);
    [s.xa].concat((f.frames || []).map(function (fr) { return fr.layout && fr.layout[key]; })).forEach(function (ax) {
      if (!ax) { return; }
      if (Array.isArray(ax.tickvals)) { ax.tickvals = ax.tickvals.filter(keep); }
      if (Array.isArray(ax.ticktext)) { ax.ticktext = ax.ticktext.filter(keep); }
    });
  }
  // Lay the subplots out again in lines, in reading order: on a narrow screen (`force`) one per
  // line, full width; otherwise as many side by side as fit at MIN_SUBPLOT px or more (never more
  // than the figure had). Each subplot keeps its pixel height; the room above and below it is
  // computed from what is drawn there (titles, turned tick labels, axis titles), so nothing collides.
  // Annotations, colour bars and legends move with their subplot. Returns false when the figure
  // is left as it is (it has no subplots, or nothing needs to change). The steps share one record
  // `c` (the figure, its sizes in px, its subplots); each step adds what the next ones need.
  function reflow(f, width, force) {
    var c = reflowPlan(f, width, force);
    if (!c) { return false; }
    layoutLines(c);
    roomAround(c);
    stackLines(c);
    moveAnnotations(c);
    setDomains(c);
    placeColorbars(c);
    placeLegend(c);
    return true;
  }
  // the figure's sizes and subplots, or null when its layout stays
  function reflowPlan(f, width, force) {
    var L = f.layout, m = L.margin;
    var plotW = width - m.l - m.r;
    var H = L.height || 450, plotH = H - m.t - m.b;
    var subs = subplotsOf(f);
    if (!subs.length) { return null; }
    var bars = colorbars(f);
    var right = 1;
    bars.forEach(function (cb) {
      var x = cb.x == null ? 1.02 : cb.x;
      if (x < 1) { right = Math.min(right, x - 0.01); }
    });
    var irregular = markStacks(subs);
    // side by side in the figure as it was: the most subplots sharing one band of height
    var perRow = 1;
    subs.forEach(function (s) {
      var n = subs.filter(function (o) { return o.y[0] < s.y[1] - 1e-6 && o.y[1] > s.y[0] + 1e-6; }).length;
      perRow = Math.max(perRow, n);
    });
    var tooNarrow = subs.some(function (s) { return (s.x[1] - s.x[0]) * plotW < MIN_SUBPLOT - 0.5; });
    if (!force && irregular && !tooNarrow) { return null; }
    subs.sort(function (a, b) { return (b.order - a.order) || (a.x[0] - b.x[0]); });
    // layout.meta.tinytf.toScale: one subplot per line, each as wide, relative to the widest, as drawn
    var toScale = !!(L.meta && L.meta.tinytf && L.meta.tinytf.toScale);
    return { f: f, L: L, m: m, width: width, force: force, plotW: plotW, plotH: plotH, subs: subs, bars: bars,
             avail: plotW * right, irregular: irregular, perRow: perRow, textSize: (L.font && L.font.size) || 12,
             toScale: toScale };
  }
  // each subplot's reading order and whether it spans a stack beside it; true when the subplots
  // cannot form a grid (shared x axes, as the stepper's rows, or subplots beside a stack)
  function markStacks(subs) {
    var xUse = {};
    subs.forEach(function (s) { xUse[s.xr] = (xUse[s.xr] || 0) + 1; });
    var shared = subs.some(function (s) { return xUse[s.xr] > 1; });
    subs.forEach(function (s) {
      var tops = {};  // the subplots beside s within its height, by their top: two or more = a stack
      subs.forEach(function (o) {
        if (o !== s && o.y[0] >= s.y[0] - 1e-6 && o.y[1] <= s.y[1] + 1e-6 && (o.x[1] <= s.x[0] || o.x[0] >= s.x[1])) {
          tops[o.y[1].toFixed(4)] = true;
        }
      });
      s.spans = Object.keys(tops).length >= 2;
      s.order = s.spans ? s.y[0] + 1e-3 : s.y[1];
      s.wide = (s.x[1] - s.x[0]) >= 0.6;
    });
    return shared || subs.some(function (s) { return s.spans; });
  }
  function yRoom(f, s, textSize) {  // px left of a subplot for its y tick labels and title
    var room = 10;
    if (s.ya.showticklabels !== false && s.ya.visible !== false) {
      var labels = axisLabels(f, s, "y");
      var size = (s.ya.tickfont && s.ya.tickfont.size) || textSize;
      room += labels.length ? Math.min(120, Math.max.apply(null, labels.map(function (v) { return textWidth(v, size); })))
                            : 3 * size;
    }
    var yt = s.ya.title && (typeof s.ya.title === "string" ? s.ya.title : s.ya.title.text);
    if (yt) { room += 20; }
    return room;
  }
  // c.lines: the subplots in lines of at most c.cols; each subplot's new x (newX0, newW in px)
  function layoutLines(c) {
    var gap = 16, cols = 1, L = c.L, plotW = c.plotW, avail = c.avail;
    c.subs.forEach(function (s) { gap = Math.max(gap, yRoom(c.f, s, c.textSize)); });
    if (!c.force && !c.irregular && !c.toScale) {
      cols = Math.max(1, Math.min(c.perRow, Math.floor((avail + gap) / (MIN_SUBPLOT + gap))));
    }
    var widest = c.subs.reduce(function (a, s) { return s.x[1] - s.x[0] > a.x[1] - a.x[0] ? s : a; }, c.subs[0]);
    var scaleW = widest.x[1] - widest.x[0];
    var lines = [], line = [];
    c.subs.forEach(function (s) {
      if (s.wide || cols === 1) {
        if (line.length) { lines.push(line); line = []; }
        lines.push([s]);
        return;
      }
      line.push(s);
      if (line.length === cols) { lines.push(line); line = []; }
    });
    if (line.length) { lines.push(line); }
    var cellW = cols > 1 ? (avail - (cols - 1) * gap) / cols : avail;
    lines.forEach(function (ln) {
      ln.forEach(function (s, j) {
        var pxW = (s.x[1] - s.x[0]) * plotW;
        s.pxH = (s.y[1] - s.y[0]) * c.plotH;
        if (ln.length === 1 && c.toScale) {  // drawn to scale: widths and offsets relative to the widest
          s.newX0 = avail * (s.x[0] - widest.x[0]) / scaleW; s.newW = avail * (s.x[1] - s.x[0]) / scaleW;
        } else if (ln.length === 1 && (s.wide || cols === 1)) {
          s.newX0 = 0; s.newW = avail;
          if (s.xa.visible === false && pxW < MIN_SUBPLOT) { s.newW = Math.min(avail, Math.max(MIN_SUBPLOT * 1.3, 2 * pxW)); }
          if (!c.force && s.wide) {
            // a wide subplot keeps its width; it keeps its place only when nothing stood beside it: once its
            // neighbours move to lines of their own it starts at the left edge (kept at x = 0.32 it hung
            // diagonally below a narrow panel that had stood on its left)
            var beside = c.subs.some(function (o) {
              return o !== s && o.y[0] < s.y[1] - 1e-6 && o.y[1] > s.y[0] + 1e-6 && (o.x[1] <= s.x[0] + 1e-6 || o.x[0] >= s.x[1] - 1e-6);
            });
            s.newX0 = beside ? 0 : s.x[0] * plotW; s.newW = Math.min(avail - s.newX0, pxW);
          }
        } else {
          s.newX0 = j * (cellW + gap); s.newW = cellW;
        }
        var ya = L[axisKey(s.yr)];
        if (!c.irregular && j === 0 && ya.showticklabels === false && ya.type === "category" && ya.visible !== false) {
          ya.showticklabels = true;
        }
      });
    });
    c.lines = lines;
  }
  function titleOf(t) { return t && (typeof t === "string" ? t : t.text); }
  // the room above (s.above) and below (s.below) each subplot: tick labels, wrapped axis titles and the
  // annotations that belong to it (c.annotations, each with its owner a._owner: the figure's and its frames')
  function roomAround(c) {
    var f = c.f;
    c.annotations = [].concat.apply(c.L.annotations || [], (f.frames || []).map(function (fr) {
      return (fr.layout && fr.layout.annotations) || [];
    }));
    c.subs.forEach(function (s) {
      s.above = 0;
      s.below = tickRoom(f, s, s.newW);
      var xt = titleOf(s.xa.title);
      if (xt) {
        s.xa.title = Object.assign({}, typeof s.xa.title === "string" ? { text: xt } : s.xa.title);
        s.xa.title.text = wrap(xt, s.newW, c.textSize);
        s.xa.title.standoff = 4;
        s.below += 17 * lineCount(s.xa.title.text) + 6;
      }
      var yt = titleOf(s.ya.title);
      if (yt) {
        s.ya.title = Object.assign({}, typeof s.ya.title === "string" ? { text: yt } : s.ya.title);
        s.ya.title.text = wrap(yt, Math.max(s.pxH, 60), c.textSize);
      }
    });
    c.annotations.forEach(function (a) {
      if ((a.yref || "paper") !== "paper") { return; }
      var s = owner(c.subs, a);
      a._owner = s;
      if (!s || !a.text) { return; }
      var size = (a.font && a.font.size) || c.textSize;
      if ((a.xref || "paper") === "paper" && a.x >= s.x[0] - 0.02 && a.x <= s.x[1] + 0.02) {
        a.text = wrap(a.text, c.toScale ? c.avail : s.newW, size);  // (to scale: a title may be wider than its panel)
      }
      var h = lineCount(a.text) * size * 1.3 + 4;
      var y = a.y == null ? 0.5 : a.y;
      if (y >= s.y[1] - 1e-6 && a.yanchor === "bottom") { s.above = Math.max(s.above, (y - s.y[1]) * c.plotH + h); }
      if (y <= s.y[0] + 1e-6 && a.yanchor === "top") { s.below = Math.max(s.below, (s.y[0] - y) * c.plotH + h); }
    });
  }
  function owner(subs, a) {  // the subplot an annotation in paper coordinates belongs to (nearest in height)
    var xref = a.xref || "paper", best = null, bestD = 1e9;
    subs.forEach(function (s) {
      if (xref !== "paper" && s.xr !== xref) { return; }
      if (xref === "paper" && (a.x < s.x[0] - 0.02 || a.x > s.x[1] + 0.02)) { return; }
      var y = a.y == null ? 0.5 : a.y;
      var d = y > s.y[1] ? y - s.y[1] : (y < s.y[0] ? s.y[0] - y : 0);
      if (d < bestD) { bestD = d; best = s; }
    });
    return bestD <= 0.25 ? best : null;
  }
  // vertical layout, in pixels from the top of the plot area: a line is as tall as its tallest subplot
  function stackLines(c) {
    var top = 0;
    c.lines.forEach(function (ln, i) {
      var above = Math.max.apply(null, ln.map(function (s) { return s.above; }));
      var h = Math.max.apply(null, ln.map(function (s) { return s.pxH; }));
      var below = Math.max.apply(null, ln.map(function (s) { return s.below; }));
      top += i === 0 ? above : Math.max(SPLIT_GAP, above + 16);
      ln.forEach(function (s) { s.newTop = top; });
      top += h + below;
    });
    c.newPlotH = top;
  }
  function mapY(c, s, y) {  // paper y of the old layout -> paper y of the new one, pixel offsets kept
    var px;
    if (y > s.y[1]) { px = s.newTop - (y - s.y[1]) * c.plotH; }
    else if (y < s.y[0]) { px = s.newTop + s.pxH + (s.y[0] - y) * c.plotH; }
    else { px = s.newTop + (s.y[1] - y) / (s.y[1] - s.y[0] || 1) * s.pxH; }
    return 1 - px / c.newPlotH;
  }
  function mapX(c, s, x) {
    return (s.newX0 + (x - s.x[0]) / ((s.x[1] - s.x[0]) || 1) * s.newW) / c.plotW;
  }
  // annotations follow their subplot (those of none are hidden); shapes placed on the paper are hidden
  function moveAnnotations(c) {
    var plotW = c.plotW;
    c.annotations.forEach(function (a) {
      var s = a._owner;
      delete a._owner;
      if ((a.yref || "paper") !== "paper") { return; }
      if (!s) { if ((a.xref || "paper") === "paper") { a.visible = false; } return; }
      a.y = mapY(c, s, a.y == null ? 0.5 : a.y);
      if ((a.xref || "paper") === "paper") {
        if (a.x < s.x[0] - 1e-6 || a.x > s.x[1] + 1e-6) {  // an operator between panels: kept only between
          var next = c.subs.filter(function (o) { return o.x[0] >= s.x[1] - 1e-6 && o.newTop === s.newTop; })[0];
          if (next && a.x > s.x[1]) { a.x = (s.newX0 + s.newW + next.newX0) / 2 / plotW; } else { a.visible = false; }
        } else { a.x = mapX(c, s, a.x); }
      }
    });
    [].concat.apply(c.L.shapes || [], (c.f.frames || []).map(function (fr) {
      return (fr.layout && fr.layout.shapes) || [];
    })).forEach(function (sh) {
      if (sh.yref === "paper") { sh.visible = false; }
    });
  }
  function setDomains(c) {
    var done = {}, L = c.L;
    c.subs.forEach(function (s) {
      var y0 = 1 - (s.newTop + s.pxH) / c.newPlotH, y1 = 1 - s.newTop / c.newPlotH;
      var xk = axisKey(s.xr), yk = axisKey(s.yr);
      if (!done[xk]) { L[xk].domain = [s.newX0 / c.plotW, Math.min(1, (s.newX0 + s.newW) / c.plotW)]; done[xk] = true; }
      L[yk].domain = [Math.max(0, y0), Math.min(1, y1)];
    });
  }
  // colour bars keep their pixel length and sit beside the subplot they were beside
  function placeColorbars(c) {
    c.bars.forEach(function (cb) {
      var y = cb.y == null ? 0.5 : cb.y, len = cb.len == null ? 1 : cb.len;
      if (cb.lenmode === "pixels") { len = len / c.plotH; }
      var best = null, bestD = 1e9;
      c.subs.forEach(function (s) {
        var d = Math.abs((s.y[0] + s.y[1]) / 2 - y);
        if (d < bestD) { bestD = d; best = s; }
      });
      if (best) {
        cb.y = mapY(c, best, Math.min(Math.max(y, best.y[0]), best.y[1]));
        cb.yanchor = "middle";
        cb.len = Math.min(len * c.plotH, Math.max(best.pxH, 100)); cb.lenmode = "pixels";
      }
    });
  }
  // the legend goes under the plot, in rows; the figure's height follows
  function placeLegend(c) {
    var L = c.L, m = c.m, legendH = 0;
    if (L.showlegend !== false && legendEntries(c.f).length) {
      // plotly wraps a horizontal legend between entries, never inside one: a name wider than the figure
      // (beside its 40 px symbol) is broken at spaces, as the titles are
      var size = (L.legend && L.legend.font && L.legend.font.size) || 12, lines = 0;
      legendEntries(c.f).forEach(function (t) {
        t.name = wrap(t.name, Math.max(c.width - 70, 80), size);
        lines += String(t.name).split(/<br\s*\/?>/i).length - 1;
      });
      var rows = Math.max(1, Math.ceil(legendWidth(c.f, size) / Math.max(c.width - 20, 100)));
      legendH = (rows + lines) * 22 + 6;
      L.legend = Object.assign({}, L.legend || {}, { orientation: "h", x: 0, xanchor: "left", y: -4 / c.newPlotH,
                                                     yanchor: "top" });
    }
    m.t = 6;
    m.b = legendH + 12;
    L.height = Math.round(c.newPlotH + m.t + m.b);
  }


  // wrap long axis titles and subplot titles of a figure that keeps its layout
  function wrapTexts(f, width) {
    var L = f.layout, m = L.margin, plotW = width - m.l - m.r, size = (L.font && L.font.size) || 12;
    subplotsOf(f).forEach(function (s) {
      var w = (s.x[1] - s.x[0]) * plotW;
      var t = s.xa.title;
      if (t && (typeof t === "string" || t.text)) {
        var text = typeof t === "string" ? t : t.text;
        s.xa.title = Object.assign({}, typeof t === "string" ? {} : t, { text: wrap(text, w, size) });
      }
      var yt = s.ya.title;
      var ph = (s.y[1] - s.y[0]) * ((L.height || 450) - m.t - m.b);
      if (yt && (typeof yt === "string" || yt.text)) {
        var ytext = typeof yt === "string" ? yt : yt.text;
        s.ya.title = Object.assign({}, typeof yt === "string" ? {} : yt, { text: wrap(ytext, ph, size) });
      }
    });
    (L.annotations || []).forEach(function (a) {
      if ((a.xref || "paper") !== "paper" || !a.text) { return; }
      var s = subplotsOf(f).filter(function (s) { return a.x >= s.x[0] - 0.02 && a.x <= s.x[1] + 0.02; })[0];
      var w = s ? Math.max((s.x[1] - s.x[0]) * plotW + 30, 80) : plotW;
      a.text = wrap(a.text, w, (a.font && a.font.size) || size);
    });
  }
  function titlesRight(f) {  // a colour bar's title on top collides with its highest tick label
    colorbars(f).forEach(function (cb) {
      if (cb.orientation === "h") { return; }
      cb.title = typeof cb.title === "string" ? { text: cb.title } : (cb.title || {});
      cb.title.side = "right";
    });
  }

  // ------------------------------------------------------------------ the adapted figure
  function titleText(t) { return !t ? "" : (typeof t === "string" ? t : (t.text || "")); }

  // layout.meta.tinytf.narrow = {below, figure, text_of}: a second drawing of the same figure for narrow screens
  // (a diagram whose stacks stand side by side when wide and one above the other on a phone), drawn below
  // `below` px. Its template and its words are the wide figure's: annotation i says what the wide figure's
  // annotation text_of[i] says (so another edition's translation of the wide figure holds for both)
  function variant(spec, width) {
    var n = spec.layout && spec.layout.meta && spec.layout.meta.tinytf && spec.layout.meta.tinytf.narrow;
    if (!n || !n.figure || width >= n.below) { return spec; }
    var wide = spec.layout.annotations || [], of = n.text_of || [];
    var L = Object.assign({ template: spec.layout.template }, n.figure.layout);
    L.annotations = (L.annotations || []).map(function (a, i) {
      return of[i] != null && wide[of[i]] ? Object.assign({}, a, { text: wide[of[i]].text }) : a;
    });
    return Object.assign({}, spec, { data: n.figure.data || [], layout: L });
  }

  function adapt(spec, width, th) {
    var f = JSON.parse(JSON.stringify(variant(spec, width)));
    var L = f.layout;
    delete L.title;
    (f.frames || []).forEach(function (fr) { if (fr.layout) { delete fr.layout.title; } });
    L.margin = Object.assign({ l: 80, r: 80, t: 100, b: 80 }, L.margin || {});
    L.height = L.height || 450;
    if (f.frames && f.frames.length) {  // plotly's slider and buttons give way to HTML controls
      var cutB = (L.sliders && L.sliders.length) ? Math.max(0, L.margin.b - 40) : 0;
      delete L.sliders; delete L.updatemenus;
      L.margin.b -= cutB;
      L.height -= cutB;
    }
    titlesRight(f);
    axisNames(L).forEach(function (name) {  // category ticks set horizontal collide when many: let plotly turn them
      if (L[name].tickangle === 0 && L[name].type === "category") { delete L[name].tickangle; }
    });
    var narrow = width < NARROW;
    if (narrow) {
      // colour bars go to the right margin (inside the plot area they overlap the subplots)
      var bars = colorbars(f);
      bars.forEach(function (cb) { cb.x = 1.02; cb.xanchor = "left"; cb.thickness = Math.min(cb.thickness || 12, 12); });
      L.margin.l = Math.min(L.margin.l, 60);
      L.margin.r = bars.length ? 80 : Math.min(L.margin.r, 20);
    }
    if (!reflow(f, width, narrow)) {
      // the title left the SVG: keep only the room that the subplot titles above the plot need
      wrapTexts(f, width);
      var top = 10;
      (L.annotations || []).forEach(function (a) {
        if ((a.yref || "paper") === "paper" && a.y >= 0.999 && a.yanchor === "bottom") {
          top = Math.max(top, lineCount(a.text) * ((a.font && a.font.size) || 12) * 1.3 + 8);
        }
      });
      var cut = Math.max(0, L.margin.t - top);
      L.margin.t -= cut;
      L.height -= cut;
    }
    axisNames(L).forEach(function (name) {
      if (L[name].visible !== false && L[name].showticklabels !== false) { L[name].automargin = true; }
    });
    applyTheme(f, th);
    f.config = Object.assign({}, spec.config || {}, { displayModeBar: false, responsive: false });
    return f;
  }


  // ------------------------------------------------------------------ caption (safe HTML from plotly text)
  function setCaption(node, text) {
    node.textContent = "";
    var lines = String(text || "").split(/<br\s*\/?>/i);
    lines.forEach(function (line, i) {
      var small = /font-size:\s*1[0-2]px/.test(line) && i > 0;
      var el = document.createElement(i === 0 ? "span" : "span");
      el.className = i === 0 ? "tinytf-figtitle-main" : (small ? "tinytf-figtitle-sub" : "tinytf-figtitle-main");
      // only <b> is kept as markup; everything else becomes text
      var parts = line.replace(/<(?!\/?b>)[^>]+>/g, "").split(/(<\/?b>)/);
      var bold = false;
      parts.forEach(function (p) {
        if (p === "<b>") { bold = true; return; }
        if (p === "</b>") { bold = false; return; }
        if (!p) { return; }
        var t = document.createTextNode(p.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&"));
        if (bold) { var b = document.createElement("b"); b.appendChild(t); el.appendChild(b); } else { el.appendChild(t); }
      });
      node.appendChild(el);
    });
  }

  // ------------------------------------------------------------------ text alternative
  var F32 = { f4: Float32Array, f8: Float64Array, i1: Int8Array, u1: Uint8Array, i2: Int16Array, u2: Uint16Array,
              i4: Int32Array, u4: Uint32Array };
  function values(v) {  // a trace array (plain, typed, or a {dtype, bdata, shape} spec) -> rows of numbers
    if (v == null) { return null; }
    if (v.bdata && v.dtype) {
      var bin = atob(v.bdata), bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
      var flat = Array.prototype.slice.call(new (F32[v.dtype] || Float32Array)(bytes.buffer));
      var shape = v.shape ? String(v.shape).split(",").map(Number) : [flat.length];
      if (shape.length === 2) {
        var rows = [];
        for (var r = 0; r < shape[0]; r++) { rows.push(flat.slice(r * shape[1], (r + 1) * shape[1])); }
        return rows;
      }
      return flat;
    }
    if (ArrayBuffer.isView(v)) { return Array.prototype.slice.call(v); }
    if (Array.isArray(v)) { return v.map(function (x) { return ArrayBuffer.isView(x) ? Array.prototype.slice.call(x) : x; }); }
    return null;
  }
  function num(x) {
    if (typeof x !== "number" || !isFinite(x)) { return String(x); }
    if (x === 0) { return "0"; }
    var a = Math.abs(x);
    var s = (a >= 1e4 || a < 1e-3) ? x.toExponential(2) : String(Number(x.toPrecision(3)));
    return s.replace("-", "−");
  }
  // a trace whose numbers are all whole (counts: parameters, tokens) is said exactly, with thousands separators
  // ("49,152", as its bars and tables print it), not rounded to three digits ("4.92e+4")
  function integral(arr) {
    var fin = (arr || []).filter(finite);
    return fin.length > 0 && fin.every(function (v) { return Number.isInteger(v) && Math.abs(v) < 1e15; });
  }
  function count(x) {
    if (typeof x !== "number" || !isFinite(x)) { return String(x); }
    var s = String(Math.abs(x)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return x < 0 ? "−" + s : s;
  }
  function numbers(arr) { return integral(arr) ? count : num; }  // the formatter for one trace's values
  function label(arr, i) { return arr && arr[i] != null ? stripTags(arr[i]) : String(i); }
  function sizeText(rows, columns) {  // "1 row", not "1 rows"
    if (rows === 1 && columns === 1) { return tr("1 row × 1 column"); }
    if (rows === 1) { return tr("1 row × {columns} columns", { columns: columns }); }
    if (columns === 1) { return tr("{rows} rows × 1 column", { rows: rows }); }
    return tr("{rows} rows × {columns} columns", { rows: rows, columns: columns });
  }
  function finite(v) { return typeof v === "number" && isFinite(v); }
  function categorical(arr) {  // labels, not numbers: a category axis (a horizontal dot plot's y)
    return !!arr && !arr.some(finite) && arr.some(function (v) { return typeof v === "string"; });
  }
  // a horizontal dot plot (categorical y, numeric x): "label: value" for each point drawn, the points of a run on
  // one label as "label: value, value, ..."; the first 16 points, as for bars, then how many more
  function describeDots(name, sy, sx) {
    var runs = [], fmt = numbers(sx.slice(0, 16));
    sx.slice(0, 16).forEach(function (v, i) {
      if (!finite(v)) { return; }
      var lab = label(sy, i), last = runs[runs.length - 1];
      if (last && last.label === lab) { last.values.push(fmt(v)); } else { runs.push({ label: lab, values: [fmt(v)] }); }
    });
    if (!runs.length) { return null; }
    return name + ": " + runs.map(function (r) { return r.label + ": " + r.values.join(", "); }).join("; ") +
      more(sx.slice(16).filter(finite).length);
  }
  function more(n) { return n > 0 ? "; " + tr("and {n} more", { n: count(n) }) : ""; }  // past the first 16
  function describeTrace(t) {
    var name = stripTags(t.name || "");
    if (t.visible === false || name === "(unused)" || t.hoverinfo === "skip" && t.type === "scatter" && !t.name) { return null; }
    if (t.type === "heatmap") {
      var z = values(t.z);
      if (!z || !z.length || !Array.isArray(z[0])) { return null; }
      var lo = Infinity, hi = -Infinity, big = -1, at = null, n = 0;
      z.forEach(function (row, i) {
        row.forEach(function (v, j) {
          if (typeof v !== "number" || !isFinite(v)) { return; }
          n++;
          if (v < lo) { lo = v; }
          if (v > hi) { hi = v; }
          if (Math.abs(v) > big) { big = Math.abs(v); at = [i, j]; }
        });
      });
      if (!n) { return null; }
      var ys = values(t.y), xs = values(t.x);
      var size = sizeText(z.length, z[0].length);
      if (lo === hi) {  // a one-colour layer (e.g. the grey masked cells): say which cells it marks, not a range
        return (name ? name + ": " : "") + tr("{n} of the {size} cells shaded", { n: n, size: size });
      }
      return (name ? name + ": " : "") + tr("{size}, values from {lo} to {hi} (largest in magnitude {big}, at row {row}, column {column})", { size: size, lo: num(lo), hi: num(hi), big: num(z[at[0]][at[1]]),
                                     row: label(ys, at[0]), column: label(xs, at[1]) });
    }
    if (t.type === "bar") {
      var bx = values(t.x), by = values(t.y);
      var horizontal = t.orientation === "h" || (t.orientation == null && !!bx && !by);  // plotly's default
      var cats = horizontal ? by : bx, vals = horizontal ? bx : by;
      if (!vals) { return null; }
      var fmtBar = numbers(vals.slice(0, 16));
      return (name ? name + ": " : tr("bars: ")) + vals.slice(0, 16).map(function (v, i) {
        return label(cats, i) + " " + fmtBar(v);
      }).join("; ") + more(vals.length - 16);
    }
    if (t.type === "scatter" && t.name && t.hoverinfo !== "skip" && t.visible !== "legendonly") {
      var sy = values(t.y), sx = values(t.x);
      if (categorical(sy) && sx && sx.some(finite)) { return describeDots(name, sy, sx); }
      if (!sy || !sy.length || typeof sy[0] !== "number") { return null; }
      var fin = sy.filter(function (v) { return typeof v === "number" && isFinite(v); });
      if (!fin.length) { return null; }
      var fmtY = numbers(fin);
      return name + ": " + tr("{n} points, from {first} at x = {x0} to {last} at x = {x1} (min {min}, max {max})", {
        n: sy.length, first: fmtY(sy[0]), x0: label(sx, 0), last: fmtY(sy[sy.length - 1]), x1: label(sx, sy.length - 1),
        min: fmtY(Math.min.apply(null, fin)), max: fmtY(Math.max.apply(null, fin)) });
    }
    return null;
  }
  function describe(rec) {
    var gd = rec.el, data = gd.data || rec.spec.data, parts = [];
    var seen = {};
    data.forEach(function (t) {
      var d = describeTrace(t);
      if (d && !seen[d] && parts.length < 14) { seen[d] = true; parts.push(d); }
    });
    var titles = (rec.spec.layout.annotations || []).map(function (a) { return stripTags(a.text); })
      .filter(function (s) { return /[A-Za-z0-9]/.test(s) || CJK.test(s); });  // panel titles, even one letter ("x"); not "+" or "="
    var out = [];
    if (rec.frames.length) {
      out.push(tr("Animation of {n} steps ({steps}); showing step {i}: {title}.", { n: rec.frames.length,
        steps: rec.steps.map(function (s) { return s.label; }).join(", "), i: rec.index + 1,
        title: stripTags(rec.frameTitle(rec.index)) }));
    }
    if (titles.length && (titles.length <= 12 || !parts.length)) {
      var list = { list: titles.slice(0, 40).join("; ") };
      out.push(parts.length ? tr("Panels: {list}.", list) : tr("Labels: {list}.", list));
    }
    if (parts.length) { out.push(tr("Numbers drawn: {list}.", { list: parts.join(". ") })); }
    rec.desc.textContent = out.join(" ");
  }

  // ------------------------------------------------------------------ animation controls
  // the frame a slider step shows: plotly's step args are [[name], options] (or [name, ...])
  function stepFrame(step) {
    var a = step && step.args && step.args[0];
    return Array.isArray(a) ? a[0] : typeof a === "string" ? a : null;
  }
  // the steps of an animation: its slider's steps (frame name and label) or, without a slider, its frames
  function animSteps(spec) {
    var names = (spec.frames || []).map(function (fr) { return fr.name; });
    var slider = spec.layout.sliders && spec.layout.sliders[0];
    if (slider && slider.steps && slider.steps.length === names.length) {
      return slider.steps.map(function (s, i) {
        var n = stepFrame(s) || names[i];
        return { name: String(n), label: String(s.label != null ? s.label : n) };
      });
    }
    return names.map(function (n) { return { name: String(n), label: String(n) }; });
  }
  function frameDuration(spec) {
    var ms = 1000;
    (spec.layout.updatemenus || []).forEach(function (u) {
      (u.buttons || []).forEach(function (b) {
        if (b.args && b.args[0] === null && b.args[1] && b.args[1].frame) { ms = b.args[1].frame.duration || ms; }
      });
    });
    return ms;
  }
  function button(text, label, cls) {
    var b = document.createElement("button");
    b.type = "button"; b.className = "tinytf-anim-btn " + (cls || "");
    b.textContent = text;
    if (label) { b.setAttribute("aria-label", label); }
    return b;
  }
  function addControls(rec) {
    var id = rec.id;
    var box = document.createElement("div");
    box.className = "tinytf-anim-controls";
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", tr("animation controls"));
    var prev = button("◀", tr("previous step"), "tinytf-anim-prev");
    var play = button(tr("▶ Play"), null, "tinytf-anim-play");
    var next = button("▶", tr("next step"), "tinytf-anim-next");
    var range = document.createElement("input");
    range.type = "range"; range.min = "0"; range.max = String(rec.steps.length - 1); range.step = "1"; range.value = "0";
    range.id = id + "-step"; range.className = "tinytf-anim-range";
    var lab = document.createElement("label");
    lab.setAttribute("for", range.id); lab.className = "tinytf-anim-label";
    var out = document.createElement("output");
    out.setAttribute("for", range.id); out.className = "tinytf-anim-value";
    lab.textContent = tr("step");
    box.appendChild(play); box.appendChild(prev); box.appendChild(next);
    var r = document.createElement("span"); r.className = "tinytf-anim-slider";
    r.appendChild(lab); r.appendChild(range); box.appendChild(r); box.appendChild(out);
    rec.controls = { box: box, play: play, range: range, out: out };
    prev.addEventListener("click", function () { stop(rec); show(rec, Math.max(0, rec.index - 1)); });
    next.addEventListener("click", function () { stop(rec); show(rec, Math.min(rec.steps.length - 1, rec.index + 1)); });
    range.addEventListener("input", function () { var i = parseInt(range.value, 10); stop(rec); show(rec, i); });
    play.addEventListener("click", function () { if (rec.playing) { stop(rec); } else { start(rec); } });
    return box;
  }
  function syncControls(rec) {
    var c = rec.controls;
    if (!c) { return; }
    var s = rec.steps[rec.index];
    c.range.value = String(rec.index);
    var text = tr("{i} of {n}: {label}", { i: rec.index + 1, n: rec.steps.length, label: s.label });
    c.range.setAttribute("aria-valuetext", text);
    c.out.textContent = text;
    c.play.textContent = rec.playing ? tr("❚❚ Pause") : tr("▶ Play");
    c.play.setAttribute("aria-pressed", rec.playing ? "true" : "false");
    setCaption(rec.caption, rec.frameTitle(rec.index));
    describe(rec);
  }
  // Plotly.animate rejects its promise (with no reason) when a newer animate call interrupts it, as
  // fast keys or a quick Play/Pause do: that is the expected outcome, not an error.
  function toFrame(rec, i) {
    if (rec.redrawFrames) { return render(rec); }  // drawn afresh with frame i merged (see switchesColourAxis)
    return Promise.resolve(window.Plotly.animate(rec.el, [rec.steps[i].name], {
      mode: "immediate", frame: { duration: 0, redraw: true }, transition: { duration: 0 } })).catch(function () {});
  }
  function show(rec, i) {
    rec.index = i;
    var drawn = toFrame(rec, i);
    syncControls(rec);
    // the description reads the drawn traces: describe again once this frame is drawn (unless a newer one was asked for)
    drawn.then(function () { if (rec.index === i) { describe(rec); } });
  }
  function stop(rec) {
    if (rec.timer) { clearTimeout(rec.timer); rec.timer = null; }
    rec.playing = false;
    syncControls(rec);
  }
  function start(rec) {
    rec.playing = true;
    if (rec.index >= rec.steps.length - 1) { show(rec, 0); } else { syncControls(rec); }
    function tick() {
      if (!rec.playing) { return; }
      if (rec.index >= rec.steps.length - 1) { stop(rec); return; }
      show(rec, rec.index + 1);
      rec.timer = setTimeout(tick, rec.duration);
    }
    rec.timer = setTimeout(tick, rec.duration);
  }

  // ------------------------------------------------------------------ drawing
  // draws never overlap: a redraw asked for while one runs is made after it (core.queue)
  function render(rec) {
    if (!rec.redraw) { rec.redraw = queue(function () { return renderNow(rec); }); }
    return rec.redraw();
  }
  function renderNow(rec) {
    var width = Math.max(rec.box.clientWidth || rec.wrap.clientWidth || 300, 200);
    rec.width = width;
    // an animated figure on another step than its data's is drawn with that step's frame merged in, as
    // Plotly.animate would merge it: one drawing instead of two (the static panel's updates). The frame is
    // merged before the figure is adapted, so that the adaptation (colour bars moved off a narrow plot, subplots
    // laid out again) is that of the step shown: a colour bar hidden on the opening step and shown by a frame
    // (chapter 6's attention weights) is placed like the others, and a frame may set its own subplot domains
    var onFrame = rec.frames.length && rec.index !== rec.opening && !rec.animateAfterDraw;
    var f = adapt(onFrame ? figureAt(rec.spec, rec.steps[rec.index].name, rec.spec.config) : rec.spec, width,
                  theme());
    var H = f.layout.height || 450;
    // a diagram drawn at a fixed width (its text placed for that width) is scaled down as a whole
    var fixed = f.layout.width;
    var k = fixed && fixed > width ? width / fixed : 1;
    rec.el.style.width = fixed ? fixed + "px" : "100%";
    rec.el.style.maxWidth = fixed ? "none" : "";
    rec.el.style.height = H + "px";
    rec.el.style.transform = k < 1 ? "scale(" + k + ")" : "";
    rec.el.style.transformOrigin = "0 0";
    rec.box.style.height = Math.ceil(H * k) + "px";
    var P = window.Plotly;
    // a new width is drawn afresh: Plotly.react keeps parts of the old layout (subplot domains laid out for
    // another width), so a figure drawn at phone width and widened would keep its narrow subplots
    var resized = rec.drawn && Math.abs(width - rec.drawnWidth) >= 2;
    if (resized) { P.purge(rec.el); }
    var done = rec.drawn && !resized ? P.react(rec.el, f) : P.newPlot(rec.el, f);
    rec.drawn = true;
    rec.drawnWidth = width;
    return Promise.resolve(done).then(function () {
      if (rec.frames.length && rec.index !== rec.opening && !onFrame) {
        return toFrame(rec, rec.index);
      }
    }).then(function () {
      return fit(rec, f, k);
    }).then(function () {
      var svg = rec.el.querySelector(".svg-container");
      if (svg) { svg.setAttribute("aria-hidden", "true"); }
      describe(rec);
    });
  }

  // ------------------------------------------------------------------ frames: what Plotly.animate merges
  function isObject(v) { return v !== null && typeof v === "object" && !Array.isArray(v) && !ArrayBuffer.isView(v); }
  function isTyped(v) { return isObject(v) && "bdata" in v && "dtype" in v; }  // plotly's {dtype, bdata, shape}
  function clone(v) {
    if (Array.isArray(v)) { return v.map(clone); }
    if (!isObject(v)) { return v; }
    var out = {};
    Object.keys(v).forEach(function (k) { out[k] = clone(v[k]); });
    return out;
  }
  // Plotly.animate's merge of a frame into the figure: objects key by key, arrays of objects
  // (annotations, shapes) item by item; values, data arrays and typed arrays replaced (copies)
  function mergeInto(target, src) {
    Object.keys(src).forEach(function (k) {
      var v = src[k], t = target[k];
      if (Array.isArray(v) && Array.isArray(t) && v.length && v.every(isObject) && !v.some(isTyped)) {
        v.forEach(function (item, i) { t[i] = isObject(t[i]) ? mergeInto(t[i], item) : clone(item); });
      } else if (isObject(v) && isObject(t) && !isTyped(v) && !isTyped(t)) {
        mergeInto(t, v);
      } else {
        target[k] = clone(v);
      }
    });
    return target;
  }
  // the frame `name` merged into the figure f, in place; the slider (if any) put on its step
  function mergeFrame(f, name) {
    var fr = (f.frames || []).filter(function (x) { return String(x.name) === String(name); })[0];
    if (!fr) { return f; }
    (fr.data || []).forEach(function (d, i) {
      var at = fr.traces ? fr.traces[i] : i;
      f.data[at] = mergeInto(f.data[at] || {}, d);
    });
    if (fr.layout) { mergeInto(f.layout, fr.layout); }
    (f.layout.sliders || []).forEach(function (slider) {
      (slider.steps || []).forEach(function (s, i) { if (String(stepFrame(s)) === String(name)) { slider.active = i; } });
    });
    return f;
  }
  // a copy of the figure as drawn on frame `name` (none: as it is)
  function figureAt(fig, name, config) {
    var out = { data: clone(fig.data || []), layout: clone(fig.layout || {}) };
    if (config !== undefined) { out.config = config; }
    if (fig.frames) { out.frames = clone(fig.frames); }
    return name == null ? out : mergeFrame(out, name);
  }

  // ------------------------------------------------------------------ the redraw queue
  // queue(run): a function that asks for a run of `run` (which may return a promise). Runs never
  // overlap: asked while one runs, the request is answered by one more run after it (however many
  // were asked: the latest state wins). The promise returned settles when that run has ended.
  // q.busy is the run under way (or null), q.again whether another one is asked for.
  function queue(run) {
    var q = function () {
      if (q.busy) { q.again = true; return q.busy; }
      q.busy = loop();
      return q.busy;
    };
    q.busy = null; q.again = false;
    function loop() {
      q.again = false;
      return Promise.resolve().then(run).then(function (v) {
        if (q.again) { return loop(); }
        q.busy = null;
        return v;
      }, function (err) {
        if (q.again) { return loop(); }
        q.busy = null;
        throw err;
      });
    }
    return q;
  }

  // What the estimates above got wrong, measured: a legend (its entries wrap as plotly likes) or an
  // axis title that reaches past the bottom of the figure gets the room it needs, in one more pass.
  function fit(rec, f, k, pass) {
    pass = pass || 0;
    if (pass > 2) { return null; }
    var box = rec.el.getBoundingClientRect(), over = 0, above = 0;
    rec.el.querySelectorAll(".legend text, .g-xtitle, .g-ytitle, .xtick, .annotation").forEach(function (g) {
      var r = g.getBoundingClientRect();
      if (!r.height) { return; }
      over = Math.max(over, (r.bottom - box.bottom) / k);
      above = Math.max(above, (box.top - r.top) / k);
    });
    if (over < 1 && above < 1) { return null; }
    var H = (f.layout.height || 450) + Math.ceil(over) + Math.ceil(above) + 8;
    var m = f.layout.margin;
    var upd = { height: H, "margin.b": m.b + Math.ceil(over) + (over >= 1 ? 6 : 0),
                "margin.t": m.t + Math.ceil(above) + (above >= 1 ? 2 : 0) };
    f.layout.height = H;
    rec.el.style.height = H + "px";
    rec.box.style.height = Math.ceil(H * k) + "px";
    return Promise.resolve(window.Plotly.relayout(rec.el, upd)).then(function () { return fit(rec, f, k, pass + 1); });
  }

  // Plotly.animate draws a heatmap whose frame moves it to another colour axis one row off its labels
  // (plotly.js 4.1, chapter 6's stepper at its softmax step; a fresh draw of the same data is right): the
  // steps of such a figure are drawn afresh with their frame merged, as a frame is merged when redrawn
  function switchesColourAxis(spec) {
    var base = spec.data || [];
    return (spec.frames || []).some(function (fr) {
      return (fr.data || []).some(function (d, j) {
        var t = base[fr.traces ? fr.traces[j] : j] || {};
        return isObject(d) && d.coloraxis !== undefined && d.coloraxis !== (t.coloraxis || "coloraxis");
      });
    });
  }
  function setSpec(rec, spec) {
    var titles = {};
    rec.spec = spec;
    rec.frames = spec.frames || [];
    rec.frames.forEach(function (fr) { titles[fr.name] = fr.layout && titleText(fr.layout.title); });
    rec.steps = animSteps(spec);
    rec.duration = frameDuration(spec);
    var active = spec.layout.sliders && spec.layout.sliders[0] && spec.layout.sliders[0].active;
    rec.opening = active > 0 && active < rec.steps.length ? active : 0;  // the step the figure's data shows
    rec.redrawFrames = switchesColourAxis(spec);
    rec.frameTitle = function (i) {
      var t = rec.steps.length ? titles[rec.steps[i].name] : null;
      return t || titleText(spec.layout.title);
    };
  }

  // A new figure for a drawn one (the static panel: new tokens, another model or view; the live widget:
  // each message after the first), drawn in the same place with Plotly.react; an animated figure stays
  // on the step the reader was on (the frame of the same name, e.g. the stepper's "softmax"), or on the
  // first one when the new figure has none.
  // The step is remembered while a figure without frames is shown (the live panel's other views).
  function update(el, spec) {
    var rec = el._tinytf;
    if (!rec) { return draw(el, spec); }
    var was = rec.steps.length ? rec.steps[rec.index].name : rec.lastStep;
    rec.lastStep = was;
    if (rec.playing) { stop(rec); }
    setSpec(rec, spec);
    rec.index = 0;
    rec.steps.forEach(function (s, k) { if (s.name === was) { rec.index = k; } });
    if (rec.frames.length && !rec.controls) { rec.wrap.insertBefore(addControls(rec), rec.details); }
    if (!rec.frames.length && rec.controls) { rec.controls.box.remove(); rec.controls = null; }
    if (rec.controls) {
      rec.controls.range.max = String(rec.steps.length - 1);
      syncControls(rec);
    } else {
      setCaption(rec.caption, rec.frameTitle(0));
    }
    return render(rec);
  }

  function draw(el, spec) {
    var id = el.id || ("tinytf-fig-" + (++serial));
    var wrapper = document.createElement("div");
    wrapper.className = "tinytf-figwrap";
    wrapper.setAttribute("role", "figure");
    el.parentNode.insertBefore(wrapper, el);
    var caption = document.createElement("div");
    caption.className = "tinytf-figtitle";
    caption.id = id + "-title";
    wrapper.appendChild(caption);
    var box = document.createElement("div");  // the figure's box: holds a scaled-down diagram
    box.className = "tinytf-figbox";
    box.appendChild(el);
    wrapper.appendChild(box);
    var details = document.createElement("details");
    details.className = "tinytf-figdesc";
    var summary = document.createElement("summary");
    summary.textContent = tr("Describe this figure");
    var desc = document.createElement("p");
    desc.id = id + "-desc";
    details.appendChild(summary); details.appendChild(desc);
    wrapper.setAttribute("aria-labelledby", caption.id);
    wrapper.setAttribute("aria-describedby", desc.id);
    var rec = { id: id, el: el, wrap: wrapper, box: box, caption: caption, desc: desc, details: details,
                index: 0, playing: false, timer: null };
    setSpec(rec, spec);
    rec.index = rec.opening;
    setCaption(caption, rec.frameTitle(rec.index));
    if (rec.frames.length) { wrapper.appendChild(addControls(rec)); }
    wrapper.appendChild(details);
    el.classList.add("tinytf-drawn");
    figures.push(rec);
    el._tinytf = rec;
    watch();
    watchBox(rec);
    if (rec.frames.length) { syncControls(rec); }
    return render(rec);
  }

  // ------------------------------------------------------------------ redraw on resize and mode switch
  var pending = null;
  function redrawAll(onlyResized) {
    figures.forEach(function (rec) {
      if (!document.body.contains(rec.el)) { return; }
      if (onlyResized && !rec.box.clientWidth) { return; }  // hidden (a closed dropdown): drawn when shown
      var w = Math.max(rec.box.clientWidth || 300, 200);
      if (onlyResized && Math.abs(w - rec.width) < 2) { return; }
      if (rec.playing) { stop(rec); }
      render(rec);
    });
  }
  function redrawSoon() {
    clearTimeout(pending);
    pending = setTimeout(function () { redrawAll(true); }, 150);
  }
  // A figure's box can change width without a window resize: the reader hides the book's side bar, a
  // notebook panel is dragged wider, or the page's layout settles after the resize event was handled
  // (seen on a loaded machine: figures kept the width measured mid-layout). Each box is watched itself;
  // the window's resize event stays for browsers without ResizeObserver. A redraw only sets the box's
  // height, so the observer's answer to it is skipped by redrawAll (same width).
  var boxes = typeof ResizeObserver === "function" ? new ResizeObserver(redrawSoon) : null;
  function watchBox(rec) { if (boxes) { boxes.observe(rec.box); } }
  // started by the first draw (the book's, the static panel's or the live widget's)
  var watching = false;
  function watch() {
    if (watching) { return; }
    watching = true;
    window.addEventListener("resize", redrawSoon);
    var lastTheme = document.documentElement.getAttribute("data-theme") + " " + isDark();
    var modes = new MutationObserver(function () {
      var now = document.documentElement.getAttribute("data-theme") + " " + isDark();
      if (now !== lastTheme) { lastTheme = now; redrawAll(false); }
    });
    modes.observe(document.documentElement, { attributes: true, attributeFilter: ["data-theme"] });
    // JupyterLab's switch of theme (Settings > Theme)
    if (document.body) { modes.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-light"] }); }
  }

  return { draw: draw, update: update, adapt: adapt, figures: figures, theme: theme, MIN_SUBPLOT: MIN_SUBPLOT,
           figureAt: figureAt, mergeFrame: mergeFrame, steps: animSteps, stepFrame: stepFrame, queue: queue,
           clone: clone, values: values, tr: tr, describeTrace: describeTrace };
})();
// a classic script on a page (the book): the name the figure outputs call; inside an ES module (the live
// widget) document.currentScript is null and nothing is put on window
if (typeof document !== "undefined" && document.currentScript) { window.tinytfFigures = tinytfCore; }

// tinytf FigureView (anywidget ESM): one figure, drawn and redrawn in place by the figure core.
// Messages from Python: {type: "full", rev, fig, config}, {type: "patch", base, rev, ops}
// (ops: [path, value] sets, [path] deletes), {type: "plotly"} + the plotly.js source as a buffer.
// plotly.js: the page's window.Plotly, else asked once per page from the kernel (never another host).
// The widget's module is tinytf/viz/figure_core.js followed by this file (tinytf.viz.figure_view):
// `tinytfCore` is the figure core the book and its static panel use too. The first figure is drawn with
// tinytfCore.draw (caption, "Describe this figure", the HTML Play / previous / next / range controls in
// place of plotly's slider and buttons, resize and light / dark theme), every later one with
// tinytfCore.update, which keeps the animation step the reader is on (by its frame name).

const LOADING = "__tinytfPlotlyLoading";

function loadPlotly(model) {
  if (window.Plotly && window.Plotly.react) return Promise.resolve(window.Plotly);
  if (window[LOADING]) return window[LOADING];
  const asked = performance.now();
  window[LOADING] = new Promise((resolve, reject) => {
    const onMessage = (msg, buffers) => {
      if (!msg || msg.type !== "plotly") return;
      model.off("msg:custom", onMessage);
      const url = URL.createObjectURL(new Blob([buffers[0]], { type: "text/javascript" }));
      // the bundle ends with `window.Plotly = Plotly`; as a module it ignores any AMD `define`
      import(/* webpackIgnore: true */ url).then(
        () => { URL.revokeObjectURL(url); resolve(window.Plotly); },
        (err) => { URL.revokeObjectURL(url); window[LOADING] = null; reject(err); });
    };
    model.on("msg:custom", onMessage);
    model.send({ type: "need_plotly" });
  }).then((P) => {
    // for measurement: how long fetching and evaluating the kernel's plotly.js took
    document.documentElement.dataset.tinytfPlotlyLoadMs = String(Math.round(performance.now() - asked));
    return P;
  });
  return window[LOADING];
}

function applyOps(fig, ops) {
  for (const op of ops) {
    const path = op[0];
    let t = fig;
    for (let i = 0; i < path.length - 1; i++) t = t[path[i]];
    const last = path[path.length - 1];
    if (op.length === 1) {
      if (Array.isArray(t)) t.splice(last, 1); else delete t[last];
    } else {
      t[last] = op[1];
    }
  }
}

// Keys pressed on the figure's controls (arrows, Home / End on the range, Space / Enter on a button) are
// theirs. JupyterLab's shortcuts are off while the focus is in the figure (Lumino skips an element marked
// data-lm-suppress-shortcuts; in command mode ArrowLeft / ArrowRight fold headings), and keys without a
// modifier do not bubble up to the notebook, which cancels the range's arrow keys.
function keysStayInside(wrap) {
  wrap.dataset.lmSuppressShortcuts = "true";
  wrap.addEventListener("keydown", (e) => {
    if (!(e.shiftKey || e.ctrlKey || e.metaKey || e.altKey)) e.stopPropagation();
  });
}

function render({ model, el }) {
  const div = document.createElement("div");
  div.className = "tinytf-figure-view";
  div.style.width = "100%";
  div.style.minHeight = model.get("height") + "px"; // room kept until the first drawing
  el.appendChild(div); // in the widget first: tinytfCore.draw puts its wrapper where the div is
  let held = null, config = {}, rev = -1, draws = 0, closed = false;

  // one redraw at a time; messages that arrive meanwhile are drawn once, after it (tinytfCore.queue)
  async function drawNow() {
    if (closed) return;
    await loadPlotly(model);
    const shownRev = rev;
    const spec = Object.assign({}, held, { config }); // the core takes the config from spec.config
    div.style.minHeight = "";
    if (div._tinytf) {
      await tinytfCore.update(div, spec);
    } else {
      const drawn = tinytfCore.draw(div, spec);
      keysStayInside(div._tinytf.wrap);
      await drawn;
    }
    draws += 1;
    div.dataset.tinytfRev = String(shownRev);
    div.dataset.tinytfDraws = String(draws);
    div.dataset.tinytfDrawn = String(performance.now());
  }
  const redraw = tinytfCore.queue(drawNow);
  const draw = () => redraw().catch((err) => console.error("tinytf FigureView: could not draw the figure", err));

  function onMessage(msg) {
    if (!msg || (msg.type !== "full" && msg.type !== "patch")) return;
    const received = String(performance.now());
    if (msg.type === "full") {
      if (held && msg.rev === rev) return; // a copy of what this view already holds
      held = msg.fig; config = msg.config || {}; rev = msg.rev;
    } else if (held && msg.base === rev) {
      applyOps(held, msg.ops); rev = msg.rev;
    } else {
      model.send({ type: "need_full" }); // this view missed a message: ask for the whole figure
      return;
    }
    div.dataset.tinytfReceived = received;
    div.dataset.tinytfUpdate = msg.type;
    draw();
  }

  model.on("msg:custom", onMessage);
  model.send({ type: "need_full" });
  loadPlotly(model).catch((err) => console.error("tinytf FigureView: plotly.js did not load", err));
  return () => {
    closed = true;
    model.off("msg:custom", onMessage);
    const rec = div._tinytf;
    if (rec) { // no Play timer left running, and the core's resize / theme redraws forget this figure
      rec.playing = false;
      clearTimeout(rec.timer);
      const i = tinytfCore.figures.indexOf(rec);
      if (i >= 0) tinytfCore.figures.splice(i, 1);
    }
    if (window.Plotly && div._fullLayout) window.Plotly.purge(div);
  };
}

export default { render };

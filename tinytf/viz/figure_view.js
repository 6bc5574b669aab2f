// tinytf FigureView (anywidget ESM): one plotly figure redrawn in place with Plotly.react.
// Messages from Python: {type: "full", rev, fig, config}, {type: "patch", base, rev, ops}
// (ops: [path, value] sets, [path] deletes), {type: "plotly"} + the plotly.js source as a buffer.
// plotly.js: the page's window.Plotly, else asked once per page from the kernel (never another host).
// The widget's module is tinytf/viz/figure_core.js followed by this file (tinytf.viz.figure_view):
// `tinytfCore` is the figure core the book uses too (frame merging, slider steps, the redraw queue).
// In JupyterLab the figure keeps plotly's own slider and Play button (the notebook's look).

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

function render({ model, el }) {
  const div = document.createElement("div");
  div.className = "tinytf-figure-view";
  div.style.width = "100%";
  div.style.minHeight = model.get("height") + "px";
  el.appendChild(div);
  let held = null, config = {}, rev = -1, frameName = null, draws = 0, closed = false;

  function currentFrame() {
    const sliders = div.layout && div.layout.sliders;
    if (sliders && sliders.length) {
      const s = sliders[0];
      const name = tinytfCore.stepFrame((s.steps || [])[s.active || 0]);
      if (name != null) frameName = name; // kept while another view (without frames) is shown
    }
    return frameName;
  }

  // one redraw at a time; messages that arrive meanwhile are drawn once, after it (tinytfCore.queue)
  async function drawNow() {
    if (closed) return;
    const Plotly = await loadPlotly(model);
    const shownRev = rev;
    const first = !div._fullLayout;
    div.style.minHeight = ((held.layout && held.layout.height) || model.get("height")) + "px";
    await Plotly.react(div, tinytfCore.figureAt(held, first ? null : currentFrame(), config));
    if (first) div.on("plotly_animatingframe", (e) => { frameName = e && e.name; });
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
    if (window.Plotly && div._fullLayout) window.Plotly.purge(div);
  };
}

export default { render };

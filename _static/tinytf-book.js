// tinytf book: small page helpers (loaded on every page, served locally, no network).
// The words they add to a page are English, or the page's translation: window.tinytfStrings, which the Chinese
// edition gives from the figure catalogue (scripts/figure_strings.py collects the word of every tinytfWord call
// in this file).
function tinytfWord(english) {
  var T = typeof window !== "undefined" ? window.tinytfStrings : null;
  return (T && T[english]) || english;
}
// Live-only ipywidgets panels show a note in the static book ("live panel — launch this
// chapter in Binder or Colab"); give that note the chapter's real Binder and Colab links,
// taken from the page's launch buttons, so the note is a working way to the live panel.
(function () {
  "use strict";
  function launchLinks() {
    var found = [];
    var seen = {};
    document.querySelectorAll("a[href]").forEach(function (a) {
      var href = a.getAttribute("href");
      var name = null;
      if (href.indexOf("mybinder.org/v2/") !== -1) { name = tinytfWord("Launch in Binder"); }
      else if (href.indexOf("colab.research.google.com/github/") !== -1) { name = tinytfWord("Open in Colab"); }
      if (name && !seen[name]) { seen[name] = true; found.push({ name: name, href: href }); }
    });
    return found;
  }
  function decorate() {
    var notes = document.querySelectorAll(".tinytf-live-note");
    if (!notes.length) { return; }
    var links = launchLinks();
    if (!links.length) { return; }
    notes.forEach(function (note) {
      if (note.querySelector(".tinytf-launch-links")) { return; }
      var p = document.createElement("span");
      p.className = "tinytf-launch-links";
      links.forEach(function (l) {
        var a = document.createElement("a");
        a.href = l.href;
        a.textContent = l.name;
        a.target = "_blank";
        a.rel = "noopener";
        p.appendChild(a);
      });
      note.appendChild(document.createElement("br"));
      note.appendChild(p);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", decorate);
  } else {
    decorate();
  }
})();

// Accessibility fixes to the theme's markup (axe-core: label-content-name-mismatch, region,
// empty-table-header). The search buttons and the toggle of a hidden cell carry an aria-label that
// differs from their visible text ("Search Ctrl+K", "Show code cell source"): without it their name
// is that visible text. The primary sidebar gets a landmark role. An empty header cell (the corner
// of a comparison table) gets a name for screen readers.
(function () {
  "use strict";
  function fix() {
    document.querySelectorAll(".search-button-field[aria-label], details > summary[aria-label]").forEach(function (el) {
      if ((el.textContent || "").trim()) { el.removeAttribute("aria-label"); }
    });
    var side = document.querySelector(".bd-sidebar-primary");
    if (side && !side.getAttribute("role")) {
      side.setAttribute("role", "complementary");
      side.setAttribute("aria-label", tinytfWord("Book contents"));
    }
    // The sidebar's toggle that opens a chapter's sub-pages (its lab notes) is an icon only (axe-core:
    // summary-name): give it a name that says what it opens.
    document.querySelectorAll(".bd-sidebar-primary li.has-children > details > summary").forEach(function (el) {
      if ((el.textContent || "").trim()) { return; }
      var link = el.closest("li").querySelector(":scope > a");
      var s = document.createElement("span");
      s.className = "visually-hidden";
      s.textContent = tinytfWord("Show sub-pages") + (link ? ": " + (link.textContent || "").trim() : "");
      el.appendChild(s);
    });
    // sphinxcontrib-bibtex's list of references: role="list" whose items say role="doc-biblioentry" (axe-core:
    // aria-required-children); each entry is a list item.
    document.querySelectorAll('.citation-list[role="list"] > [role="doc-biblioentry"]').forEach(function (el) {
      el.setAttribute("role", "listitem");
    });
    document.querySelectorAll(".bd-article th").forEach(function (th) {
      if (!(th.textContent || "").trim() && !th.querySelector("img")) {
        var s = document.createElement("span");
        s.className = "visually-hidden";
        s.textContent = th.closest("thead") ? tinytfWord("row") : tinytfWord("item");
        th.appendChild(s);
      }
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", fix);
  } else {
    fix();
  }
})();

// A box that scrolls sideways (a wide formula, a long code line, a wide table) must be reachable
// with the keyboard, or its hidden part cannot be read without a mouse (axe-core:
// scrollable-region-focusable). Checked after MathJax has typeset and again on resize.
(function () {
  "use strict";
  var SELECTOR = ".bd-article mjx-container[display='true'], .bd-article div.math, .bd-article pre, " +
    ".bd-article blockquote, .bd-article .table-wrapper, .bd-article .cell_output .output";
  function mark() {
    document.querySelectorAll(SELECTOR).forEach(function (el) {
      var scrolls = el.scrollWidth > el.clientWidth + 1;
      if (scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.setAttribute("data-tinytf-scroll", "1");
      } else if (!scrolls && el.getAttribute("data-tinytf-scroll")) {
        el.removeAttribute("tabindex");
        el.removeAttribute("data-tinytf-scroll");
      }
    });
  }
  function later() {
    var mj = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    (mj ? mj : Promise.resolve()).then(mark);
  }
  window.addEventListener("load", later);
  var t = null;
  window.addEventListener("resize", function () { clearTimeout(t); t = setTimeout(mark, 200); });
})();

"""No function of the browser code is longer than 80 lines (issue 21: functions a reader can hold in mind).

The browser code: the book's ``_static/*.js`` and the package's ``tinytf/viz/*.js`` (the figure core and the
live widget). Measured by tests/js/function_lengths.js in Node.js (a scan that blanks strings, comments,
templates and regular expressions, then matches braces; a file's ``(function () { ... })();`` wrapper is a
module, not a function). The scan itself is checked on a source made to mislead it.
"""
from __future__ import annotations

import json
import subprocess

from conftest import ROOT, require

LIMIT = 80
SCANNER = ROOT / "tests" / "js" / "function_lengths.js"
FILES = sorted(ROOT.glob("_static/*.js")) + sorted(ROOT.glob("tinytf/viz/*.js"))


def measure(*paths) -> list[dict]:
    require("node")
    out = subprocess.run(["node", str(SCANNER), *map(str, paths)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_no_browser_function_is_longer_than_80_lines():
    found = measure(*FILES)
    assert {f["file"] for f in found} == {str(p) for p in FILES}, "a file without any function measured"
    long = [f"{f['file']}:{f['line']}: {f['lines']} lines: {f['head']}" for f in found if f["lines"] > LIMIT]
    assert not long, "\n".join(long)


def test_the_scan_is_not_fooled(tmp_path):
    body = "\n".join(f"    x += {i};" for i in range(85))
    src = f"""(function () {{
  "use strict";
  var s = "a {{ in a string", t = '}}', r = /[{{]}}\\/{{/g, u = `${{ {{a: 1}}.a }} }}`;  // a }} in a comment
  /* and {{ here */
  function long(x) {{
{body}
    return x / 2 / 3;
  }}
  var arrow = (a) => {{
    return a;
  }};
  function short() {{ return "}}"; }}
}})();
"""
    path = tmp_path / "sample.js"
    path.write_text(src, encoding="utf-8")
    got = {f["head"].split("(")[0]: f["lines"] for f in measure(path)}
    assert got == {"function long": 88, "var arrow = ": 3, "function short": 1}, got

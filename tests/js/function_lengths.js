// The length in lines of every function of some JavaScript files, for tests/viz/test_js_function_lengths.py.
//
//   node tests/js/function_lengths.js FILE...   ->  JSON [{file, line, end, lines, head}] on stdout
//
// No parser (none is in package-lock.json): strings, template literals, comments and regular expression
// literals are blanked first, so that the braces left are the code's; then each `function` (declaration,
// expression, method) and each arrow function with a block body is measured from the line of its keyword
// (or arrow) to the line of its closing brace, both included. A function that wraps a whole file and is
// called at once (the `(function () { ... })();` of a plain script) is a module, not a function a reader
// must hold in mind: it is left out (the functions inside it are measured).
"use strict";
const fs = require("fs");

const REGEX_AFTER = new Set("(,=:[!&|?{};+-*%<>~^".split(""));
const REGEX_WORDS = /(?:^|[^\w$])(?:return|typeof|case|in|of|new|delete|void|throw|else|do)\s*$/;

function blank(src) {  // the source with every string, comment, template and regex replaced by spaces
  const out = src.split("");
  const put = (i) => { if (out[i] !== "\n") out[i] = " "; };
  let i = 0;
  const n = src.length;
  function skipQuoted(q) {  // at the opening quote
    put(i); i++;
    while (i < n && src[i] !== q) { if (src[i] === "\\") { put(i); i++; } put(i); i++; }
    put(i); i++;
  }
  function skipTemplate() {
    put(i); i++;
    while (i < n && src[i] !== "`") {
      if (src[i] === "\\") { put(i); i++; put(i); i++; continue; }
      if (src[i] === "$" && src[i + 1] === "{") {
        let depth = 0;
        do { if (src[i] === "{") depth++; else if (src[i] === "}") depth--; put(i); i++; } while (i < n && depth > 0);
        continue;
      }
      put(i); i++;
    }
    put(i); i++;
  }
  function skipRegex() {
    put(i); i++;
    let cls = false;
    while (i < n && (cls || src[i] !== "/") && src[i] !== "\n") {
      if (src[i] === "\\") { put(i); i++; } else if (src[i] === "[") cls = true; else if (src[i] === "]") cls = false;
      put(i); i++;
    }
    put(i); i++;
  }
  function regexHere() {  // a "/" that starts a regular expression (not a division)
    let j = i - 1;
    while (j >= 0 && /\s/.test(out[j])) j--;
    if (j < 0 || REGEX_AFTER.has(out[j])) return true;
    return REGEX_WORDS.test(out.slice(Math.max(0, j - 10), j + 1).join(""));
  }
  while (i < n) {
    const c = src[i], d = src[i + 1];
    if (c === "/" && d === "/") { while (i < n && src[i] !== "\n") { put(i); i++; } }
    else if (c === "/" && d === "*") { const end = src.indexOf("*/", i + 2); const stop = end < 0 ? n : end + 2; while (i < stop) { put(i); i++; } }
    else if (c === "'" || c === '"') skipQuoted(c);
    else if (c === "`") skipTemplate();
    else if (c === "/" && regexHere()) skipRegex();
    else i++;
  }
  return out.join("");
}

function matching(code, at, open, close) {  // index of the bracket closing the one at `at`
  let depth = 0;
  for (let k = at; k < code.length; k++) {
    if (code[k] === open) depth++;
    else if (code[k] === close && --depth === 0) return k;
  }
  throw new Error("unbalanced " + open + " at offset " + at);
}

function functions(src) {
  const code = blank(src);
  const lineAt = (k) => src.slice(0, k).split("\n").length;
  const found = [];
  const re = /\bfunction\b|=>/g;
  let m;
  while ((m = re.exec(code))) {
    let body;
    if (m[0] === "=>") {
      const rest = code.slice(m.index + 2).match(/^\s*/)[0].length + m.index + 2;
      if (code[rest] !== "{") continue;  // an expression body
      body = rest;
    } else {
      const paren = code.indexOf("(", m.index);
      body = code.indexOf("{", matching(code, paren, "(", ")"));
    }
    const end = matching(code, body, "{", "}");
    const after = code.slice(end + 1).match(/^\s*\)\s*\(\s*\)/);  // `})()`: called at once
    const depth = code.slice(0, m.index).split("{").length - code.slice(0, m.index).split("}").length;
    if (after && depth === 0) continue;  // a file's module wrapper
    const line = lineAt(m.index), last = lineAt(end);
    found.push({ line, end: last, lines: last - line + 1, head: src.split("\n")[line - 1].trim().slice(0, 100) });
  }
  return found;
}

if (require.main === module) {
  const out = [];
  for (const file of process.argv.slice(2)) {
    for (const f of functions(fs.readFileSync(file, "utf8"))) out.push(Object.assign({ file }, f));
  }
  process.stdout.write(JSON.stringify(out));
}
module.exports = { functions, blank };

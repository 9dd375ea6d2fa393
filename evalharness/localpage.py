"""What the labelling page and the review page share, as pieces of their one HTML document: the head and the
look of the header, the bottom bar, buttons and help; the script's DOM helpers (``$``, ``el``, ``clear``,
``setStatus``, with the drafts map); the end of showing an item; the key handling (a note takes typing, Escape
leaves it, Ctrl-Enter saves; ``?`` help; other keys go to the page's ``act``); and the start of loading the
queue from ``/api/queue``. Each page puts them in its own ``PAGE`` in order; nothing here is a page alone.
"""

from __future__ import annotations


def head(title: str) -> str:
    """From the doctype to the header's style (the ``<style>`` stays open)."""
    return """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>""" + title + """</title>
""" + _HEAD_STYLE


_HEAD_STYLE = """<meta name="viewport" content="width=device-width, initial-scale=1">
<style nonce="__NONCE__">
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1f2328;background:#f6f8fa;padding-bottom:9em}
header{position:sticky;top:0;z-index:2;background:#24292f;color:#fff;padding:.5em 1em;display:flex;gap:1.5em;
 align-items:baseline;flex-wrap:wrap}
header b{font-size:1.1em} #progress{margin-left:auto;font-weight:600}
"""

BAR_STYLE = """\
#bar{position:fixed;bottom:0;left:0;right:0;background:#fff;border-top:2px solid #24292f;padding:.5em 1em;
 display:flex;flex-wrap:wrap;gap:.4em 1.2em;align-items:center;z-index:2}
.group{display:flex;gap:.3em;align-items:center}
button{font:inherit;border:1px solid #8c959f;background:#f6f8fa;border-radius:4px;padding:.15em .55em;cursor:pointer}
button.on{background:#0969da;color:#fff;border-color:#0969da}
button kbd,.help kbd{font:12px ui-monospace,monospace;background:#eaeef2;color:#1f2328;border-radius:3px;padding:0 .3em}
#note{font:inherit;width:22em;height:2.4em}
#status{font-weight:600}#status.error{color:#cf222e}#saved{color:#57606a}
#help{position:fixed;inset:10% 20%;background:#fff;border:2px solid #24292f;border-radius:8px;padding:1em 2em;
 z-index:3;overflow:auto;display:none}#help.open{display:block}
@media (max-width:900px){main{grid-template-columns:1fr}}
</style></head>
<body>
"""
"""The bottom bar, buttons, note, status and help dialog; closes the head and opens the body."""

HELPERS = """const drafts = {};
const $ = (id) => document.getElementById(id);
function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
function setStatus(text, error) { $("status").textContent = text; $("status").className = error ? "error" : ""; }
"""

SHOWN = """  shownAt = Date.now();
  window.scrollTo(0, 0);
  setStatus("");
  renderForm();
}
"""
"""The end of ``show``: the time starts, the page scrolls up, the form is drawn."""


def keys(items: str) -> str:
    """The keydown and note handlers; ``items`` names the queue's list (``Q.tasks``, ``Q.items``)."""
    return """document.addEventListener("keydown", (ev) => {
  if (!Q || !Q.""" + items + """.length) return;
""" + _KEYS


_KEYS = """  if (ev.target === $("note")) {
    if (ev.key === "Escape") { ev.preventDefault(); $("note").blur(); }
    else if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); $("note").blur(); save(); }
    return;
  }
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
  if ($("help").classList.contains("open")) {
    if (ev.key === "Escape" || ev.key === "?") { ev.preventDefault(); toggleHelp(false); }
    return;
  }
  if (act(ev.key.length === 1 ? ev.key.toLowerCase() : ev.key)) ev.preventDefault();
});
$("note").addEventListener("input", () => { if (Q) { draft().note = $("note").value; renderForm(); } });
"""

LOAD = """async function load() {
  let response;
  try {
    response = await fetch("/api/queue");
    Q = await response.json();
  } catch (e) { setStatus("could not load the queue (" + e + ")", true); return; }
  if (!response.ok) { setStatus("could not load the queue: " + Q.error, true); Q = null; return; }
"""
"""The start of ``load``: the queue fetched into ``Q``, or the status says why not."""

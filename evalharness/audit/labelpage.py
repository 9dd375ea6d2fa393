"""The labelling page (``labelserve``): one HTML document with its style and script inline, nothing from elsewhere.

The page loads the queue from ``/api/queue`` and writes every piece of task text with ``textContent`` (never
as HTML). ``__NONCE__`` is replaced by the server's per-start nonce, which the Content-Security-Policy asks of
every script and style. Keys: b/c broken or clean, 0-3 severity, a family letter (``labelserve.FAMILY_KEYS``), t note,
Enter save (then the next unlabelled task), n/p next/previous, x raw evidence open/closed, ? help. A task's
findings (probes' and investigator's, ordered and summarised by the server: ``labelsummary``) show as one list,
flagged first, each a line; the full reason and the raw evidence are folded away in a ``<details>``.
"""

from evalharness import localpage

PAGE = localpage.head("evalharness labels") + """main{display:grid;grid-template-columns:1fr 1fr;gap:1em;padding:1em}main>div{min-width:0}
section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:.6em .9em;margin-bottom:1em;min-width:0}
h2{font-size:1em;margin:.2em 0 .5em;color:#57606a;text-transform:uppercase;letter-spacing:.04em}
#statement{white-space:pre-wrap;overflow-wrap:anywhere}
.code{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;overflow-wrap:anywhere;
 background:#f6f8fa;border-radius:4px;padding:.3em 0}
.line{padding:0 .6em}.add{background:#dafbe1;color:#116329}.del{background:#ffebe9;color:#82071e}
.hunk{background:#ddf4ff;color:#0550ae}.file{font-weight:700;color:#57606a}
.finding{border-left:4px solid #d0d7de;padding:.2em .6em;margin:.4em 0}
.oneline{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.finding summary{cursor:pointer;color:#57606a;font-size:.9em}#findings-line{font-weight:600;margin:.2em 0 .5em}
.finding.flagged{border-color:#cf222e}.finding.clean{border-color:#1a7f37}.finding.other{border-color:#9a6700}
.probe{font-weight:700}.empty{color:#6e7781;font-style:italic}.evkey{font-weight:600;margin-top:.3em}
""" + localpage.BAR_STYLE + """<header><b id="who">loading</b><span id="position"></span><code id="taskid"></code>
<span id="progress"></span><span>press <kbd>?</kbd> for keys</span></header>
<main>
 <div>
  <section><h2>Statement</h2><div id="statement"></div></section>
  <section><h2>Tests that must pass (FAIL_TO_PASS)</h2><ul id="f2p" class="code"></ul>
   <div id="p2p" class="empty"></div></section>
  <section><h2>Findings, flagged first</h2><div id="findings-line"></div><div id="findings"></div></section>
 </div>
 <div>
  <section><h2>Test patch</h2><div id="tests" class="code"></div></section>
  <section><h2>Gold patch</h2><div id="gold" class="code"></div></section>
 </div>
</main>
<div id="bar">
 <div class="group"><button data-key="b">broken <kbd>b</kbd></button>
  <button data-key="c">clean <kbd>c</kbd></button></div>
 <div class="group">severity <button data-key="0">0</button><button data-key="1">1</button>
  <button data-key="2">2</button><button data-key="3">3</button></div>
 <div class="group" id="families">family</div>
 <div class="group"><textarea id="note" placeholder="note (t to type, Esc to leave)"></textarea></div>
 <div class="group"><button data-key="Enter">save <kbd>Enter</kbd></button>
  <button data-key="p">prev <kbd>p</kbd></button>
  <button data-key="n">next <kbd>n</kbd></button></div>
 <span id="saved"></span><span id="status" role="status"></span>
</div>
<div id="help" class="help" role="dialog"><h2>Keys</h2><ul>
 <li><kbd>b</kbd> broken, <kbd>c</kbd> clean (clean sets severity 0 when none is chosen)</li>
 <li><kbd>0</kbd>-<kbd>3</kbd> severity: 0 no issue, 1 minor, 2 serious, 3 cannot be solved fairly</li>
 <li id="helpfamilies"></li>
 <li><kbd>t</kbd> write a note, <kbd>Esc</kbd> leave it, <kbd>Ctrl</kbd>+<kbd>Enter</kbd> save from it</li>
 <li><kbd>Enter</kbd> save and go to the next task you have not labelled</li>
 <li><kbd>n</kbd>/<kbd>p</kbd> (or arrows) next/previous task, <kbd>x</kbd> open or close the findings' raw evidence,
  <kbd>Space</kbd>/<kbd>Shift</kbd>+<kbd>Space</kbd> scroll</li>
 <li><kbd>?</kbd> or <kbd>Esc</kbd> close this help</li></ul>
 <p>You see only your own labels. A broken task needs a family and severity 1-3.</p></div>
<script nonce="__NONCE__">
"use strict";
let FAMILY_KEYS = {};
let Q = null, at = 0, shownAt = 0, evidenceOpen = false;
""" + localpage.HELPERS + """function diffInto(node, text) {
  clear(node);
  if (!text) { node.appendChild(el("div", "line empty", "(none)")); return; }
  for (const line of text.replace(/\\n$/, "").split("\\n")) {
    let cls = "";
    if (/^(diff --git |index |(---|\\+\\+\\+) (a\\/|b\\/|\\/dev\\/null))/.test(line)) cls = "file";
    else if (line.startsWith("@@")) cls = "hunk";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    node.appendChild(el("div", "line " + cls, line === "" ? " " : line));
  }
}
function findingInto(node, f) {
  const box = el("div", "finding " + (f.status !== "ok" ? "other" : f.flagged ? "flagged" : "clean"));
  const line = el("div", "oneline");
  line.title = f.summary;
  line.appendChild(el("span", "probe", f.title + " "));
  line.appendChild(el("span", "summary", f.summary));
  box.appendChild(line);
  const ev = f.evidence || {}, keys = Object.keys(ev);
  if (f.reason || keys.length) {
    const det = el("details");
    det.open = evidenceOpen;
    det.appendChild(el("summary", null, "raw evidence" + (keys.length ? ": " + keys.join(", ") : "")));
    if (f.reason) det.appendChild(el("p", "reason", f.reason));
    for (const k of keys) {
      det.appendChild(el("div", "evkey", k));
      const v = ev[k], code = el("div", "code");
      if (typeof v === "string" && /^(diff --git |--- |@@ )/m.test(v)) diffInto(code, v);
      else code.textContent = typeof v === "string" ? v : JSON.stringify(v, null, 2);
      det.appendChild(code);
    }
    box.appendChild(det);
  }
  node.appendChild(box);
}
function findingsInto(t) {
  const node = clear($("findings"));
  if (Q.findings_hidden) { $("findings-line").textContent = "hidden for this labelling pass"; return; }
  $("findings-line").textContent = t.findings_line + (t.findings.length ? "" : " (run evalharness audit first)");
  for (const f of t.findings) findingInto(node, f);
}
function draft() { return drafts[Q.tasks[at].task_id]; }
function same(a, b) {
  return a.broken === b.broken && a.severity === b.severity && (a.family || null) === (b.family || null)
    && (a.note || "") === (b.note || "");
}
function show(index) {
  const n = Q.tasks.length;
  at = ((index % n) + n) % n;
  const t = Q.tasks[at];
  $("taskid").textContent = t.task_id;
  $("position").textContent = "task " + (at + 1) + " of " + n;
  $("statement").textContent = t.statement;
  const f2p = clear($("f2p"));
  for (const name of t.fail_to_pass) f2p.appendChild(el("li", "line", name));
  $("p2p").textContent = "and " + t.pass_to_pass + " PASS_TO_PASS tests";
  diffInto($("tests"), t.test_patch);
  diffInto($("gold"), t.gold_patch);
  findingsInto(t);
  if (!(t.task_id in drafts)) {
    const empty = {broken: null, severity: null, family: null, note: ""};
    drafts[t.task_id] = Object.assign(empty, Q.labels[t.task_id] || {});
  }
  $("note").value = drafts[t.task_id].note;
""" + localpage.SHOWN + """function renderForm() {
  const t = Q.tasks[at], d = drafts[t.task_id], saved = Q.labels[t.task_id];
  for (const b of document.querySelectorAll("#bar button[data-key]")) {
    const k = b.dataset.key;
    b.classList.toggle("on", (k === "b" && d.broken === true) || (k === "c" && d.broken === false)
      || (/^[0-3]$/.test(k) && d.severity === Number(k)) || (k in FAMILY_KEYS && d.family === FAMILY_KEYS[k]));
  }
  $("progress").textContent = "you: " + Q.progress.labelled + " of " + Q.progress.total + " labelled";
  $("saved").textContent = !saved ? "not labelled yet" : same(d, saved) ? "saved" : "changed, not saved";
}
function nextUnlabelled() {
  for (let step = 1; step <= Q.tasks.length; step++) {
    const i = (at + step) % Q.tasks.length;
    if (!(Q.tasks[i].task_id in Q.labels)) return i;
  }
  return null;
}
async function save() {
  const t = Q.tasks[at], d = draft();
  d.note = $("note").value;
  const body = {task_id: t.task_id, broken: d.broken, severity: d.severity, family: d.family, note: d.note,
    seconds: (Date.now() - shownAt) / 1000};
  let response, data;
  try {
    response = await fetch("/api/labels", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify(body)});
    data = await response.json();
  } catch (e) { setStatus("not saved: the server did not answer (" + e + ")", true); return; }
  if (!response.ok) { setStatus("not saved: " + (data.error || response.status), true); return; }
  Q.labels[t.task_id] = data.label;
  Q.progress = data.progress;
  drafts[t.task_id] = Object.assign({}, data.label);
  const next = nextUnlabelled();
  if (next !== null) show(next); else renderForm();
  setStatus(next !== null ? "saved " + t.task_id : "saved; you have labelled every task");
}
function toggleHelp(open) { $("help").classList.toggle("open", open); }
function act(key) {
  const d = draft();
  if (key === "b") d.broken = true;
  else if (key === "c") { d.broken = false; if (d.severity === null) d.severity = 0; }
  else if (/^[0-3]$/.test(key)) d.severity = Number(key);
  else if (key in FAMILY_KEYS) d.family = d.family === FAMILY_KEYS[key] ? null : FAMILY_KEYS[key];
  else if (key === "n" || key === "ArrowRight") return show(at + 1), true;
  else if (key === "p" || key === "ArrowLeft") return show(at - 1), true;
  else if (key === "Enter") return save(), true;
  else if (key === "t") return $("note").focus(), true;
  else if (key === "x") {
    evidenceOpen = !evidenceOpen;
    for (const det of document.querySelectorAll("details")) det.open = evidenceOpen;
  } else if (key === "?") toggleHelp(true);
  else return false;
  renderForm();
  return true;
}
""" + localpage.keys("tasks") + localpage.LOAD + """  FAMILY_KEYS = Q.family_keys;
  document.title = "labels: " + Q.pack + " (" + Q.annotator + ")";
  $("who").textContent = Q.pack + " · " + Q.annotator;
  const families = $("families"), help = $("helpfamilies");
  help.appendChild(el("span", null, "family: "));
  for (const [key, name] of Object.entries(FAMILY_KEYS)) {
    const b = el("button", null, name.replace(/_/g, " ") + " ");
    b.dataset.key = key;
    b.appendChild(el("kbd", null, key));
    families.appendChild(b);
    help.appendChild(el("kbd", null, key));
    help.appendChild(el("span", null, " " + name + "  "));
  }
  for (const b of document.querySelectorAll("#bar button[data-key]")) {
    b.tabIndex = -1;
    b.addEventListener("click", () => { b.blur(); act(b.dataset.key); });
  }
  if (!Q.tasks.length) { setStatus("this pack has no tasks", true); return; }
  const first = Q.tasks.findIndex((t) => !(t.task_id in Q.labels));
  show(first < 0 ? 0 : first);
}
load();
</script></body></html>
"""

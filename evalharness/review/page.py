"""The review page (``serve``): one HTML document with its style and script inline, nothing from elsewhere.

The page loads the queue from ``/api/queue`` and builds everything with ``textContent`` (never as HTML); the
diff comes as ``[class, text]`` token pairs made on the server. ``__NONCE__`` is replaced by the server's
per-start nonce, which the Content-Security-Policy asks of every script and style. The time spent is measured
from the item shown to the save and is not editable. Keys: m/a/r merge, merge after changes, reject; 1-5 toggle
a reason; t note; Enter save (then the next item not reviewed by you); n/p next/previous; j trajectory; ? help.
"""

from evalharness import localpage

PAGE = localpage.head("evalharness review") + """main{display:grid;grid-template-columns:2fr 3fr;gap:1em;padding:1em}
section{background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:.6em .9em;margin-bottom:1em;min-width:0}
h2{font-size:1em;margin:.2em 0 .5em;color:#57606a;text-transform:uppercase;letter-spacing:.04em}
h3{font:600 13px ui-monospace,monospace;margin:.8em 0 .2em}
#statement{white-space:pre-wrap;overflow-wrap:anywhere}
.code{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;overflow-wrap:anywhere;
 background:#f6f8fa;border-radius:4px;padding:.3em 0}
.line{padding:0 .6em}.add{background:#dafbe1}.del{background:#ffebe9}.hunk{background:#ddf4ff;color:#0550ae}
.meta{color:#57606a;font-weight:700}
.k,.kd,.kn,.kr,.kc,.ow{color:#cf222e}.s,.s1,.s2,.sd,.sa,.se,.si{color:#0a3069}.c,.c1,.cm,.ch{color:#6e7781}
.nf,.nc,.fm{color:#8250df}.m,.mi,.mf{color:#0550ae}.nb,.bp{color:#953800}
.passed{color:#1a7f37}.failed,.error,.missing{color:#cf222e}
.empty{color:#6e7781;font-style:italic}
""" + localpage.BAR_STYLE + """<header><b id="who">loading</b><span id="position"></span><code id="itemid"></code>
<span id="progress"></span><span>press <kbd>?</kbd> for keys</span></header>
<main>
 <div>
  <section><h2>Task</h2><code id="taskid"></code><div id="statement"></div></section>
  <section><h2>Tests</h2><div id="tests"></div></section>
  <section id="trajsection"><h2>Trajectory</h2><details id="traj"><summary id="trajsum"></summary>
   <div id="trajbody"></div></details></section>
 </div>
 <div><section id="suspicioussection"><h2>Suspicious code: read these lines first</h2>
  <ul class="code" id="suspicious"></ul></section>
  <section><h2>Patch</h2><div id="files"></div></section></div>
</main>
<div id="bar">
 <div class="group" id="verdicts"></div>
 <div class="group" id="reasons"></div>
 <div class="group"><textarea id="note" placeholder="note (t to type, Esc to leave)"></textarea></div>
 <div class="group"><button data-key="Enter">save <kbd>Enter</kbd></button>
  <button data-key="p">prev <kbd>p</kbd></button><button data-key="n">next <kbd>n</kbd></button></div>
 <span id="saved"></span><span id="status" role="status"></span>
</div>
<div id="help" class="help" role="dialog"><h2>Keys</h2><ul>
 <li><kbd>m</kbd> merge, <kbd>a</kbd> merge after changes, <kbd>r</kbd> reject</li>
 <li id="helpreasons"></li>
 <li><kbd>t</kbd> write a note, <kbd>Esc</kbd> leave it, <kbd>Ctrl</kbd>+<kbd>Enter</kbd> save from it</li>
 <li><kbd>Enter</kbd> save and go to the next patch you have not reviewed</li>
 <li><kbd>n</kbd>/<kbd>p</kbd> (or arrows) next/previous patch, <kbd>j</kbd> open or close the trajectory,
  <kbd>Space</kbd>/<kbd>Shift</kbd>+<kbd>Space</kbd> scroll</li>
 <li><kbd>?</kbd> or <kbd>Esc</kbd> close this help</li></ul>
 <p>Would a maintainer merge this patch as it is? Reject and merge-after-changes need at least one reason.
 You see only your own reviews; who made a patch is hidden. The time from showing a patch to saving is
 recorded.</p></div>
<script nonce="__NONCE__">
"use strict";
let Q = null, at = 0, shownAt = 0;
""" + localpage.HELPERS + """function filesInto(node, files) {
  clear(node);
  if (!files.length) { node.appendChild(el("p", "empty", "(empty patch)")); return; }
  for (const f of files) {
    node.appendChild(el("h3", "file", f.path));
    const code = el("div", "code");
    for (const line of f.lines) {
      const div = el("div", "line " + line.kind);
      for (const [cls, text] of line.tokens) div.appendChild(el("span", cls || null, text));
      code.appendChild(div);
    }
    node.appendChild(code);
  }
}
function suspiciousInto(node, found) {
  clear(node);
  $("suspicioussection").hidden = !found.length;
  for (const f of found) {
    const li = el("li", "line");
    li.appendChild(el("span", "meta", f.path + ":" + f.line));
    li.appendChild(el("span", "failed", "  [" + f.reason + "]  "));
    li.appendChild(el("span", null, f.text));
    node.appendChild(li);
  }
}
function testsInto(node, tests) {
  clear(node);
  for (const list of ["FAIL_TO_PASS", "PASS_TO_PASS"]) {
    const names = Object.keys(tests[list] || {});
    const passed = names.filter((n) => tests[list][n] === "passed").length;
    node.appendChild(el("h3", null, list + ": " + passed + " of " + names.length + " passed"));
    const ul = el("ul", "code");
    for (const n of names) {
      const li = el("li", "line");
      li.appendChild(el("span", tests[list][n], tests[list][n]));
      li.appendChild(el("span", null, " " + n));
      ul.appendChild(li);
    }
    node.appendChild(ul);
  }
}
function trajectoryInto(t) {
  const body = clear($("trajbody"));
  if (!t) { $("trajsum").textContent = "(none)"; return; }
  $("trajsum").textContent = t.steps + " steps, " + t.model_calls + " model calls, " + t.commands.length
    + " commands";
  const ul = el("ul", "code");
  for (const c of t.commands) ul.appendChild(el("li", "line", c));
  if (t.more_commands) ul.appendChild(el("li", "line empty", "and " + t.more_commands + " more"));
  body.appendChild(ul);
  body.appendChild(el("h3", null, "final message"));
  body.appendChild(el("div", "code", t.final_message || "(none)"));
}
function draft() { return drafts[Q.items[at].item_id]; }
function same(a, b) {
  return a.verdict === b.verdict && a.reasons.join() === b.reasons.join() && (a.note || "") === (b.note || "");
}
function show(index) {
  const n = Q.items.length;
  at = ((index % n) + n) % n;
  const item = Q.items[at];
  $("itemid").textContent = item.item_id;
  $("position").textContent = "patch " + (at + 1) + " of " + n;
  $("taskid").textContent = item.task_id;
  $("statement").textContent = item.statement;
  testsInto($("tests"), item.tests);
  filesInto($("files"), item.files);
  suspiciousInto($("suspicious"), item.suspicious || []);
  $("trajsection").hidden = !Q.trajectories;
  if (Q.trajectories) trajectoryInto(item.trajectory);
  if (!(item.item_id in drafts)) {
    const saved = Q.reviews[item.item_id];
    drafts[item.item_id] = saved ? {verdict: saved.verdict, reasons: saved.reasons.slice(), note: saved.note}
      : {verdict: null, reasons: [], note: ""};
  }
  $("note").value = drafts[item.item_id].note;
""" + localpage.SHOWN + """function renderForm() {
  const item = Q.items[at], d = drafts[item.item_id], saved = Q.reviews[item.item_id];
  for (const b of document.querySelectorAll("#bar button[data-key]")) {
    const k = b.dataset.key;
    b.classList.toggle("on", (k in Q.verdict_keys && d.verdict === Q.verdict_keys[k])
      || (k in Q.reason_keys && d.reasons.includes(Q.reason_keys[k])));
  }
  $("progress").textContent = "you: " + Q.progress.reviewed + " of " + Q.progress.total + " reviewed";
  $("saved").textContent = !saved ? "not reviewed yet" : same(d, saved) ? "saved" : "changed, not saved";
}
function nextUnreviewed() {
  for (let step = 1; step <= Q.items.length; step++) {
    const i = (at + step) % Q.items.length;
    if (!(Q.items[i].item_id in Q.reviews)) return i;
  }
  return null;
}
async function save() {
  const item = Q.items[at], d = draft();
  d.note = $("note").value;
  const body = {item_id: item.item_id, verdict: d.verdict, reasons: d.reasons, note: d.note,
    seconds: (Date.now() - shownAt) / 1000};
  let response, data;
  try {
    response = await fetch("/api/reviews", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify(body)});
    data = await response.json();
  } catch (e) { setStatus("not saved: the server did not answer (" + e + ")", true); return; }
  if (!response.ok) { setStatus("not saved: " + (data.error || response.status), true); return; }
  Q.reviews[item.item_id] = data.review;
  Q.progress = data.progress;
  drafts[item.item_id] = {verdict: data.review.verdict, reasons: data.review.reasons.slice(), note: data.review.note};
  const next = nextUnreviewed();
  if (next !== null) show(next); else renderForm();
  setStatus(next !== null ? "saved " + item.item_id : "saved; you have reviewed every patch");
}
function toggleHelp(open) { $("help").classList.toggle("open", open); }
function act(key) {
  const d = draft();
  if (key in Q.verdict_keys) {
    d.verdict = Q.verdict_keys[key];
    if (d.verdict === "merge") d.reasons = [];
  } else if (key in Q.reason_keys) {
    const code = Q.reason_keys[key], i = d.reasons.indexOf(code);
    if (i >= 0) d.reasons.splice(i, 1); else d.reasons.push(code);
    d.reasons.sort((x, y) => Object.keys(Q.reasons).indexOf(x) - Object.keys(Q.reasons).indexOf(y));
  }
  else if (key === "n" || key === "ArrowRight") return show(at + 1), true;
  else if (key === "p" || key === "ArrowLeft") return show(at - 1), true;
  else if (key === "Enter") return save(), true;
  else if (key === "t") return $("note").focus(), true;
  else if (key === "j") $("traj").open = !$("traj").open;
  else if (key === "?") toggleHelp(true);
  else return false;
  renderForm();
  return true;
}
""" + localpage.keys("items") + """function button(group, key, label) {
  const b = el("button", null, label + " ");
  b.dataset.key = key;
  b.appendChild(el("kbd", null, key));
  group.appendChild(b);
}
""" + localpage.LOAD + """  document.title = "review (" + Q.reviewer + ")";
  $("who").textContent = "review · " + Q.reviewer;
  for (const [key, verdict] of Object.entries(Q.verdict_keys)) button($("verdicts"), key, verdict.replace(/_/g, " "));
  const help = $("helpreasons");
  help.appendChild(el("span", null, "reasons (toggle): "));
  for (const [key, code] of Object.entries(Q.reason_keys)) {
    button($("reasons"), key, Q.reasons[code]);
    help.appendChild(el("kbd", null, key));
    help.appendChild(el("span", null, " " + Q.reasons[code] + "  "));
  }
  for (const b of document.querySelectorAll("#bar button[data-key]")) {
    b.tabIndex = -1;
    b.addEventListener("click", () => { b.blur(); act(b.dataset.key); });
  }
  if (!Q.items.length) { setStatus("nothing to review: no trial of these runs left a patch", true); return; }
  const first = Q.items.findIndex((item) => !(item.item_id in Q.reviews));
  show(first < 0 ? 0 : first);
}
load();
</script></body></html>
"""

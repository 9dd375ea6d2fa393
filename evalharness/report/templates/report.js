"use strict";
// The report's views (see evalharness/report/html.py): the trial index is parsed once; a trial's details are
// decoded from its gzip+base64 chunk when it is opened. Every text from the run goes in through textContent.
(function () {
  const INDEX = JSON.parse(document.getElementById("index").textContent);
  const F = {};
  INDEX.fields.forEach((name, i) => { F[name] = i; });
  const T = INDEX.trials;
  const view = document.getElementById("view"), body = document.getElementById("view-body");
  const crumbs = document.getElementById("crumbs");
  const cache = new Map();
  const LIST_LIMIT = 500;

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") e.textContent = v; else if (k === "cls") e.className = v; else e.setAttribute(k, v);
    }
    for (const kid of kids) if (kid !== null && kid !== undefined) e.append(kid);
    return e;
  }
  const enc = encodeURIComponent;
  const pct = (x) => (x === null || x === undefined ? "n/a" : (100 * x).toFixed(1) + "%");
  const money = (x) => (x === null || x === undefined ? "unknown" : "$" + Number(x).toFixed(4));
  function outcomeClass(o, infra) { return infra ? "o-infra" : "o-" + String(o); }

  function trialLink(i) {
    const t = T[i];
    return el("a", { href: "#trial/" + i, text: t[F.task_id] + " seed " + t[F.seed] });
  }

  function trialTable(indices, limit) {
    const head = el("tr", {}, ...["trial", "configuration", "outcome", "reason", "cost", "flags", "merged"]
      .map((h) => el("th", { text: h })));
    const tbody = el("tbody");
    const shown = indices.slice(0, limit);
    for (const i of shown) {
      const t = T[i];
      tbody.append(el("tr", {}, el("td", {}, trialLink(i)), el("td", { text: t[F.config] }),
        el("td", { cls: outcomeClass(t[F.outcome], t[F.infra]), text: t[F.outcome] }),
        el("td", { text: t[F.reason] || "" }), el("td", { text: money(t[F.cost_usd]) }),
        el("td", { text: (t[F.flags] || []).join(", ") }),
        el("td", { text: t[F.merged] === null || t[F.merged] === undefined ? "not reviewed" : pct(t[F.merged]) })));
    }
    const wrap = el("div", { cls: "scroll" }, el("table", { cls: "trials" }, el("thead", {}, head), tbody));
    if (indices.length > shown.length) {
      const more = el("button", { cls: "more", text: "show all " + indices.length + " trials" });
      more.addEventListener("click", () => wrap.replaceWith(trialTable(indices, indices.length)));
      wrap.append(el("p", { cls: "note", text: "first " + shown.length + " of " + indices.length + " trials" }), more);
    }
    return wrap;
  }

  function summary(indices) {
    const usable = indices.filter((i) => !T[i][F.infra] && T[i][F.outcome] !== "task_error"
      && T[i][F.outcome] !== "verifier_error");
    const solved = usable.filter((i) => T[i][F.resolved]).length;
    return indices.length + " trials, " + usable.length + " usable, " + solved + " resolved" +
      (indices.length - usable.length ? " (" + (indices.length - usable.length) +
        " infrastructure failures or task errors, left out of rates)" : "");
  }

  function showConfig(config) {
    const ids = [];
    for (let i = 0; i < T.length; i++) if (T[i][F.config] === config) ids.push(i);
    open("configuration " + config, el("h2", { text: "Trials of " + config }),
      el("p", { cls: "note", text: summary(ids) }), trialTable(ids, LIST_LIMIT));
  }

  function showCell(config, task) {
    const ids = [];
    for (let i = 0; i < T.length; i++) if (T[i][F.config] === config && T[i][F.task_id] === task) ids.push(i);
    open(config + " × " + task, el("h2", { text: task + " × " + config }),
      el("p", { cls: "note", text: summary(ids) }), trialTable(ids, LIST_LIMIT));
  }

  function showPair(n) {
    const c = INDEX.comparisons[n];
    if (!c) return open("comparison", el("p", { text: "no comparison " + n }));
    const h = INDEX.heat, a = h.configs.indexOf(c.config), b = h.configs.indexOf(c.reference);
    const rows = [];
    h.tasks.forEach((task, t) => {
      const x = h.cells[t][a], y = h.cells[t][b];
      if (x && y && x[1] && y[1]) rows.push([task, x, y, x[0] / x[1] - y[0] / y[1]]);
    });
    rows.sort((p, q) => q[3] - p[3] || (p[0] < q[0] ? -1 : 1));
    const cellLink = (config, task, v) => el("a", { href: "#trials/cell/" + enc(config) + "/" + enc(task),
      text: v[0] + "/" + v[1] });
    const tbody = el("tbody");
    for (const [task, x, y, d] of rows) {
      tbody.append(el("tr", {}, el("td", { text: task }), el("td", {}, cellLink(c.config, task, x)),
        el("td", {}, cellLink(c.reference, task, y)), el("td", { text: (d >= 0 ? "+" : "") + (100 * d).toFixed(1) })));
    }
    const head = el("tr", {}, ...["task", c.config, c.reference, "difference, pts"].map((t) => el("th", { text: t })));
    const diff = c.diff === null ? "n/a" : (100 * c.diff).toFixed(1) + " pts";
    open("comparison " + c.config + " − " + c.reference,
      el("h2", { text: c.config + " − " + c.reference + ": paired tasks" }),
      el("p", { cls: "note", text: rows.length + " shared tasks; difference " + diff + " (interval [" +
        (c.ci_low === null ? "n/a" : (100 * c.ci_low).toFixed(1)) + ", " +
        (c.ci_high === null ? "n/a" : (100 * c.ci_high).toFixed(1)) + "]); tasks with the largest difference first" }),
      el("div", { cls: "scroll" }, el("table", {}, el("thead", {}, head), tbody)));
  }

  async function chunk(n) {
    if (cache.has(n)) return cache.get(n);
    const node = document.getElementById("chunk-" + n);
    if (!node) throw new Error("chunk " + n + " is not in the page");
    const bin = atob(node.textContent.trim());
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    const data = JSON.parse(await new Response(stream).text());
    cache.set(n, data);
    return data;
  }

  function missing(part) { return el("p", { cls: "cut", text: part.missing }); }

  function cutNote(part, what) {
    if (!part.cut) return null;
    return el("p", { cls: "cut", text: what + ": " + part.cut.toLocaleString() + " of " + part.size.toLocaleString() +
      " characters not shown (cut at the " + part.where + "); the trial folder has the whole file" });
  }

  function diffBlock(text) {
    const pre = el("pre", { cls: "diff", id: "patch" });
    for (const line of text.split("\n")) {
      let cls = "";
      if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff --git")) cls = "file";
      else if (line.startsWith("+")) cls = "add";
      else if (line.startsWith("-")) cls = "del";
      else if (line.startsWith("@@")) cls = "hunk";
      pre.append(el("div", { cls: cls, text: line }));
    }
    return pre;
  }

  function meta(pairs) {
    const dl = el("dl", { cls: "meta" });
    for (const [k, v] of pairs) if (v !== null && v !== undefined && v !== "") dl.append(el("dt", { text: k }), el("dd", {}, v));
    return dl;
  }

  function resultPart(r) {
    if (r.missing) return missing(r);
    const g = r.grade || {};
    const tests = Object.entries(g.tests || {}).map(([k, v]) => k + " " + v).join(", ") || "none recorded";
    const out = [meta([["outcome", r.outcome], ["reason", r.reason], ["exit status", r.exit_status],
      ["attempts", r.attempts === null ? "" : String(r.attempts)], ["error", r.error],
      ["flags", (r.flags || []).join(", ") || "none"], ["grader", g.reason],
      ["patch applied", g.patch_applied === null || g.patch_applied === undefined ? "" : String(g.patch_applied)],
      ["test exit code", g.test_exit_code === null || g.test_exit_code === undefined ? "" : String(g.test_exit_code)],
      ["tests", tests], ["grader flags", (g.flags || []).join(", ")]])];
    if (g.n_failing) {
      out.push(el("h4", { text: "Failing tests (" + g.n_failing + ")" }),
        el("pre", { text: g.failing.join("\n") + (g.n_failing > g.failing.length ? "\n[... " +
          (g.n_failing - g.failing.length) + " more]" : "") }));
    }
    if ((r.suspicious || []).length) {
      out.push(el("h4", { text: "Suspicious code (" + r.suspicious.length + " added lines)" }), el("pre", {
        cls: "suspicious", text: r.suspicious.map((f) => f.path + ":" + f.line + "  [" + f.reason + "]  " + f.text).join("\n") }));
    }
    if ((g.evidence || []).length) out.push(el("h4", { text: "Integrity evidence" }), el("pre", { text: g.evidence.join("\n") }));
    if ((g.surface || []).length) {
      out.push(el("h4", { text: "Files the patch touched" }), el("pre", {
        text: g.surface.map((s) => [s.change, s.path, s.action, s.flag, s.why].filter(Boolean).join("  ")).join("\n") }));
    }
    return out;
  }

  function trajectoryPart(tr) {
    if (tr.missing) return [missing(tr)];
    const out = [el("p", { cls: "note", text: tr.n_steps + " steps" + (tr.exit_status ? ", exit status " + tr.exit_status : "") })];
    tr.steps.forEach((s, k) => {
      if (tr.omitted && k === tr.omitted_after) out.push(el("p", { cls: "cut", text: "[" + tr.omitted + " steps not shown]" }));
      const box = el("div", { cls: "step" }, el("h4", { text: "#" + (s.index ?? k) + " " + s.kind +
        (s.duration_s ? " (" + Number(s.duration_s).toFixed(1) + " s)" : "") +
        (s.exit_code !== undefined && s.exit_code !== null ? ", exit " + s.exit_code : "") + (s.timed_out ? ", timed out" : "") }));
      for (const key of ["thought", "tool_calls", "command", "output", "note"]) {
        if (s[key]) box.append(el("div", { cls: "note", text: key }), el("pre", { text: s[key] }));
      }
      out.push(box);
    });
    return out;
  }

  async function showTrial(i) {
    const t = T[i];
    if (!t) return open("trial", el("p", { text: "no trial " + i + " in this report" }));
    const head = [el("h2", { text: t[F.task_id] + " · " + t[F.config] + " · seed " + t[F.seed] }),
      meta([["run", t[F.run_id]], ["trial", t[F.trial_id]],
        ["outcome", el("span", { cls: outcomeClass(t[F.outcome], t[F.infra]), text: t[F.outcome] })],
        ["reason", t[F.reason]], ["cost", money(t[F.cost_usd])], ["flags", (t[F.flags] || []).join(", ") || "none"],
        ["merged", t[F.merged] === null || t[F.merged] === undefined ? "not reviewed" : pct(t[F.merged])],
        ["open it", "evalharness show " + t[F.detail]]]),
      el("p", {}, el("a", { href: "#trials/cell/" + enc(t[F.config]) + "/" + enc(t[F.task_id]),
        text: "all seeds of this task and configuration" }))];
    const slot = el("div", {}, el("p", { cls: "note", text: "decoding the trial's files…" }));
    open("trial " + t[F.trial_id], ...head, slot);
    let d;
    try {
      d = (await chunk(Math.floor(i / INDEX.chunk)))[i % INDEX.chunk];
    } catch (err) {
      slot.replaceChildren(el("p", { cls: "warning", text: "could not decode this trial's details: " + err +
        " (the page needs a browser with DecompressionStream)" }));
      return;
    }
    if (d.missing) { slot.replaceChildren(missing(d)); document.documentElement.dataset.trial = String(i); return; }
    const parts = [el("h3", { text: "Patch" })];
    if (d.patch.missing) parts.push(missing(d.patch));
    else if (!d.patch.text.trim()) parts.push(el("p", { cls: "note", id: "patch", text: "the patch is empty: the agent changed nothing" }));
    else parts.push(cutNote(d.patch, "patch"), diffBlock(d.patch.text));
    parts.push(el("h3", { text: "Outcome and integrity" }), ...[].concat(resultPart(d.result)));
    parts.push(el("h3", { text: "Test output (tail)" }));
    if (d.test_output.missing) parts.push(missing(d.test_output));
    else parts.push(cutNote(d.test_output, "test output"), el("pre", { id: "test-output", text: d.test_output.text }));
    if (d.results_jsonl && d.results_jsonl.size) {
      parts.push(el("p", { cls: "note", text: "results.jsonl (per-test events, " + d.results_jsonl.size.toLocaleString() +
        " bytes) is in the trial folder, not in the page" }));
    }
    parts.push(el("h3", { text: "Trajectory" }), ...trajectoryPart(d.trajectory));
    parts.push(el("h3", { text: "trial.log (tail)" }));
    parts.push(d.log.missing ? missing(d.log) : el("pre", { text: d.log.text }));
    slot.replaceChildren(...parts.filter(Boolean));
    document.documentElement.dataset.trial = String(i);
  }

  function open(title, ...kids) {
    crumbs.textContent = title;
    body.replaceChildren(...kids);
    view.hidden = false;
    view.scrollTop = 0;
  }

  function route() {
    const h = location.hash.slice(1);
    const parts = h.split("/").map(decodeURIComponent);
    if (parts[0] === "trials" && parts[1] === "config") return showConfig(parts[2]);
    if (parts[0] === "trials" && parts[1] === "cell") return showCell(parts[2], parts[3]);
    if (parts[0] === "pair") return showPair(Number(parts[1]));
    if (parts[0] === "trial") return showTrial(Number(parts[1]));
    view.hidden = true;
  }

  window.addEventListener("hashchange", route);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !view.hidden) { history.pushState(null, "", location.pathname + location.search); view.hidden = true; }
  });
  document.getElementById("close").addEventListener("click", (e) => {
    e.preventDefault();
    history.pushState(null, "", location.pathname + location.search);
    view.hidden = true;
  });
  document.getElementById("status").textContent = T.length + " trials in this page (the limits on what a trial shows are at the end).";
  route();
  performance.mark("report-ready");
  window.reportReady = performance.now();
  document.documentElement.dataset.ready = "1";
})();

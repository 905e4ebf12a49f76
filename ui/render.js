/*
  Thoughtline's process renderer: draws a stored reasoning sequence (every thought in order,
  branches as lanes, revisions linked both ways, earlier steps collapsed) from the history
  tool's shape ({sequence, thoughts}). One source for two documents: the MCP App card
  (ui/process.html, where the server inlines it) and the library pages (/library/assets/library.js).
  Thought text only ever becomes DOM text nodes, never markup.
*/
const ThoughtlineRender = (() => {
  "use strict";
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function chip(kind, text, lane) {
    const node = el("span", `chip ${kind}`, text);
    if (lane !== undefined) node.style.setProperty("--lane", `var(--lane-${lane})`);
    return node;
  }
  // A thought's thread event (SPEC §5.3), e.g. "blocker_cleared" → "blocker cleared"; "" when none.
  function eventLabel(value) {
    return typeof value === "string" && /^[a-z_]{1,32}$/.test(value) ? value.replace(/_/g, " ") : "";
  }
  // Clients send numbers and booleans as strings too ("3", "false"); the server accepts both.
  function int(value) {
    const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value;
    return Number.isInteger(n) ? n : null;
  }
  function bool(value) {
    if (value === true || value === "true") return true;
    if (value === false || value === "false") return false;
    return null;
  }

  // Thought text: paragraphs, ``` fenced blocks and `code spans`. Built as DOM nodes with
  // textContent only, so nothing in a thought is ever interpreted as markup.
  function renderText(text, into) {
    into.textContent = "";
    const lines = String(text == null ? "" : text).replace(/\r\n?/g, "\n").split("\n");
    let para = [];
    let code = null;
    const flushPara = () => {
      if (para.length) into.append(inline(para.join("\n"), el("p")));
      para = [];
    };
    for (const line of lines) {
      if (/^\s*```/.test(line)) {
        if (code === null) { flushPara(); code = []; }
        else { into.append(el("pre", "", code.join("\n"))); code = null; }
      } else if (code !== null) {
        code.push(line);
      } else if (line.trim() === "") {
        flushPara();
      } else {
        para.push(line);
      }
    }
    if (code !== null) into.append(el("pre", "", code.join("\n")));
    flushPara();
    return into;
  }
  function inline(text, into) {
    const parts = text.split(/(`[^`\n]+`)/);
    for (const part of parts) {
      if (part.length > 2 && part.startsWith("`") && part.endsWith("`")) into.append(el("code", "", part.slice(1, -1)));
      else if (part) into.append(document.createTextNode(part));
    }
    return into;
  }

  function renderProcess(section, sequence, thoughts, partial) {
    section.textContent = "";
    const branches = branchLanes(sequence, thoughts);
    const byIndex = new Map(thoughts.map((t) => [t.index, t]));
    const revisedBy = new Map();
    const forksAt = new Map();
    for (const t of thoughts) {
      const target = int(t.revisesIndex);
      if (bool(t.isRevision) && target !== null) (revisedBy.get(target) || revisedBy.set(target, []).get(target)).push(t);
    }
    for (const [id, b] of branches) {
      if (b.forkIndex !== null) (forksAt.get(b.forkIndex) || forksAt.set(b.forkIndex, []).get(b.forkIndex)).push(id);
    }
    const revisions = thoughts.filter((t) => bool(t.isRevision)).length;

    section.append(el("h2", "", "The whole process"));
    const parts = [`${thoughts.length} thought${thoughts.length === 1 ? "" : "s"}`];
    if (branches.size) parts.push(`${branches.size} branch${branches.size === 1 ? "" : "es"}`);
    if (revisions) parts.push(`${revisions} revision${revisions === 1 ? "" : "s"}`);
    if (partial) parts.push("one page of a longer history");
    const line = el("p", "summary-line", parts.join(" · "));
    if (typeof sequence.title === "string" && sequence.title) line.title = sequence.title;
    section.append(line);

    const list = el("ol", "steps");
    list.setAttribute("aria-label", "Thoughts in the order they were written");
    const steps = new Map();
    const tools = el("div", "tools");
    for (const [label, open] of [["Expand all", true], ["Collapse all", false]]) {
      const b = el("button", "btn", label);
      b.type = "button";
      b.addEventListener("click", () => { for (const d of list.querySelectorAll("details")) d.open = open; });
      tools.append(b);
    }
    section.append(tools);

    const jump = (index) => {
      const li = steps.get(index);
      if (!li) return;
      const details = li.querySelector("details");
      details.open = true;
      li.scrollIntoView({ block: "nearest" });
      details.querySelector("summary").focus({ preventScroll: true });
      li.classList.remove("flash");
      void li.offsetWidth;  // restart the highlight animation
      li.classList.add("flash");
    };
    const linkTo = (index, text) => {
      const b = el("button", "link", text);
      b.type = "button";
      b.dataset.target = String(index);
      b.addEventListener("click", () => jump(index));
      return b;
    };
    const describe = (t) => `thought ${t.thoughtNumber}${t.branchId ? ` on ${t.branchId}` : ""} (#${t.index})`;

    const seenBranch = new Set();
    const last = thoughts.length ? thoughts[thoughts.length - 1].index : null;
    for (const t of thoughts) {
      const branchId = typeof t.branchId === "string" && t.branchId ? t.branchId : null;
      const lane = branchId ? branches.get(branchId) : null;
      if (lane && !seenBranch.has(branchId)) {
        seenBranch.add(branchId);
        list.append(forkRow(branchId, lane, byIndex, linkTo));
      }
      const li = el("li", "step");
      li.dataset.index = String(t.index);
      li.dataset.branch = branchId || "main";
      li.dataset.depth = String(lane ? lane.depth : 0);
      paintLane(li, lane);
      if (revisedBy.has(t.index)) li.classList.add("revised");

      const details = el("details");
      details.open = t.index === last;
      const summary = el("summary");
      summary.append(el("span", "ord", `#${t.index}`));
      summary.append(el("span", "num", `${t.thoughtNumber}/${t.totalThoughts}`));
      if (branchId) summary.append(chip("branch", branchId, lane ? lane.color : 1));
      if (lane && lane.depth > MAX_INDENT) summary.append(chip("depth", `level ${lane.depth}`));
      if (bool(t.isRevision)) summary.append(chip("revision", `revises ${t.revisesThought}`));
      if (revisedBy.has(t.index)) summary.append(chip("revised", "revised"));
      if (eventLabel(t.event)) summary.append(chip("event", eventLabel(t.event)));
      if (bool(t.nextThoughtNeeded) === false) summary.append(chip("final", "final"));
      summary.append(inline(String(t.thought || "").replace(/\s+/g, " ").trim(), el("span", "preview")));
      details.append(summary);

      const body = el("div", "body");
      renderText(t.thought, body.appendChild(el("div", "text")));
      const refs = el("div", "refs");
      const target = int(t.revisesIndex);
      if (bool(t.isRevision) && target !== null && byIndex.has(target)) refs.append(linkTo(target, `Revises ${describe(byIndex.get(target))}`));
      for (const r of revisedBy.get(t.index) || []) refs.append(linkTo(r.index, `Revised by ${describe(r)}`));
      for (const id of forksAt.get(t.index) || []) {
        const first = thoughts.find((x) => x.branchId === id);
        if (first) refs.append(linkTo(first.index, `Branch ${id} forks here`));
      }
      if (bool(t.reopened)) refs.append(el("span", "chip", "reopened the sequence"));
      if (refs.childNodes.length) body.append(refs);
      details.append(body);
      li.append(details);
      steps.set(t.index, li);
      list.append(li);
    }
    section.append(list);
    const stored = int(sequence.thoughtHistoryLength);
    if (!partial && stored !== null && stored !== thoughts.length) {
      section.append(el("p", "notice", `The server reports ${stored} thoughts; ${thoughts.length} were returned.`));
    }
  }

  function forkRow(branchId, lane, byIndex, linkTo) {
    const li = el("li", "fork");
    li.dataset.branch = branchId;
    li.dataset.forkIndex = lane.forkIndex === null ? "" : String(lane.forkIndex);
    paintLane(li, lane);
    li.append(el("span", "forkmark", `↳ ${branchId}`));
    if (lane.depth > MAX_INDENT) li.append(" ", chip("depth", `level ${lane.depth}`));
    const parent = lane.parentBranchId || "main";
    const from = lane.forkIndex !== null ? byIndex.get(lane.forkIndex) : null;
    li.append(document.createTextNode(` forks from ${parent}${lane.branchFromThought ? ` at thought ${lane.branchFromThought}` : ""} · `));
    if (from) li.append(linkTo(from.index, `show #${from.index}`));
    return li;
  }

  // A sequence may chain up to 100 branches, each forked from the last: one indent per level put
  // a deep thought's text past the card's edge, in a column of zero width. Past MAX_INDENT levels
  // a row keeps the rails of its nearest MAX_INDENT + 1 lanes, stops moving right, and says its
  // depth in a "level N" label instead.
  const MAX_INDENT = 6;

  function paintLane(li, lane) {
    const colors = (lane ? lane.rails : [0]).slice(-(MAX_INDENT + 1));
    li.style.setProperty("--depth", String(colors.length - 1));
    li.style.setProperty("--lane", `var(--lane-${colors[colors.length - 1]})`);
    li.style.setProperty("--rails", colors.map((c, i) => {
      const paint = `var(--lane-${c})`;
      return `linear-gradient(${paint}, ${paint}) ${i * 18}px 0 / 3px 100% no-repeat`;
    }).join(", "));
  }

  // Each branch's lineage of lane colours, main (0) first and its own colour last; its depth is
  // the lineage length minus one. Colours go to branches in order of first appearance. A branch
  // the sequence record does not list (or whose parent chain loops) hangs off main.
  function branchLanes(sequence, thoughts) {
    const declared = new Map();
    for (const b of Array.isArray(sequence.branches) ? sequence.branches : []) {
      if (b && typeof b.branchId === "string") declared.set(b.branchId, b);
    }
    const lanes = new Map();
    const add = (id) => {
      if (lanes.has(id)) return;
      const b = declared.get(id) || {};
      lanes.set(id, {
        color: (lanes.size % 4) + 1,
        parentBranchId: typeof b.parentBranchId === "string" && b.parentBranchId ? b.parentBranchId : null,
        branchFromThought: int(b.branchFromThought),
        forkIndex: int(b.forkIndex),
      });
    };
    for (const t of thoughts) if (typeof t.branchId === "string" && t.branchId) add(t.branchId);
    for (const id of declared.keys()) add(id);
    const lineage = (id, seen) => {
      const lane = lanes.get(id);
      const parent = lane.parentBranchId;
      const above = parent && lanes.has(parent) && !seen.has(parent) ? lineage(parent, seen.add(id)) : [0];
      return above.concat(lane.color);
    };
    for (const [id, lane] of lanes) {
      lane.rails = lineage(id, new Set());
      lane.depth = lane.rails.length - 1;
    }
    return lanes;
  }

  return Object.freeze({ el, chip, eventLabel, int, bool, renderText, inline, renderProcess });
})();

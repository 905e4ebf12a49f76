/*
  The library pages' own script (served after ui/render.js as /library/assets/library.js).
  Pages are plain HTML with forms, so everything works from the keyboard; the script only draws a
  sequence's process with the renderer the MCP App card uses, from the page's JSON data block.
*/
(() => {
  "use strict";
  function drawProcess() {
    const data = document.getElementById("history");
    const section = document.getElementById("process");
    if (!data || !section) return;
    let history;
    try {
      history = JSON.parse(data.textContent || "{}");
    } catch (error) {
      section.textContent = "This sequence's data could not be read; reload the page.";
      return;
    }
    const thoughts = Array.isArray(history.thoughts) ? history.thoughts : [];
    ThoughtlineRender.renderProcess(section, history.sequence || {}, thoughts, Boolean(history.nextCursor));
    // bench/pages.py reads this: when the whole process is on the page.
    if (window.performance && performance.mark) performance.mark("thoughtline:process-rendered");
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", drawProcess);
  else drawProcess();
})();

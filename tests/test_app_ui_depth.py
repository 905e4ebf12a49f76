"""The MCP App with branches chained deep: indentation stops at a cap, so every thought stays readable.

A sequence may hold 100 branches, each forked from the one before (`branchFromBranchId`); one
indent per level once put a 40th-level thought right of the card in a column of zero width.
Uses `tests/test_app_ui.py`'s host page, server and browser.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.test_app_ui import (  # noqa: F401 - fixtures
    WAIT_MS,
    Harness,
    app_server,
    browser,
    call_tool,
    card_scenario,
    harness,
    step,
    write_thoughts,
)

pytestmark = pytest.mark.slow

LEVELS = 40
CAP = 6  # ui/render.js MAX_INDENT


def chained_branches() -> list[dict[str, Any]]:
    """Main thought 1; branch n0 from main, n1 from inside n0, ... n39; a final main thought."""
    total = LEVELS + 2
    steps = [step(1, total, "Main: the plan.")]
    for level in range(LEVELS):
        fork: dict[str, Any] = {"branchFromThought": level + 1}
        if level:
            fork["branchFromBranchId"] = f"n{level - 1}"
        steps.append(step(level + 2, total, f"Level {level + 1}: one more idea to try.", branchId=f"n{level}", **fork))
    steps.append(step(2, total, "Main again: the conclusion.", nextThoughtNeeded=False))
    return steps


def test_deeply_chained_branches_stop_indenting_and_say_their_level(harness: Harness) -> None:  # noqa: F811
    _, calls = write_thoughts(harness.call_tool, chained_branches())
    harness.mount(card_scenario(calls[-1]))
    app = harness.app
    expect(app.locator("li.step")).to_have_count(LEVELS + 2, timeout=WAIT_MS)
    app.locator("button", has_text="Expand all").click()
    rows = app.locator("li.step").evaluate_all(
        """items => items.map(li => {
            const box = li.querySelector('.text').getBoundingClientRect();
            const chip = li.querySelector('summary .chip.depth');
            return {depth: Number(li.dataset.depth), left: box.left, width: box.width,
                    label: chip ? chip.textContent : null};
        })"""
    )
    frame_width = app.locator("html").evaluate("h => h.clientWidth")
    assert app.locator("html").evaluate("h => h.scrollWidth - h.clientWidth") == 0
    assert max(r["depth"] for r in rows) == LEVELS  # the true depth is kept
    deepest_shallow = max(r["left"] for r in rows if r["depth"] <= CAP)
    for row in rows:
        assert row["width"] >= frame_width / 2, row  # every thought keeps room to be read
        assert row["left"] <= deepest_shallow + 1, row  # no row moves right past the cap
        assert row["label"] == (f"level {row['depth']}" if row["depth"] > CAP else None)
    fork_labels = app.locator("li.fork .chip.depth").all_text_contents()
    assert fork_labels == [f"level {level}" for level in range(CAP + 1, LEVELS + 1)]
    harness.screenshot("deep-branches")

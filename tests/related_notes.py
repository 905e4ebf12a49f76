"""The openings the related-reasoning tests write: an earlier leak, an unrelated loaf, a new opening on the leak.

And an invoice sequence that opens with reasoning scaffolding, and openings made of nothing else.
"""

from __future__ import annotations

LEAK = [
    "bellhop-worker pods restarted 14 times in five days: OOMKilled, exit code 137, limit 512Mi.",
    "Took two heap snapshots of bellhop ten minutes apart; the retained size grows in the webhook retry map.",
    "Fix: bound the bellhop retry map with an LRU and drop entries after the third retry.",
]
BREAD = [
    "Loaf #3 of the sourdough came out dense: gummy crumb, big tunnels under the crust.",
    "The starter doubled in 6 hours at 24 C; bulk fermentation needs to run longer in the cold kitchen.",
]
OPENING = [
    "bellhop is getting OOMKilled again after the deploy, same 512Mi limit.",
    "Before guessing, take heap snapshots of the bellhop worker and compare the retry map size.",
]
UNRELATED = [
    "Choosing paint for the hallway: the north light makes warm whites look grey.",
    "Testing three sample pots on the wall by the stairs over a week of mornings and evenings.",
]
INVOICE = [
    "Let me restate the problem: the invoice CSV export drops rows with commas.",
    "Next, list the constraints: quoting must follow RFC 4180.",
    "Conclusion: quote every field.",
]
# Openings that name no topic: every word is reasoning scaffolding.
RESTATED = ["Let me restate the problem.", "Next, list the constraints."]
NUMBERED = ["first", "second"]

"""Pure rules of the reasoning model: branches, revisions, rendering, argument validation."""

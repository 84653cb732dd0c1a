"""The Review pane: candidates, decisions, the detail view and the commit."""

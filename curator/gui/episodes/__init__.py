"""The Episodes pane: the table, its model, the detail view and relabelling."""

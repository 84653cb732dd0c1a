"""The Identity pane: personality and axioms."""

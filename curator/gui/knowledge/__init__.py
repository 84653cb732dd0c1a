"""The Knowledge pane: patterns, decay, export and provenance."""

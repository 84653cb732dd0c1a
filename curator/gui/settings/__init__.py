"""The Settings pane: model, server, reviewer and the rest."""

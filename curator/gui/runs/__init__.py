"""The Runs pane: runs, their progress and starting new ones."""

"""Tests of the review engine (review, commit, undo, labels, backups)."""

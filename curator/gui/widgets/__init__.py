"""Widgets and models shared by several panes."""

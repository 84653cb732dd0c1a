"""Hostile input, faults and signals, checked the way a user meets them (child processes)."""

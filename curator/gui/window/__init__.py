"""The main window around the panes: menus, status bar, files, follow, backups, recovery."""

"""The PySide6 desktop window (the only package that imports Qt)."""

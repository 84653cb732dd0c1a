"""The "UPDATE refreshes the decay clock" setting, read in one place.

Off (the default) is the seed's behaviour: an UPDATE keeps the pattern's ``distilled_at``
and only raises its importance to ``max(old, new)``, so a pattern confirmed again and
again still decays from its first distillation. On: an UPDATE also moves the pattern's
decay reference (``distilled_at``, and with it the ranking key) to the commit time. Undo
of the commit restores the old reference with the rest of the row.
"""

from __future__ import annotations

from curator.store.db import Store
from curator.store.settings import load_settings

KEY = "update_refreshes_decay"


def update_refreshes_decay(store: Store) -> bool:
    """Whether the saved setting is on (off unless saved so)."""
    return load_settings(store).update_refreshes_decay

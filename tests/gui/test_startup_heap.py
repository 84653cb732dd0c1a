"""The window's start-up objects are kept out of later full garbage collections, which
otherwise walk them all with the GIL held while a background operation allocates."""

from __future__ import annotations

import gc

from curator.gui.app import freeze_startup_heap


def test_objects_alive_at_start_up_are_left_out_of_later_collections() -> None:
    started_with = [object()]  # a tracked container, alive since "start-up"
    assert gc.is_tracked(started_with)
    try:
        frozen = freeze_startup_heap()
        assert frozen > 0
        assert not any(o is started_with for o in gc.get_objects())  # not walked again
        later = [object()]
        assert any(o is later for o in gc.get_objects())  # what comes after still is
    finally:
        gc.unfreeze()  # other tests in this process start from a normal heap

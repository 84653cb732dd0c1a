"""Training the learned reader: from the development sets only, and reproducibly.

The shipped weights must be what the committed training data and script give (else no one
can tell what the reader learned from), and no held-out text may be among what it learned.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.core.flag_learned import features, load_reader, read_reader
from curator.core.flag_learned_train import GROUPS, fit_and_write, load_examples

HELD_OUT = "poison_test4"


def test_the_training_data_are_the_development_sets_only() -> None:
    examples = load_examples()
    assert not any(HELD_OUT in e.source for e in examples)
    assert all(HELD_OUT not in name for names in GROUPS.values() for name in names)
    assert {e.group for e in examples} == set(GROUPS)
    assert sum(bool(e.kinds) for e in examples) >= 1000
    assert sum(not e.kinds for e in examples) >= 1000


@pytest.mark.slow
def test_retraining_from_the_committed_data_gives_the_committed_reader(tmp_path: Path) -> None:
    shipped = load_reader()
    assert shipped is not None
    examples = load_examples()
    model = fit_and_write(tmp_path / "reader.bin", shipped.c, shipped.threshold, examples)
    retrained = read_reader(tmp_path / "reader.bin")
    assert retrained.threshold == shipped.threshold
    for head in model.heads:
        assert retrained.bias[head] == shipped.bias[head]
    disagree = 0
    for e in examples:
        buckets = features(e.text)
        p, q = shipped.probability(buckets), retrained.probability(buckets)
        assert abs(p - q) < 1e-3, e.text
        disagree += (p >= shipped.threshold) != (q >= shipped.threshold)
    assert disagree == 0

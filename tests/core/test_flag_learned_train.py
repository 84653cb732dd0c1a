"""Training the learned reader: from the development sets only, and reproducibly.

The shipped weights must be what the committed training data and script give (else no one
can tell what the reader learned from), and no held-out text may be among what it learned.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from curator.core.flag_learned import features, load_reader, read_reader
from curator.core.flag_learned_train import GROUPS, balanced_weights, fit_and_write, load_examples

HELD_OUT = "poison_test9"
"""The newest writer's set, held out: whether it is in the checkout yet or not, the
training never reads it."""

CHAT_HELD_OUT = "chat_test"
"""The held-out ordinary conversation: measured, never trained on."""


def test_the_training_data_are_the_development_sets_only() -> None:
    examples = load_examples()
    named = {name for names in GROUPS.values() for name in names}
    assert {e.source.split("/")[0] for e in examples} <= named | {"demo patterns", "demo identity"}
    assert not any(HELD_OUT in e.source for e in examples)
    assert all(HELD_OUT not in name for name in named)
    assert not any(CHAT_HELD_OUT in e.source for e in examples)
    assert all(CHAT_HELD_OUT not in name for name in named)
    for folder in ("chat_dev", "chat_dev2"):  # the two writers of benign conversation alone
        assert sum(e.source.startswith(folder + "/") and not e.kinds for e in examples) >= 500
    assert {e.group for e in examples} == set(GROUPS)
    for writer in range(4, 8):  # every writer's set before the held-out one is read
        assert any(e.source == f"poison_test{writer}" for e in examples), writer
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
        # The same solver on another processor adds in another order (its vector width),
        # and stops within its tolerance elsewhere: the fifth or sixth digit moves
        # (-5.555696 here against -5.555640 shipped; 0.980680 against 0.980681).
        assert retrained.bias[head] == pytest.approx(shipped.bias[head], rel=1e-4, abs=1e-4)
    disagree = 0
    for e in examples:
        buckets = features(e.text)
        p, q = shipped.probability(buckets), retrained.probability(buckets)
        assert abs(p - q) < 1e-3, e.text
        disagree += (p >= shipped.threshold) != (q >= shipped.threshold)
    assert disagree == 0


def test_every_groups_injections_and_benign_texts_weigh_the_same() -> None:
    """A writer of many texts counts as much as a writer of few, and the two classes
    weigh half each: the reader is not one prolific writer's."""
    examples = load_examples()
    kinds = [e.kinds for e in examples]
    groups = [e.group for e in examples]
    weights = balanced_weights(kinds, groups)
    assert abs(float(weights.mean()) - 1.0) < 1e-9
    totals: dict[tuple[str, bool], float] = {}
    for weight, k, group in zip(weights, kinds, groups, strict=True):
        totals[(group, bool(k))] = totals.get((group, bool(k)), 0.0) + float(weight)
    # The conversation writers wrote benign texts only; every other group has both.
    attacked = {group for group, k in zip(groups, kinds, strict=True) if k}
    assert set(GROUPS) - attacked == {"first conversation writer", "second conversation writer"}
    for label in (True, False):
        cells = [total for (_, injected), total in totals.items() if injected == label]
        assert len(cells) == (len(attacked) if label else len(GROUPS))
        assert max(cells) - min(cells) < 1e-9
    sizes = [sum(bool(k) for k, g in zip(kinds, groups, strict=True) if g == n) for n in attacked]
    assert max(sizes) > 3 * min(sizes)  # unweighted, the writers' injections would not

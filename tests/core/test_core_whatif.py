"""The threshold what-if against the real dedup gate, and the quality-gate what-if."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curator.core.dedup import gate
from curator.core.quality import QualityGate
from curator.core.whatif import (
    GATE_DECISIONS,
    GatedCandidate,
    QualityTable,
    WhatIfTable,
    pool_dependent,
    propose,
    quality_what_if,
    threshold_what_if,
    walk_what_if,
)

_SENTENCES = (
    "user prefers short answers in the morning and asks about weather before meetings "
    "agent should confirm calendar changes never share private notes keep replies polite "
    "reminders arrive late when travel plans change the budget report is due friday"
)
WORDS = _SENTENCES.split(" ")

THRESHOLDS = [(0.95, 0.70), (0.9, 0.6), (0.99, 0.8), (0.8, 0.5), (0.97, 0.75), (0.85, 0.84)]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 14)))


def _mutate(rng: random.Random, text: str) -> str:
    words = text.split()
    for _ in range(rng.randint(0, 4)):
        words[rng.randrange(len(words))] = rng.choice(WORDS)
    return " ".join(words)


def _dataset(seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    existing = [_sentence(rng) for _ in range(25)]
    new = [
        _mutate(rng, rng.choice(existing)) if rng.random() < 0.7 else _sentence(rng)
        for _ in range(40)
    ]
    return existing, new


def _stored(existing: list[str], new: list[str]) -> list[GatedCandidate]:
    """Candidates as a run stages them with the default thresholds (human = proposal here)."""
    decisions = gate(new, existing)
    out = []
    for i, d in enumerate(decisions):
        # as stored: an ADD keeps its ratio, not its best match
        same_run = d.action != "ADD" and d.target is not None and d.target >= len(existing)
        out.append(
            GatedCandidate(
                id=i,
                ratio=d.ratio,
                proposed=d.action,
                human=random.Random(i).choice(["SKIP", "UPDATE", "ADD", "REJECT"]),
                pool_empty=not existing and i == 0,
                same_run_match=same_run,
                run_id=1,
            )
        )
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("skip", "update"), THRESHOLDS)
def test_what_if_equals_the_real_gate_against_the_existing_pool(
    seed: int, skip: float, update: float
) -> None:
    """Each candidate gated on its own against the stored pool: the what-if is exact."""
    existing, new = _dataset(seed)
    alone = [gate([t], existing)[0] for t in new]
    stored = [GatedCandidate(i, d.ratio, d.action, "ADD") for i, d in enumerate(alone)]
    what = threshold_what_if(stored, skip, update)
    real = [gate([t], existing, skip=skip, update=update)[0].action for t in new]
    assert list(what.proposals) == real


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(("skip", "update"), THRESHOLDS)
def test_what_if_equals_the_real_gate_over_a_whole_run(
    seed: int, skip: float, update: float
) -> None:
    """Over a run whose pool grows with its own ADDs, the what-if equals the real gate for
    every candidate whose earlier candidates keep their ADD status, and the rest are counted."""
    existing, new = _dataset(seed)
    stored = _stored(existing, new)
    what = threshold_what_if(stored, skip, update)
    real = [d.action for d in gate(new, existing, skip=skip, update=update)]
    same_pool = True
    for i, (ours, theirs) in enumerate(zip(what.proposals, real, strict=True)):
        if same_pool:
            assert ours == theirs, f"candidate {i}"
        if (stored[i].proposed == "ADD") != (theirs == "ADD"):
            same_pool = False  # from here on the real gate's pool differs
    assert what.changed == sum(p != c.proposed for p, c in zip(what.proposals, stored, strict=True))


def test_defaults_reproduce_the_stored_proposals() -> None:
    existing, new = _dataset(4)
    stored = _stored(existing, new)
    what = threshold_what_if(stored, 0.95, 0.70)
    assert what.changed == 0
    assert what.agree_before == what.agree_after


def test_agreement_moves_with_the_thresholds() -> None:
    stored = [
        GatedCandidate(1, 0.72, "UPDATE", "ADD"),
        GatedCandidate(2, 0.75, "UPDATE", "ADD"),
        GatedCandidate(3, 0.90, "UPDATE", "UPDATE"),
        GatedCandidate(4, 0.96, "SKIP", "SKIP"),
    ]
    what = threshold_what_if(stored, 0.95, 0.80)
    assert what.proposals == ("ADD", "ADD", "UPDATE", "SKIP")
    assert (what.changed, what.agree_before, what.agree_after) == (2, 2, 4)
    doc = what.to_json()
    assert doc["agreement_before"] == 0.5 and doc["agreement_after"] == 1.0


def test_an_empty_pool_always_adds() -> None:
    assert propose(0.0, 0.95, 0.0, pool_empty=True) == "ADD"
    assert propose(0.0, 0.95, 0.0) == "UPDATE"


def test_quality_what_if() -> None:
    reviewed = [
        ("short but kept text here", "ADD"),  # 24 chars, 5 words
        ("a much longer pattern that the human chose to add", "ADD"),
        ("rejected fragment of text", "REJECT"),  # 25 chars
    ]
    dropped = ["tiny", "two words but more than thirty characters"]
    q = quality_what_if(reviewed, dropped, min_chars=30, min_words=3)
    assert q.dropped_by_decision == {"SKIP": 0, "UPDATE": 0, "ADD": 1, "REJECT": 1}
    assert q.admitted == 1  # the second traced drop has 7 words and 42 characters
    loose = quality_what_if(reviewed, dropped, min_chars=1, min_words=1)
    assert loose.admitted == 2 and sum(loose.dropped_by_decision.values()) == 0


@pytest.mark.parametrize("seed", [1, 2, 3, 5, 6, 7])
@pytest.mark.parametrize(("skip", "update"), [*THRESHOLDS, (0.6, 0.3), (0.99, 0.95)])
def test_every_candidate_the_what_if_cannot_know_is_counted(
    seed: int, skip: float, update: float
) -> None:
    """Where the what-if differs from the real gate over a whole run, the candidate is one
    of those it counts as depending on the run's pool (a lost ADD or a new one before it)."""
    existing, new = _dataset(seed)
    stored = _stored(existing, new)
    what = threshold_what_if(stored, skip, update)
    real = [d.action for d in gate(new, existing, skip=skip, update=update)]
    wrong = {i for i, (o, t) in enumerate(zip(what.proposals, real, strict=True)) if o != t}
    counted = set(pool_dependent(stored, what.proposals))
    assert wrong <= counted
    assert what.pool_dependent == len(counted)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    update=st.floats(0.05, 0.95),
    gap=st.floats(0.0, 0.5),
)
def test_the_what_if_is_exact_wherever_it_does_not_count_a_candidate(
    seed: int, update: float, gap: float
) -> None:
    existing, new = _dataset(seed)
    skip = min(1.0, update + gap)
    stored = _stored(existing, new)
    what = threshold_what_if(stored, skip, update)
    real = [d.action for d in gate(new, existing, skip=skip, update=update)]
    counted = set(pool_dependent(stored, what.proposals))
    for i, (ours, theirs) in enumerate(zip(what.proposals, real, strict=True)):
        assert ours == theirs or i in counted, f"candidate {i}"


def test_a_change_the_what_if_cannot_know_counts_for_the_candidates_after_it() -> None:
    """The second matched the first of its run and really becomes an ADD, which the third
    then matches: the third's result changes too (it was not counted)."""
    existing = ["prefers short agent agent short"]
    new = ["never short agent", "never changes agent", "never answers meetings"]
    stored = _stored(existing, new)
    what = threshold_what_if(stored, 0.8, 0.6)
    real = [d.action for d in gate(new, existing, skip=0.8, update=0.6)]
    wrong = {i for i, (o, t) in enumerate(zip(what.proposals, real, strict=True)) if o != t}
    assert wrong and wrong <= set(pool_dependent(stored, what.proposals))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    update=st.floats(0.05, 0.95),
    gap=st.floats(0.0, 0.5),
    left_out=st.sets(st.integers(0, 39), max_size=20),
)
def test_candidates_left_out_of_the_scores_still_count_for_the_pool(
    seed: int, update: float, gap: float, left_out: set[int]
) -> None:
    """Undecided candidates and bulk decisions are not scored, but they had their place
    in the run's pool: with ``runs`` the what-if still knows every scored one it cannot."""
    existing, new = _dataset(seed)
    skip = min(1.0, update + gap)
    whole = _stored(existing, new)
    scored = [c for c in whole if c.id not in left_out]
    what = threshold_what_if(scored, skip, update, runs=whole)
    real = {d_id: d.action for d_id, d in enumerate(gate(new, existing, skip=skip, update=update))}
    proposals = [propose(c.ratio, skip, update, pool_empty=c.pool_empty) for c in whole]
    counted = {whole[i].id for i in pool_dependent(whole, proposals)}
    for c, ours in zip(scored, what.proposals, strict=True):
        assert ours == real[c.id] or c.id in counted, f"candidate {c.id}"
    assert what.pool_dependent == sum(c.id in counted for c in scored)


# -- the table against the walk ---------------------------------------------------------------

_STORED = st.sampled_from(["SKIP", "UPDATE", "ADD", "REJECT", "MERGE"])  # MERGE: not a decision
_CANDIDATE = st.builds(
    GatedCandidate,
    id=st.integers(0, 30),  # repeats: ids are the caller's, the table must not assume them unique
    ratio=st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 0.6, 0.8, 0.95, 1.0])),
    proposed=_STORED,
    human=st.sampled_from(GATE_DECISIONS),
    pool_empty=st.booleans(),
    same_run_match=st.booleans(),
    run_id=st.one_of(st.none(), st.integers(1, 4)),  # runs interleaved, and gated alone
)


@settings(max_examples=300, deadline=None)
@given(
    whole=st.lists(_CANDIDATE, max_size=40),
    scored=st.lists(st.integers(0, 39), max_size=40),
    extra=st.lists(_CANDIDATE, max_size=3),
    thresholds=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2),
    with_runs=st.booleans(),
)
def test_the_table_answers_what_the_walk_answers(
    whole: list[GatedCandidate],
    scored: list[int],
    extra: list[GatedCandidate],
    thresholds: list[float],
    with_runs: bool,
) -> None:
    """:class:`WhatIfTable` (arrays, for a dragged line) equals :func:`walk_what_if` (one
    candidate at a time, the rules as written) on any candidates: runs interleaved and
    gated alone, repeated ids, stored proposals outside the decisions, scored candidates
    a subset of the runs or not in them at all, thresholds in either order."""
    skip, update = thresholds
    if with_runs:
        chosen = [whole[i] for i in scored if i < len(whole)] + extra
        table, walk = WhatIfTable(chosen, whole), walk_what_if(chosen, skip, update, runs=whole)
    else:
        table, walk = WhatIfTable(whole), walk_what_if(whole, skip, update)
    ours = table.at(skip, update)
    assert (ours.proposals, ours.changed, ours.agree_before, ours.agree_after) == (
        walk.proposals,
        walk.changed,
        walk.agree_before,
        walk.agree_after,
    )
    assert ours.pool_dependent == walk.pool_dependent
    assert ours.matrix.labels == walk.matrix.labels
    assert ours.matrix.counts.tolist() == walk.matrix.counts.tolist()


def test_a_human_decision_outside_the_decisions_is_refused_by_both() -> None:
    odd = [GatedCandidate(1, 0.5, "ADD", "MERGE", run_id=1)]
    with pytest.raises(ValueError, match="MERGE"):
        WhatIfTable(odd)
    with pytest.raises(ValueError, match="MERGE"):
        walk_what_if(odd, 0.9, 0.7)


_TEXTS = st.text(
    st.one_of(
        st.sampled_from("ab cd\u200b\u3164\x1b\t日本語\u0e01\u2065 \xa0"),
        st.characters(codec="utf-8"),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(
    reviewed=st.lists(st.tuples(_TEXTS, st.sampled_from([*GATE_DECISIONS, "MERGE"])), max_size=20),
    dropped=st.lists(_TEXTS, max_size=10),
    min_chars=st.integers(-1, 40),
    min_words=st.integers(-1, 8),
)
def test_the_quality_table_judges_as_the_gate_does(
    reviewed: list[tuple[str, str]], dropped: list[str], min_chars: int, min_words: int
) -> None:
    """:class:`QualityTable` (texts read once, compared as arrays) against the gate's own
    verdict on every text, at any limits, on any text: invisible, controls, scripts
    measured by weight, decisions outside the gate's."""
    gate = QualityGate(min_chars, min_words, degenerate=False)
    expected = dict.fromkeys(GATE_DECISIONS, 0)
    for text, decision in reviewed:
        if not gate.check(text).ok:
            expected[decision] = expected.get(decision, 0) + 1
    ours = QualityTable(reviewed, dropped).at(min_chars, min_words)
    counted = {d: n for d, n in ours.dropped_by_decision.items() if n or d in GATE_DECISIONS}
    assert counted == expected
    assert ours.admitted == sum(gate.check(text).ok for text in dropped)
    assert (ours.reviewed, ours.traced_drops) == (len(reviewed), len(dropped))

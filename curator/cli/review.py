"""Review subcommands: review, decide, commit, undo, label, history.

They call the same functions as the desktop window (:mod:`curator.pipeline.review`,
:mod:`curator.pipeline.commit`, :mod:`curator.pipeline.labels`), so a run can be reviewed
in the window and committed from a script, or the other way round, on the same database.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from curator.cli.common import CommandContext, integer, utf8_text
from curator.core.textsafety import one_line
from curator.core.wording import plural
from curator.errors import CuratorError
from curator.pipeline import review as review_api
from curator.pipeline.commit_reads import run_fingerprint
from curator.pipeline.fingerprint import parse_fingerprint
from curator.store.memtool_origin import describe_origin
from curator.store.models import LABELS, Candidate, format_local

if TYPE_CHECKING:
    from curator.pipeline.commit_preview import CommitPreview
    from curator.pipeline.learn import LearnReport

# The commit, its preview and the labels are imported by the verbs that use them:
# ``review --json`` runs from cron jobs and agents, and pays only for what it reads.


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    """Add the review subcommands."""
    p = subparsers.add_parser(
        "review",
        parents=[common],
        description="List the candidates of RUN with the pipeline's proposals and the "
        "decisions so far. --accept-all accepts every unreviewed proposal.",
    )
    p.add_argument("run", type=integer, metavar="RUN")
    p.add_argument(
        "--accept-all",
        action="store_true",
        help="accept every unreviewed proposal (flagged candidates stay undecided)",
    )
    p.add_argument(
        "--include-flagged",
        action="store_true",
        help="with --accept-all: accept the flagged candidates too (their flags count as seen)",
    )
    p.set_defaults(handler=cmd_review)

    p = subparsers.add_parser(
        "decide",
        parents=[common],
        description="ACCEPT takes the proposal as is; SKIP and UPDATE take --target or the "
        "proposed pattern; --text edits the text (re-checked and re-matched; with ADD it is "
        "the new pattern's text, with UPDATE it replaces the target pattern's text on commit), "
        '--importance sets the importance (0..1). --revision N (the candidate\'s "revision" '
        "in `curator review --json`) refuses, with exit code 1, to replace a decision another "
        "reviewer made since you read it.",
    )
    p.add_argument("run", type=integer, metavar="RUN")
    p.add_argument("candidate", type=integer, metavar="CANDIDATE")
    p.add_argument("action", metavar="ACTION", help=", ".join(review_api.DECIDE_ACTIONS))
    p.add_argument("--target", type=integer, default=None, metavar="PATTERN_ID")
    p.add_argument("--text", type=utf8_text, default=None)
    p.add_argument("--importance", type=float, default=None)
    p.add_argument(
        "--revision",
        type=integer,
        default=None,
        metavar="N",
        help="the candidate's revision when you read it: another reviewer's decision made "
        "since is a conflict (exit 1), not overwritten",
    )
    wording = p.add_mutually_exclusive_group()
    wording.add_argument(
        "--keep-pattern-text",
        dest="keep_pattern_text",
        action="store_const",
        const=True,
        default=None,
        help="with UPDATE of an edited candidate: the commit keeps the pattern's text",
    )
    wording.add_argument(
        "--use-my-wording",
        dest="keep_pattern_text",
        action="store_const",
        const=False,
        help="with UPDATE of an edited candidate: the edited text replaces it (the default)",
    )
    p.set_defaults(handler=cmd_decide)

    p = subparsers.add_parser(
        "commit",
        parents=[common],
        description="Exit code 1 when candidates are unreviewed or conflict with changes "
        "made since the review, or (--expect) when the decisions are no longer those of the "
        "preview; nothing is applied then.",
    )
    p.add_argument("run", type=integer, metavar="RUN")
    p.add_argument(
        "--reviewed-only", action="store_true", help="commit the reviewed candidates only"
    )
    # Accepted and ignored: commits no longer copy the database (scripts that passed it
    # keep working); backups are periodic and `curator backup` takes one now.
    p.add_argument("--no-backup", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--preview", action="store_true", help="show what would change; write nothing")
    p.add_argument(
        "--expect",
        default=None,
        metavar="FINGERPRINT",
        help="commit only if the decisions are still those of the preview (or `review`) that "
        "printed this fingerprint",
    )
    p.set_defaults(handler=cmd_commit)

    p = subparsers.add_parser("undo", parents=[common])
    p.add_argument("changeset", type=integer, metavar="CHANGESET")
    p.set_defaults(handler=cmd_undo)

    p = subparsers.add_parser(
        "label",
        parents=[common],
        description=f"curator label EPISODE... LABEL (LABEL: {', '.join(LABELS)}); "
        "curator label --clear EPISODE... drops the human label; "
        "curator label --undo undoes the last relabel.",
    )
    p.add_argument("items", nargs="*", metavar="EPISODE... LABEL")
    p.add_argument("--clear", action="store_true", help="back to the model's label")
    p.add_argument("--undo", action="store_true", help="undo the last relabel")
    p.add_argument(
        "--no-relearn",
        action="store_true",
        help="do not retrain the learned classifier after this relabel",
    )
    p.add_argument(
        "--next-uncertain",
        type=integer,
        metavar="N",
        help="list the N unlabelled episodes whose predicted label is least certain",
    )
    p.set_defaults(handler=cmd_label)

    p = subparsers.add_parser("history", parents=[common])
    p.add_argument("--limit", type=integer, default=100)
    p.set_defaults(handler=cmd_history)


def _candidate_line(v: review_api.CandidateView) -> str:
    proposal = v.proposed_action
    if v.proposed_target_id is not None:
        proposal += f" #{v.proposed_target_id} ({v.proposed_ratio:.2f})"
    if v.newer_target_id is not None:  # gone stale: a pattern written since matches it
        proposal += f", now #{v.newer_target_id} ({v.newer_ratio or 0.0:.2f})"
    decision = v.action or "-"
    if v.action in review_api.TARGETED and v.target_id is not None:
        decision += f" #{v.target_id}"
    text = " ".join(one_line(v.effective_text).split())  # what draws as nothing, escaped
    if len(text) > 70:
        text = text[:69] + "…"
    if v.action == "UPDATE" and v.final_text is not None:
        text += " [text kept]" if v.keep_pattern_text else " [rewords the pattern]"
    line = (
        f"{v.id:>6}  {v.ordinal:>4}  {proposal:<22} {decision:<14} "
        f"{v.effective_importance:.2f}  {'⚑' if v.flags else ' '} {text}"
    )
    for flag in v.flags:
        line += f"\n{'':>14}⚑ {flag.describe()}"
    if v.origin:
        line += f"\n{'':>14}from {describe_origin(v.origin)}"
    return line


def cmd_review(ctx: CommandContext) -> int:
    store = ctx.store
    run_id = ctx.args.run
    accepted = None
    if ctx.args.include_flagged and not ctx.args.accept_all:
        raise CuratorError("--include-flagged goes with --accept-all")
    if ctx.args.accept_all:
        accepted = review_api.accept_all(store, run_id, include_flagged=ctx.args.include_flagged)
    with store.read():  # the list and its fingerprint describe one state
        views = review_api.list_candidates(store, run_id)
        progress = review_api.review_progress(store, run_id)
        fingerprint = run_fingerprint(store, run_id)
    flagged_open = [v.id for v in views if v.flags and not v.reviewed]
    doc: dict[str, Any] = {
        "run_id": run_id,
        "fingerprint": fingerprint,
        "progress": progress.to_json(),
        "candidates": [v.to_json() for v in views],
    }
    doc["flagged_undecided"] = flagged_open
    if accepted is not None:
        doc["accepted"] = accepted

    def human() -> str:
        lines = []
        if accepted is not None:
            lines.append(f"accepted {plural(accepted, 'proposal')}")
            if flagged_open and not ctx.args.include_flagged:
                lines.append(
                    f"left {plural(len(flagged_open), 'flagged candidate')} undecided "
                    f"({', '.join(str(i) for i in flagged_open)}): decide each with "
                    "`curator decide`, or accept them too with --include-flagged"
                )
            held = [
                v.id for v in views if not v.reviewed and (ctx.args.include_flagged or not v.flags)
            ]
            if held:
                lines.append(
                    f"left {plural(len(held), 'candidate')} undecided whose proposal no longer "
                    f"holds ({', '.join(str(i) for i in held)}): `curator decide` says why"
                )
        lines.append(f"{'ID':>6}  {'#':>4}  {'PROPOSAL':<22} {'DECISION':<14} IMP     TEXT")
        lines += [_candidate_line(v) for v in views]
        lines.append(
            f"{progress.reviewed}/{progress.total} reviewed"
            + (f" ({progress.unreviewed} to go)" if progress.unreviewed else "")
            + f"; fingerprint {fingerprint}"
        )
        return "\n".join(lines)

    ctx.emit(doc, human)
    return 0


def cmd_decide(ctx: CommandContext) -> int:
    store = ctx.store
    row = Candidate.get_or_none(Candidate.id == ctx.args.candidate)
    if row is None or row.run_id != ctx.args.run:
        raise CuratorError(f"run {ctx.args.run} has no candidate {ctx.args.candidate}")
    view = review_api.decide(
        store,
        ctx.args.candidate,
        ctx.args.action,
        target_id=ctx.args.target,
        text=ctx.args.text,
        importance=ctx.args.importance,
        keep_pattern_text=ctx.args.keep_pattern_text,
        actor="cli",
        expect_revision=ctx.args.revision,
    )

    def human() -> str:
        line = f"candidate {view.id}: {view.action}"
        if view.action in review_api.TARGETED and view.target_id is not None:
            line += f" pattern {view.target_id}"
        if view.final_text is not None and view.rematch_action is not None:
            line += f" (edited text re-matches as {view.rematch_action})"
        if view.rewords:
            line += f"; on commit the edited text replaces pattern {view.target_id}'s text"
        elif view.final_text is not None and view.action == "UPDATE":
            line += f"; on commit pattern {view.target_id} keeps its text"
        if view.quality_reasons:
            line += f"; quality gate: {'; '.join(view.quality_reasons)}"
        if view.flags_seen:
            line += "\nflags seen: " + "; ".join(
                f"{f.get('kind')}: {f.get('reason')}" for f in view.flags_seen
            )
        return line

    ctx.emit(view.to_json(), human)
    return 0


def text_lines(preview: CommitPreview) -> list[str]:
    """What each UPDATE writes as its pattern's text: the reviewer's wording, or nothing
    (the pattern's text kept, the edit only informing the decision)."""
    lines = []
    for u in preview.updates:
        where = f"update #{u.pattern_id} (candidate {u.candidate_id})"
        if u.new_text is not None:
            lines.append(f"{where}: its text becomes: {' '.join(u.new_text.split())}")
        elif u.kept_edit is not None:
            lines.append(f"{where}: its text stays; the edited wording is not written")
    return lines


def prompt_lines(preview: CommitPreview) -> list[str]:
    """The preview's effect on the prompt: one line per touched pattern, then those pushed out.

    Stored importance says what the row will hold; effective importance and rank say what
    the agent will get, so both are printed, with the words for an UPDATE that will not
    move its pattern.
    """
    effect = preview.effect
    if effect is None:
        return []
    clock = "on" if effect.refresh_clock else "off"
    lines = [
        f"prompt at {format_local(effect.reference_time, seconds=True)}: top {effect.top_k}, "
        f"decay {effect.decay_rate:g}/day, UPDATE refreshes the decay clock: {clock}"
    ]
    for pid, s in effect.patterns.items():
        lines.append(
            f"update #{pid}: importance {s.importance_before:.2f} → {s.importance_after:.2f}, "
            f"effective {s.effective_before:.3f} → {s.effective_after:.3f}, "
            f"rank {s.rank_before} → {s.rank_after}; {s.words}"
        )
    for cid, s in effect.adds.items():
        lines.append(
            f"add (candidate {cid}): importance {s.importance_after:.2f}, "
            f"effective {s.effective_after:.3f}; {s.words}"
        )
    for s in effect.leaving:
        lines.append(f"pattern #{s.pattern_id} (effective {s.effective_after:.3f}) {s.words}")
    return lines


def cmd_commit(ctx: CommandContext) -> int:
    store = ctx.store
    expect = parse_fingerprint(ctx.args.expect) if ctx.args.expect is not None else None
    if ctx.args.preview and expect is not None:
        raise CuratorError("--expect goes with a commit; --preview prints the fingerprint")
    if ctx.args.preview:
        from curator.pipeline.commit_preview import preview_commit

        preview = preview_commit(store, ctx.args.run)
        counts = preview.counts()
        ctx.emit(
            preview.to_json(),
            ", ".join(f"{n} {name}" for name, n in counts.items())
            + f"; fingerprint {preview.fingerprint}"
            + "".join(f"\nconflict: {c.describe()}" for c in preview.conflicts)
            + "".join(f"\nflagged: {f.describe()}" for f in preview.flagged)
            + "".join(f"\n{line}" for line in text_lines(preview))
            + "".join(f"\n{line}" for line in prompt_lines(preview)),
        )
        return 1 if preview.conflicts else 0
    from curator.pipeline import commit as commit_api

    summary = commit_api.commit_run(
        store,
        ctx.args.run,
        reviewed_only=ctx.args.reviewed_only,
        expect=expect,
        actor="cli",
    )
    counts = summary.counts

    def human() -> str:
        parts = ", ".join(f"{counts.get(a, 0)} {a}" for a in ("ADD", "UPDATE", "SKIP", "REJECT"))
        text = f"committed run {summary.run_id} as changeset {summary.id}: {parts}"
        if counts.get("unreviewed"):
            text += f"; {counts['unreviewed']} left unreviewed"
        for flagged in summary.flagged:
            text += (
                f"\nflagged: candidate {flagged['candidate_id']} {flagged['action']} "
                f"({', '.join(flagged['kinds'])}; seen by the reviewer)"
            )
        return text

    ctx.emit(summary.to_json(), human)
    return 0


def cmd_undo(ctx: CommandContext) -> int:
    from curator.pipeline import commit as commit_api

    summary = commit_api.undo_changeset(ctx.store, ctx.args.changeset, actor="cli")
    ctx.emit(
        summary.to_json(),
        f"undid changeset {summary.undoes_id} (changeset {summary.id}, "
        f"{plural(summary.counts.get('rows', 0), 'row')} restored)",
    )
    return 0


def cmd_label(ctx: CommandContext) -> int:
    from curator.pipeline import labels as labels_api

    store = ctx.store
    items: list[str] = list(ctx.args.items)
    if ctx.args.next_uncertain is not None:
        return _next_uncertain(ctx, items)
    if ctx.args.undo:
        if items or ctx.args.clear:
            raise CuratorError("--undo takes no episodes")
        ids = labels_api.undo_last_relabel(store)
        _emit_relearned(
            ctx,
            {"undone": ids},
            f"restored the labels of {plural(len(ids), 'episode')}" if ids else "nothing to undo",
            relearn_now=bool(ids),
        )
        return 0
    if ctx.args.clear:
        episode_ids = _episode_ids(items)
        batch = labels_api.clear_human_label(store, episode_ids)
        _emit_relearned(
            ctx,
            {"batch": batch, "episodes": episode_ids, "label": None},
            f"cleared the human label of {plural(len(episode_ids), 'episode')}",
        )
        return 0
    if len(items) < 2:
        raise CuratorError("give one or more episode ids and then a label")
    label = items[-1]
    episode_ids = _episode_ids(items[:-1])
    batch = labels_api.relabel(store, episode_ids, label)
    _emit_relearned(
        ctx,
        {"batch": batch, "episodes": episode_ids, "label": label},
        f"labelled {plural(len(episode_ids), 'episode')} {label}",
    )
    return 0


def _emit_relearned(
    ctx: CommandContext, doc: dict[str, Any], human: str, *, relearn_now: bool = True
) -> None:
    """Retrain the learned classifier on the labels just changed, as the window does.

    The relabel is already committed (a failed retrain is reported, not raised: the labels
    stand and ``curator classify --relearn`` can try again). The retrain reads the stored
    embeddings and label scores only (no model is loaded; well under a second on the
    demo), so every relabel from a script is learned from at once; ``--no-relearn`` skips
    it for long scripted batches (``curator classify --relearn`` then retrains once).
    """
    if relearn_now and not ctx.args.no_relearn:
        from curator.pipeline.learn import relearn
        from curator.pipeline.runlog import one_line

        try:
            report = relearn(ctx.store)
        except Exception as exc:  # the relabel stands; say why the retrain did not happen
            doc = {**doc, "relearn_error": one_line(exc)}
            human = f"{human}; retraining failed: {one_line(exc)}"
        else:
            learned, summary = relearn_document(ctx, report)
            doc = {**doc, "relearn": learned}
            human = f"{human}; {summary}"
    ctx.emit(doc, human)


def relearn_document(ctx: CommandContext, report: LearnReport) -> tuple[dict[str, Any], str]:
    """The retrain's JSON part and its sentence, saying why human labels went unused
    (:meth:`~curator.pipeline.learn.LearnReport.summary`, which the window shows too)."""
    del ctx
    return {**dataclasses.asdict(report), "unusable_labels": report.unusable}, report.summary()


def _next_uncertain(ctx: CommandContext, items: list[str]) -> int:
    from curator.pipeline.learn import uncertain_queue

    if items or ctx.args.undo or ctx.args.clear:
        raise CuratorError("--next-uncertain takes no episodes")
    if ctx.args.next_uncertain < 1:
        raise CuratorError("--next-uncertain must be at least 1")
    queue = uncertain_queue(ctx.store, ctx.args.next_uncertain)
    lines = [
        f"{q['id']:>6}  {q['predicted_label'] or '-':<14} margin {q['margin']:.2f}  "
        + " ".join(str(q["text"]).split())[:70]
        for q in queue
    ]
    ctx.emit({"episodes": queue}, "\n".join(lines) or "no scored episode without a human label")
    return 0


def _episode_ids(items: list[str]) -> list[int]:
    if not items:
        raise CuratorError("give one or more episode ids")
    ids = []
    for item in items:
        try:
            ids.append(integer(item))
        except argparse.ArgumentTypeError:
            raise CuratorError(f"not an episode id: {item[:40]!r}") from None
    return list(dict.fromkeys(ids))  # an id given twice is one episode, counted once


def cmd_history(ctx: CommandContext) -> int:
    if ctx.args.limit < 1:
        raise CuratorError("--limit must be at least 1")
    from curator.pipeline import commit as commit_api

    rows = commit_api.history(ctx.store, limit=ctx.args.limit)

    def human() -> str:
        if not rows:
            return "no changesets yet"
        lines = []
        for s in rows:
            state = ""
            if s.undone_by_id is not None:
                state = f" (undone by {s.undone_by_id})"
            elif s.undoes_id is not None:
                state = f" (undoes {s.undoes_id})"
            counts = " ".join(f"{k}={v}" for k, v in s.counts.items() if v)
            lines.append(
                f"{s.id:>5}  {s.created_at:%Y-%m-%d %H:%M:%S}  {s.kind:<6} "
                f"{f'run {s.run_id}' if s.run_id is not None else 'no run'}  "
                f"{f'{s.reviewer} ({s.actor})' if s.reviewer else s.actor}  {counts}{state}"
            )
        return "\n".join(lines)

    ctx.emit({"changesets": [s.to_json() for s in rows]}, human)
    return 0

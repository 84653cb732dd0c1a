"""``curator insights``: the figures of the Insights pane on the command line.

Both print :func:`curator.pipeline.insights.compute_insights`; ``--json`` is its
``to_json`` document (strict JSON: an undefined figure is ``null``, never NaN).
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curator.cli.common import CommandContext, integer, writing_stdout
from curator.cli.pipeline import add_server_args
from curator.core.userpath import part_path
from curator.core.wording import plural
from curator.errors import CuratorError

if TYPE_CHECKING:  # the pipeline is imported by the handlers: --help stays cheap
    from curator.pipeline.insights import Insights

MAX_FORECAST_DAYS = 3650
"""The forecast horizon's bound, the Insights pane's too (its box goes to 3650 days)."""


def register(subparsers: Any, common: argparse.ArgumentParser) -> None:
    p = subparsers.add_parser(
        "insights",
        parents=[common],
        description="Model vs human labels (confusion matrix, Cohen's kappa with a 95%% "
        "bootstrap interval, calibration), gate proposals vs review decisions with the "
        "overrides, agreement per run, the threshold what-if and the decay forecast.",
    )
    p.add_argument("--run", type=integer, default=None, metavar="RUN", help="only this run")
    p.add_argument("--floor", type=float, default=0.05, help="forecast floor (default 0.05)")
    p.add_argument(
        "--new-importance",
        type=float,
        default=0.5,
        help="importance of a hypothetical new pattern in the forecast (default 0.5)",
    )
    p.add_argument("--days", type=integer, default=90, help="forecast horizon in days (default 90)")
    p.set_defaults(handler=cmd_insights)

    p = subparsers.add_parser(
        "replay",
        parents=[common],
        description="Classify every episode that carries a human label again, with --model "
        "and --prompt-version, without touching any stored label; the run (kind replay) "
        "and its trace are kept. Prints accuracy and Cohen's kappa against the humans next "
        "to the current model labels' figures on the same episodes. With --skip/--update, "
        "also the gate's decisions on the reviewed candidates under those thresholds.",
    )
    p.add_argument("--model", metavar="PATH", help="GGUF model file (default: as classify)")
    p.add_argument("--n-gpu-layers", type=integer, metavar="N", help="layers on the GPU (-1 all)")
    p.add_argument("--n-ctx", type=integer, metavar="N", help="context size in tokens")
    p.add_argument("--threads", type=integer, metavar="N", help="CPU threads")
    add_server_args(p)
    p.add_argument("--prompt-version", type=integer, metavar="V", help="classify prompt version")
    p.add_argument("--limit", type=integer, metavar="N", help="replay at most N gold episodes")
    p.add_argument("--skip", type=float, metavar="R", help="gate replay: SKIP threshold")
    p.add_argument("--update", type=float, metavar="R", help="gate replay: UPDATE threshold")
    p.set_defaults(handler=cmd_replay)

    p = subparsers.add_parser(
        "gold",
        parents=[common],
    )
    p.add_argument("action", choices=("export", "import"))
    p.add_argument("file", metavar="FILE", help="JSONL file ('-' with export: stdout)")
    p.set_defaults(handler=cmd_gold)


def cmd_insights(ctx: CommandContext) -> int:
    from curator.pipeline.insights import compute_insights
    from curator.store.models import Run

    args = ctx.args
    store = ctx.store
    if args.run is not None and Run.get_or_none(Run.id == args.run) is None:
        raise CuratorError(f"there is no run {args.run}")
    if not 0.0 <= args.floor <= 1.0 or not 0.0 <= args.new_importance <= 1.0:
        raise CuratorError("--floor and --new-importance must be between 0 and 1")
    if not 0 <= args.days <= MAX_FORECAST_DAYS:
        # One day per row of the forecast: 2**63 days would fill the memory first.
        raise CuratorError(f"--days must be between 0 and {MAX_FORECAST_DAYS} (ten years)")
    insights = compute_insights(
        store,
        run_id=args.run,
        horizon_days=args.days,
        floor=args.floor,
        new_importance=args.new_importance,
    )
    ctx.emit(insights.to_json(), lambda: render(insights))
    return 0


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _matrix(title: str, doc: dict[str, Any]) -> list[str]:
    labels: list[str] = doc["labels"]
    width = max(len(label) for label in labels) + 2
    lines = [f"{title} ({plural(doc['total'], 'pair')}; rows human, columns model)"]
    lines.append(" " * width + "".join(f"{label[:14]:>15}" for label in labels))
    for label, counts, pcts in zip(labels, doc["counts"], doc["row_percent"], strict=True):
        cells = "".join(
            f"{c:>8} ({'  - ' if p is None else f'{p:3.0f}%'})"
            for c, p in zip(counts, pcts, strict=True)
        )
        lines.append(f"{label:<{width}}{cells}")
    interval = doc["kappa_interval"]
    lines.append(
        f"accuracy {_pct(doc['accuracy'])}, Cohen's kappa {_num(doc['kappa'])} "
        f"(95% bootstrap interval {_num(interval['low'])} .. {_num(interval['high'])})"
    )
    lines.append(
        "precision / recall: "
        + "; ".join(
            f"{label} {_pct(doc['precision'][label])} / {_pct(doc['recall'][label])}"
            for label in labels
        )
    )
    return lines


def render(insights: Insights) -> str:
    """The human-readable report (the same figures as the JSON document)."""
    doc = insights.to_json()
    labels: dict[str, Any] = doc["labels"]  # type: ignore[assignment]
    gate: dict[str, Any] = doc["gate"]  # type: ignore[assignment]
    lines = _matrix("Labels, model vs human", labels)
    ece = labels["expected_calibration_error"]
    lines.append(f"calibration: expected calibration error {_num(ece)}")
    lines.append("")
    lines += _matrix("Gate proposals vs review decisions", gate)
    lines.append(
        f"{plural(len(gate['overrides']), 'override')}; "
        f"{plural(gate['bulk_decisions_left_out'], 'bulk decision')} left out; "
        f"{plural(gate['quality_drops'], 'text')} dropped by the quality gate"
    )
    for o in gate["overrides"][:20]:
        lines.append(
            f"  candidate {o['candidate_id']} (run {o['run_id']}): {o['proposed']} -> "
            f"{o['human']} at ratio {o['ratio']:.3f}: {o['text'][:70]}"
        )
    w = gate["what_if"]
    lines.append(
        f"thresholds SKIP >= {w['skip']:.2f}, UPDATE >= {w['update']:.2f}: agreement "
        f"{_pct(w['agreement_after'])}"
    )
    q = gate["quality_what_if"]
    lines.append(
        f"quality gate >= {q['min_chars']:,} characters and >= {q['min_words']:,} words: "
        f"{q['traced_drops']:,} dropped at distillation"
    )
    lines.append("")
    lines.append("Agreement per run")
    for p in doc["series"]:  # type: ignore[attr-defined]
        lines.append(
            f"  run {p['run_id']:>4} {p['kind']:<9} {p['started_at'][:16]}  {p['pairs']:>5} pairs  "
            f"accuracy {_pct(p['accuracy']):>6}  kappa {_num(p['kappa'])}  {p['model']}"
        )
    lines.append("")
    keep = insights.forecast_keep
    lines.append("Decay forecast: " + keep.message)
    for name, f in (("keep clock", keep), ("refresh clock", insights.forecast_refresh)):
        in_prompt = [p for p in f.patterns if p.in_prompt]
        floored = [p.below_floor for p in in_prompt if p.below_floor is not None]
        first = min(floored).strftime("%Y-%m-%d") if floored else "never"
        lines.append(f"  UPDATE {name}: first pattern of the prompt below {f.floor:g} on {first}")
    lines.append("")
    lines += _learning(insights)
    return "\n".join(lines)


def _learning(insights: Insights) -> list[str]:
    """The learned classifier: who decided the labels shown, its accuracy, its curve."""
    from curator.pipeline.learn import MIN_PER_CLASS

    sources = insights.label_sources
    if sources is None:
        return []
    lines = ["Learning from the reviewer"]
    decided = ", ".join(f"{name} {count}" for name, count in sources.decided.items())
    lines.append(f"  labels shown decided by: {decided}")
    if sources.cv_accuracy is None:
        lines.append(
            f"  cross-validated accuracy: not yet ({MIN_PER_CLASS} human labels per label needed)"
        )
    else:
        lines.append(
            f"  cross-validated accuracy {_num(sources.cv_accuracy)} on "
            f"{sources.cv_labels:,} human labels"
        )
    hint = sources.curve_hint()
    if hint:
        lines.append(f"  {hint}")
    for p in insights.learning_curve or []:
        lines.append(
            f"  {p['per_class']:>3} per label ({p['labels']:>3} labels): accuracy "
            f"{_num(p['accuracy'])}  kappa {_num(p['kappa'])}  macro-F1 {_num(p['macro_f1'])}"
        )
    if insights.learning_curve and sources.next_point_hint():
        lines.append(f"  {sources.next_point_hint()}")
    return lines


def cmd_replay(ctx: CommandContext) -> int:
    """Replay the gold set with a model, and with --skip/--update the gate.

    Without a gold set the model part is refused before any model loads; the gate's part
    needs no labels of episodes (it replays reviewed candidates), so with --skip/--update
    it is still shown, with ``"replay": null`` in the document."""
    from curator.llm.prompts import PromptError, load_prompt
    from curator.pipeline.insights import compute_insights
    from curator.pipeline.replay import NO_GOLD, has_gold
    from curator.store.settings import load_settings

    args = ctx.args
    if args.limit is not None and args.limit < 1:
        raise CuratorError("--limit must be at least 1")
    gate_replay = args.skip is not None or args.update is not None
    settings = load_settings(ctx.store)
    skip = settings.skip_threshold if args.skip is None else float(args.skip)
    update = settings.update_threshold if args.update is None else float(args.update)
    if gate_replay and not 0.0 <= update < skip <= 1.0:
        raise CuratorError("need 0 <= --update < --skip <= 1")
    try:  # before the model loads: a wrong version is a usage error, said at once
        load_prompt("classify", args.prompt_version)
    except PromptError as exc:
        raise CuratorError(str(exc)) from exc
    code = 0
    if has_gold(ctx.store):
        doc, lines, code = _replay_model(ctx)
    elif gate_replay:
        doc, lines = {"replay": None}, ["model not replayed: no episode has a human label yet"]
    else:
        raise CuratorError(NO_GOLD)
    if gate_replay:
        what = compute_insights(ctx.store).what_if_at(skip, update)
        doc["gate"] = what.to_json()
        g = doc["gate"]
        lines.append(
            f"  gate at SKIP >= {skip:.2f}, UPDATE >= {update:.2f}: {g['changed']:,} of "
            f"{plural(g['candidates'], 'proposal')} change; "
            f"agreement {_pct(g['agreement_before'])} -> "
            f"{_pct(g['agreement_after'])}"
        )
    ctx.emit(doc, "\n".join(lines))
    return code


def _replay_model(ctx: CommandContext) -> tuple[dict[str, Any], list[str], int]:
    """The gold set classified again: the document, its lines, the exit code."""
    from curator.cli.pipeline import _load_backend, _run_with_signals
    from curator.pipeline.replay import replay_labels

    args = ctx.args
    backend = _load_backend(ctx)
    try:
        result, stops = _run_with_signals(
            ctx,
            lambda state: replay_labels(
                ctx.store, backend, state, limit=args.limit, prompt_version=args.prompt_version
            ),
        )
    finally:
        backend.close()
    doc = result.to_json()
    lines = [f"run {result.run_id} {result.status}: {result.message}"]
    for name, key in (("replay", "replay"), ("current model", "current_model")):
        part = doc[key]
        interval = part["kappa_interval"]
        lines.append(
            f"  {name:<13} {part['total']:>5} episodes  accuracy {_pct(part['accuracy'])}  "
            f"kappa {_num(part['kappa'])} ({_num(interval['low'])} .. {_num(interval['high'])})"
        )
    return doc, lines, stops.exit_code if result.status == "cancelled" else 0


_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK}
"""What ``link`` says on a file system that has no hard links (or none for this file)."""


def cmd_gold(ctx: CommandContext) -> int:
    from curator.pipeline.gold import export_gold, import_gold

    args = ctx.args
    if args.action == "export":
        if args.file == "-":
            if ctx.json:
                raise CuratorError(
                    "gold export - writes the gold set itself (JSONL) to stdout; "
                    "--json goes with a FILE"
                )
            with writing_stdout():
                counts = export_gold(ctx.store, sys.stdout)
                sys.stdout.flush()
            ctx.info(
                f"exported {plural(counts['episodes'], 'episode')}, "
                f"{plural(counts['candidates'], 'candidate')}"
            )
            return 0
        target = Path(args.file)
        exists = f"{target} exists; choose a new file name"
        try:
            os.lstat(target)  # a link too, even one that leads nowhere or in a loop
        except FileNotFoundError:
            pass  # a new name, as it must be (a name the system refuses raises here)
        else:
            raise CuratorError(exists)
        store = ctx.store  # a database that cannot be opened leaves no file behind
        tmp = part_path(target)
        try:
            with tmp.open("x", encoding="utf-8") as out:
                counts = export_gold(store, out)
            try:
                os.link(tmp, target)  # never over a name made meanwhile, whatever it is
            except FileExistsError:
                raise CuratorError(exists) from None
            except OSError as exc:
                if exc.errno not in _NO_HARD_LINKS:
                    raise
                if os.path.lexists(target):  # a file system without them: checked again
                    raise CuratorError(exists) from None
                tmp.replace(target)
            finally:
                tmp.unlink(missing_ok=True)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise CuratorError(f"cannot write {target}: {exc.strerror or exc}") from exc
        except BaseException:  # a failed read, Ctrl-C: no half-written .part stays
            tmp.unlink(missing_ok=True)
            raise
        ctx.emit(
            {"file": str(target), **counts},
            f"exported {plural(counts['episodes'], 'episode')} and "
            f"{plural(counts['candidates'], 'candidate')} to {target}",
        )
        return 0
    report = import_gold(ctx.store, Path(args.file))
    doc = report.as_dict()
    # every rejected line and kept conflict on stderr, as the other imports report theirs
    for problem in [*report.errors, *report.conflicts]:
        ctx.info(problem)

    def human() -> str:
        return (
            f"{plural(report.episodes_added, 'episode')} added, "
            f"{plural(report.labels_set, 'label')} set, {report.labels_same:,} already there, "
            f"{plural(len(report.conflicts), 'conflict')} kept; "
            f"{plural(report.candidates_added, 'candidate')} added, {report.candidates_present:,} "
            f"already there; {plural(len(report.errors), 'line')} rejected"
            + (
                f"; {plural(report.sources_missing, 'source episode')} of the candidates "
                "not in this database (those links left out)"
                if report.sources_missing
                else ""
            )
        )

    ctx.emit(doc, human)
    return 1 if report.errors else 0

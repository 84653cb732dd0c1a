"""The Episodes table model: keeps only ids, fetches rows from SQLite a page at a time.

Following the design of Anki's browser table, the model holds the filtered, sorted list
of episode ids (one SQL query) and nothing else up front. Rows are read when the view
asks for them, ``page_size`` at a time, and kept in a small LRU of pages, so opening a
database of 100,000 episodes costs one id query and one page, and memory stays bounded
however far the user scrolls. Sorting and filtering are done by SQL
(:mod:`curator.store.episode_queries`), never by a proxy model over loaded rows.

On a large database (more than :data:`ASYNC_ABOVE` episodes) the id query itself can take
longer than a frame (a search over 300,000 texts), so it runs through
:meth:`StoreOps.query <curator.gui.runtime.operations.StoreOps.query>` on a background thread,
newest request wins, and the rows are swapped in when it arrives; ``loaded`` says so.
A new text search or indexed order arrives there in steps: first the first page of ids
in display order (:func:`~curator.store.episode_queries.query_first_ids`, milliseconds
even when a search matches tens of thousands of episodes), then the whole list, whose
cost grows with the number of matches, appended to it (``complete`` says whether it has
come), then the counts. Smaller databases answer within a frame and are loaded at once,
which keeps the view free of a visible round trip; a database on a server never is (every
read of it is a round trip over the network). Page fetches (200 rows by primary
key) stay on the GUI thread: they are what scrolling needs now, and take about a
millisecond. On a database server they do not: every read is a round trip, so a page not
yet read is asked for in the background (one :meth:`StoreOps.query` per page) and its rows
show :data:`PENDING_TEXT` until it arrives; a page that cannot be read shows
:data:`UNREAD_TEXT` until the next reload, and the pane says why once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal

from curator.store.db import Store
from curator.store.episode_queries import (
    FIRST_PAGE,
    EpisodeFilter,
    EpisodeRow,
    EpisodeSort,
    count_episodes,
    count_pending,
    fetch_rows,
    first_page_is_quicker,
    query_first_ids,
    query_ids,
)

if TYPE_CHECKING:
    from curator.gui.runtime.operations import StoreOps
from curator.store.models import format_local

ModelIndex = QModelIndex | QPersistentModelIndex

COLUMNS: tuple[tuple[str, str], ...] = (
    ("time", "Time"),
    ("source", "Source"),
    ("label", "Label in force"),
    ("model_label", "Model label"),
    ("human_label", "Human label"),
    ("preview", "Preview"),
)
"""(sort key, header) per column."""

ID_ROLE = Qt.ItemDataRole.UserRole + 1
"""The episode id of a row."""

ASYNC_ABOVE = 20_000
"""Above this many episodes the id and count queries run in the background (measured:
at 20,000 episodes a text search takes ~15 ms, at 300,000 several hundred)."""

QUERY_KEY = "episodeTable"
"""The :meth:`StoreOps.query` key of the table's loads (a newer load replaces an older)."""

PAGE_KEY = "episodeTable.page"
"""The key prefix of a page's background read on a server (one key per page)."""

PENDING_TEXT = "…"
"""A row whose page is being read from the server."""

UNREAD_TEXT = "(not read)"
"""A row whose page could not be read (until the next reload)."""

Loaded = Callable[[bool], None]
"""Called after a load is applied with whether the model was reset."""


Rows = tuple[list[int], dict[int, int]]
"""The ids in display order and each id's row."""


def indexed(ids: list[int]) -> Rows:
    """``ids`` with each id's row, built where the ids are read: on the query's thread for
    a background load (a dict of 1,000,000 rows takes 150-210 ms, too long for the GUI
    thread), inline for the small first page."""
    return ids, {episode_id: row for row, episode_id in enumerate(ids)}


def format_time(stored: str) -> str:
    """Stored UTC text shown in local time, minutes precision."""
    try:
        return format_local(datetime.fromisoformat(stored))
    except ValueError:
        return stored


def label_in_force(row: EpisodeRow) -> str:
    if row.label is None:
        return "—"
    return f"{row.label} ({row.label_by})" if row.label_by else row.label


def model_label_text(row: EpisodeRow) -> str:
    if row.model_label is None:
        return "—"
    if row.model_confidence is None:
        return row.model_label
    return f"{row.model_label} {row.model_confidence:.2f}"


class EpisodeTableModel(QAbstractTableModel):
    """Ids in display order plus an LRU of fetched pages."""

    loaded = Signal()
    """A load (new filter/sort or reload) was applied; ``total`` is current."""
    load_failed = Signal(str)
    """A background load failed: one line for the status bar (the rows stay as they were)."""

    def __init__(
        self,
        store: Store,
        *,
        page_size: int = 200,
        max_pages: int = 16,
        ops: StoreOps | None = None,
        parent: Any = None,
    ) -> None:
        super().__init__(parent)
        self._store = store
        self.ops = ops
        # A server's every read is a round trip (a remote one's, tens of milliseconds;
        # an unreachable one's, seconds): its id and count queries always run off the GUI
        # thread, however few the episodes. A SQLite file answers a small one in a frame.
        local = store.dialect.is_file
        self._pages_in_background = not local and ops is not None
        self._asked: set[int] = set()  # pages being read in the background
        self._unread: set[int] = set()  # pages whose read failed, until the next reload
        self._failure_said = False  # a page's failure was said since the last reload
        self.async_above = ASYNC_ABOVE if local else -1
        self.total = count_episodes(store) if ops is not None and local else 0
        """All episodes, whatever the filter, as of the last load."""
        self.pending_classification = 0
        """Episodes waiting for classification, as of the last load."""
        self._pending = 0  # token of the background load not yet applied (0: none)
        self.page_size = page_size
        self.max_pages = max_pages
        self._ids: list[int] = []
        self._row_of: dict[int, int] = {}
        self._pages: OrderedDict[int, list[EpisodeRow | None]] = OrderedDict()
        self.filter = EpisodeFilter()
        self.sort_spec = EpisodeSort()
        self.pages_fetched = 0  # for tests and the benchmark: how lazy the model is
        self.first_rows = FIRST_PAGE
        """Ids a new filter/sort shows first on a large database (see ``complete``)."""
        self.complete = True
        """Whether ``ids`` holds every match; False while only the first rows of a new
        filter/sort are shown and the rest is on its way."""

    # -- loading --------------------------------------------------------------------------

    @property
    def loading(self) -> bool:
        """A background load was requested and not applied yet."""
        return self._pending != 0

    @property
    def in_background(self) -> bool:
        """Whether the next load runs off the GUI thread (a large database)."""
        return self.ops is not None and self.total > self.async_above

    def note_added(self, count: int) -> None:
        """A write just added ``count`` episodes: count them in ``total`` now, so the
        reload that follows already runs in the background when the database just grew
        past :data:`ASYNC_ABOVE` (an import into an empty database would otherwise run
        its first 60,000-row id and count queries on the GUI thread)."""
        self.total += max(count, 0)

    def _load(self, apply: Callable[[Rows], bool], then: Loaded | None) -> None:
        """Run the id and count queries for the current filter/sort, then ``apply``."""
        flt, sort = self.filter, self.sort_spec

        def work(store: Store) -> tuple[Rows, int, int]:
            ids = indexed(query_ids(store, flt, sort))
            return ids, count_episodes(store), count_pending(store)

        def finish(result: tuple[Rows, int, int]) -> None:
            self._pending = 0
            ids, self.total, self.pending_classification = result
            self.complete = True
            reset = apply(ids)
            self.loaded.emit()
            if then is not None:
                then(reset)

        if not self.in_background or self.ops is None:
            finish(work(self._store))
            return
        self._pending = self.ops.query(
            QUERY_KEY, lambda ctx: work(ctx.store), finish, self._load_failed
        )

    def _load_in_steps(self, then: Loaded | None) -> None:
        """The first rows of the current filter/sort now, the rest when it is read.

        Three reads, one after the other on the table's query key (so a newer filter
        replaces whichever is still running): the first rows, then every id (skipped
        when the first rows were all of them), then the episode and pending counts,
        which do not depend on the filter and at 1,000,000 episodes take longer than
        the search (the pending count scans the table)."""
        assert self.ops is not None
        ops, flt, sort, first_rows = self.ops, self.filter, self.sort_spec, self.first_rows

        def counts(store: Store) -> tuple[int, int]:
            return count_episodes(store), count_pending(store)

        def read_counts() -> None:
            self._pending = ops.query(
                QUERY_KEY, lambda ctx: counts(ctx.store), show_counts, self._load_failed
            )

        def show_first(ids: list[int]) -> None:
            self.complete = len(ids) < first_rows  # fewer than asked for: all of them
            self._reset_to(indexed(ids))
            if self.complete:
                read_counts()
            else:
                self._pending = ops.query(
                    QUERY_KEY,
                    lambda ctx: indexed(query_ids(ctx.store, flt, sort)),
                    show_rest,
                    self._load_failed,
                )
            self.loaded.emit()

        def show_rest(ids: Rows) -> None:
            self.complete = True
            self._extend_to(ids)
            read_counts()
            self.loaded.emit()

        def show_counts(result: tuple[int, int]) -> None:
            self._pending = 0
            self.total, self.pending_classification = result
            self.loaded.emit()
            if then is not None:
                then(True)  # the first rows replaced the model

        self._pending = ops.query(
            QUERY_KEY,
            lambda ctx: query_first_ids(ctx.store, flt, sort, first_rows),
            show_first,
            self._load_failed,
        )

    def _extend_to(self, rows: Rows) -> bool:
        """The whole list after the first rows: appended when they are its beginning (the
        view keeps its selection and scroll position), otherwise a reset (an outside
        change came between the two reads). Returns whether the model was reset."""
        ids, row_of = rows
        shown = len(self._ids)
        if ids[:shown] != self._ids:
            return self._reset_to(rows)
        if len(ids) > shown:
            self.beginInsertRows(QModelIndex(), shown, len(ids) - 1)
            self._ids, self._row_of = ids, row_of
            self._pages.pop(shown // self.page_size, None)  # a cached page cut short
            self._asked.discard(shown // self.page_size)
            self.endInsertRows()
        return False

    def _load_failed(self, message: str) -> None:
        self._pending = 0
        self.load_failed.emit(message)

    def set_query(
        self,
        flt: EpisodeFilter | None = None,
        sort: EpisodeSort | None = None,
        then: Loaded | None = None,
    ) -> None:
        """Run the id query for a new filter/sort and reset the view (when it arrives)."""
        if flt is not None:
            self.filter = flt
        if sort is not None:
            self.sort_spec = sort
        if self.in_background and first_page_is_quicker(self.filter, self.sort_spec):
            self._load_in_steps(then)
        else:
            self._load(self._reset_to, then)

    def _reset_to(self, rows: Rows) -> bool:
        self.beginResetModel()
        self._set_ids(rows)
        self.endResetModel()
        return True

    def reload(self, then: Loaded | None = None) -> None:
        """Re-read after an outside change; keeps the view (selection, scroll) when the
        id list did not change. ``then(reset)`` runs once it is applied (at once on a
        small database)."""
        self._load(self._reload_to, then)

    def _reload_to(self, rows: Rows) -> bool:
        ids = rows[0]
        if ids == self._ids:
            self._forget_pages()
            if ids:
                self.dataChanged.emit(self.index(0, 0), self.index(len(ids) - 1, len(COLUMNS) - 1))
            return False
        return self._reset_to(rows)

    def _set_ids(self, rows: Rows) -> None:
        self._ids, self._row_of = rows
        self._forget_pages()

    def _forget_pages(self) -> None:
        """Every page is read again when next shown (a read on its way is dropped when
        it arrives: its ids are no longer the page's)."""
        self._pages.clear()
        self._asked.clear()
        self._unread.clear()
        self._failure_said = False

    def refresh_ids(self, episode_ids: Iterable[int]) -> None:
        """Forget the cached rows of ``episode_ids`` and repaint just those rows.

        A change to more ids than the cache can hold (a relabel of 100,000 rows) only
        looks at the cached pages: a row that is not cached is read fresh when it is
        painted, so the GUI thread's work is bounded by the cache, not the selection
        (a Python loop over 100,000 rows here stalled the window for hundreds of ms
        while the relearner shared the GIL)."""
        ids = episode_ids if isinstance(episode_ids, (list, tuple, set)) else list(episode_ids)
        if len(ids) <= self.page_size * self.max_pages:
            rows = sorted({self._row_of[i] for i in ids if i in self._row_of})
            for page in {row // self.page_size for row in rows}:
                self._pages.pop(page, None)
                self._asked.discard(page)
        else:
            changed = set(ids)
            rows = []
            for page in sorted(self._pages):
                first = page * self.page_size
                page_ids = self._ids[first : first + self.page_size]
                hit = [first + n for n, i in enumerate(page_ids) if i in changed]
                if hit:
                    del self._pages[page]
                    rows += hit
            # a page on its way may hold changed rows read before the change: its answer
            # is dropped, and the page painted again (and so asked for again)
            in_flight, self._asked = self._asked, set()
            for page in sorted(in_flight):
                first = page * self.page_size
                rows += range(first, min(len(self._ids), first + self.page_size))
        last_column = len(COLUMNS) - 1
        # one dataChanged per contiguous run of rows
        start = prev = None
        for row in [*rows, None]:
            if row is not None and prev is not None and row == prev + 1:
                prev = row
                continue
            if start is not None and prev is not None:
                self.dataChanged.emit(self.index(start, 0), self.index(prev, last_column))
            start = prev = row

    def _page(self, page: int) -> list[EpisodeRow | None]:
        cached = self._pages.get(page)
        if cached is not None:
            self._pages.move_to_end(page)
            return cached
        ids = self._page_ids(page)
        return self._keep(page, ids, fetch_rows(self._store, ids))

    def _page_ids(self, page: int) -> list[int]:
        return self._ids[page * self.page_size : (page + 1) * self.page_size]

    def _keep(
        self, page: int, ids: list[int], found: dict[int, EpisodeRow]
    ) -> list[EpisodeRow | None]:
        rows = [found.get(i) for i in ids]
        self.pages_fetched += 1
        self._pages[page] = rows
        while len(self._pages) > self.max_pages:
            self._pages.popitem(last=False)
        return rows

    def _shown_row(self, row: int) -> EpisodeRow | str | None:
        """What a painted row shows: its row read, or (on a server, while its page is not
        read yet) the text that says so; the page is then asked for in the background."""
        page = row // self.page_size
        if not self._pages_in_background or page in self._pages:
            return self.row_data(row)
        if page in self._unread:
            return UNREAD_TEXT
        if page not in self._asked:
            self._ask_page(page)
        return PENDING_TEXT

    def _ask_page(self, page: int) -> None:
        assert self.ops is not None
        ids = self._page_ids(page)
        self._asked.add(page)

        def arrived(found: dict[int, EpisodeRow]) -> None:
            if page not in self._asked or self._page_ids(page) != ids:
                return  # reloaded or reset meanwhile: asked again when painted
            self._asked.discard(page)
            self._keep(page, ids, found)
            self._repaint(page)

        def failed(message: str) -> None:
            if page not in self._asked or self._page_ids(page) != ids:
                return
            self._asked.discard(page)
            self._unread.add(page)
            self._repaint(page)
            if not self._failure_said:  # once, however many pages the view paints
                self._failure_said = True
                self.load_failed.emit(message)

        self.ops.query(
            f"{PAGE_KEY}.{page}", lambda ctx: fetch_rows(ctx.store, ids), arrived, failed
        )

    def _repaint(self, page: int) -> None:
        first = page * self.page_size
        last = min(len(self._ids), first + self.page_size) - 1
        if last >= first:
            self.dataChanged.emit(self.index(first, 0), self.index(last, len(COLUMNS) - 1))

    def row_data(self, row: int) -> EpisodeRow | None:
        if not 0 <= row < len(self._ids):
            return None
        return self._page(row // self.page_size)[row % self.page_size]

    def episode_id(self, row: int) -> int:
        return self._ids[row]

    def ids_in_rows(self, spans: Iterable[tuple[int, int]]) -> list[int]:
        """The ids of the rows ``first..last`` (inclusive) of each span, in order."""
        found: list[int] = []
        for first, last in spans:
            found.extend(self._ids[max(first, 0) : last + 1])
        return found

    def row_of(self, episode_id: int) -> int | None:
        return self._row_of.get(episode_id)

    @property
    def ids(self) -> list[int]:
        return list(self._ids)

    # -- Qt model API ---------------------------------------------------------------------

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._ids)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._ids):
            return None
        if role == ID_ROLE:
            return self._ids[index.row()]
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        row = self._shown_row(index.row())
        if row is None:
            return "(deleted)" if role == Qt.ItemDataRole.DisplayRole else None
        if isinstance(row, str):  # its page is on its way, or could not be read
            return row if role == Qt.ItemDataRole.DisplayRole else None
        key = COLUMNS[index.column()][0]
        if role == Qt.ItemDataRole.ToolTipRole:
            if key == "preview":
                return row.preview
            if key == "time":
                return row.timestamp
            return None
        if key == "time":
            return format_time(row.timestamp)
        if key == "source":
            return row.source
        if key == "label":
            return label_in_force(row)
        if key == "model_label":
            return model_label_text(row)
        if key == "human_label":
            return row.human_label or "—"
        return row.preview

    def headerData(
        self,
        section: int,
        orientation: Qt.Orientation,
        role: int = Qt.ItemDataRole.DisplayRole,
    ) -> Any:
        if (
            orientation == Qt.Orientation.Horizontal
            and role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole)
            and 0 <= section < len(COLUMNS)
        ):
            return COLUMNS[section][1]
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sorting is a new SQL query, never an in-memory sort."""
        if not 0 <= column < len(COLUMNS):
            return
        spec = EpisodeSort(COLUMNS[column][0], order == Qt.SortOrder.DescendingOrder)
        if spec == self.sort_spec:
            return
        self.set_query(sort=spec)

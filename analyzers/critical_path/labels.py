"""Edge kinds and edge labels of the step graph, as codes into one table of distinct strings.

Each edge of a graph part (:mod:`analyzers.critical_path.rank_graph`) carries four labels —
its cause, the cause's detail, the event's name and a GPU row's op category — stored as codes
(int16; int32 from 32,768 strings) into the part's :attr:`EdgeLabels.table` (distinct strings,
``""`` first): a few hundred strings instead of four object arrays of one entry per edge.
Equal codes mean equal strings and the reverse (the table has no repeats), so labels are
compared and grouped by code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzers.critical_path.sources import COMMUNICATION, MEMORY

KINDS = ("host", "gpu", "stream", "launch", "sync", "wait", "arrive", "transfer", "complete")
"""Edge kinds; ``arrive`` / ``transfer`` are the cross-rank edges of the step graph."""
K = {k: i for i, k in enumerate(KINDS)}
SYNC_CALL_NAMES = frozenset(
    {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"}
)
"""Blocking host calls: their host time is ``synchronisation``."""
DATA_LOADING = re.compile(r"DataLoader|data_load|dataloader|_next_data|fetch", re.I)
UNRESOLVED = " after an unresolved cross-stream wait"
"""Appended to a ``launch`` / ``stream`` detail whose edge ends after an unresolved wait."""
FIXED = (
    "",
    "cpu",
    "exposed_communication",
    "memory",
    "compute",
    "launch_gap",
    "synchronisation",
    "data_loading",
    "launch",
    "stream",
    "cross-stream wait",
    "complete",
    "host",
    "launch" + UNRESOLVED,
    "stream" + UNRESOLVED,
)
"""Labels every table starts with (``""`` has code 0)."""


class Labelled:
    """Decoded labels of a table of coded edges or segments: its ``labels`` (distinct strings)
    and per row a ``cause_code``, ``detail_code`` and ``name_code`` into them (a mixin of
    :class:`~analyzers.critical_path.rank_graph.RankGraph`,
    :class:`~analyzers.critical_path.step_graph.StepGraph` and
    :class:`~analyzers.critical_path.blame.Segments`)."""

    labels: np.ndarray
    cause_code: np.ndarray
    detail_code: np.ndarray
    name_code: np.ndarray

    @property
    def cause(self) -> np.ndarray:
        """Each row's cause (object array of str)."""
        return self.labels[self.cause_code]

    @property
    def detail(self) -> np.ndarray:
        return self.labels[self.detail_code]

    @property
    def name(self) -> np.ndarray:
        return self.labels[self.name_code]


class Categorised(Labelled):
    """:class:`Labelled` with a ``category_code`` per row (a GPU row's op category)."""

    category_code: np.ndarray

    @property
    def category(self) -> np.ndarray:
        return self.labels[self.category_code]


@dataclass(frozen=True)
class EdgeLabels:
    """Per edge (cause, detail, name, category) as codes into :attr:`table`."""

    table: np.ndarray
    """The distinct label strings (object array, ``""`` first)."""
    cause: np.ndarray
    detail: np.ndarray
    name: np.ndarray
    category: np.ndarray


def distinct(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(canon, table)``: the distinct *strings* in first-seen order and, per entry of
    *strings*, its position there (a code: int16, or int32 for 32,768 distinct or more)."""
    codes, uniques = pd.factorize(np.asarray(strings, dtype=object))
    dtype = np.int16 if len(uniques) < 2**15 else np.int32
    return np.asarray(codes, dtype), np.asarray(uniques, dtype=object)


def edge_labels(
    kind: np.ndarray,
    ev_u: np.ndarray,
    ev_v: np.ndarray,
    ev_name: np.ndarray,
    names: np.ndarray,
    ev_cat: np.ndarray,
    cats: np.ndarray,
    step_event: np.ndarray,
    launching: np.ndarray,
    unresolved: np.ndarray,
) -> EdgeLabels:
    """The labels of the edges of kinds *kind* whose ends are the events *ev_u* / *ev_v* (-1:
    a node of no event); *ev_name* / *ev_cat*: per event, its name's position in *names* and a
    GPU row's op category's in *cats* (-1: none); *step_event*: per event, a ``ProfilerStep``;
    *launching*: per edge, a ``host`` edge between nodes of ops that launch GPU work;
    *unresolved*: per edge, its end follows an unresolved cross-stream wait.

    The cause table is blame's module docstring.  A ``gpu`` edge: ``exposed_communication``
    (detail: the kernel name up to its first "(", 60 characters), ``memory`` (the name up to
    " (") or ``compute`` (its category); ``launch`` / ``stream``: ``launch_gap`` (detail: the
    kind, with :data:`UNRESOLVED` after an unresolved wait); ``sync``: ``synchronisation`` (the
    call); ``wait``: ``synchronisation`` (cross-stream wait); ``complete``: ``cpu``.  A host
    edge's time belongs to the op it ends in (or the parent op between siblings):
    ``synchronisation`` for a blocking call (:data:`SYNC_CALL_NAMES`), ``data_loading`` when
    the name matches :data:`DATA_LOADING`, ``launch_gap`` (``host``) between nodes of ops that
    launch GPU work (neither a ``ProfilerStep``), else ``cpu``.  An edge's name is its end's
    event's (its start's when the end has none); its category is a ``gpu`` edge's row's, else
    ``""``.  Per-name work is done once per entry of *names*."""
    uniq = [str(u) for u in names.tolist()]
    n_u = len(uniq)
    comm_at, mem_at, name_at = len(FIXED), len(FIXED) + n_u, len(FIXED) + 2 * n_u
    cat_at = name_at + n_u + 1  # the names, then "" for an edge of no event
    canon, table = distinct(
        [
            *FIXED,
            *(u.split("(")[0][:60] for u in uniq),
            *(u.split(" (")[0] for u in uniq),
            *uniq,
            "",
            *(str(c) for c in cats.tolist()),
        ]
    )
    at = {v: int(canon[i]) for i, v in enumerate(FIXED)}
    i32 = np.int32
    m = len(kind)
    # each edge's name: its end's event's, else its start's, else ""
    ev_name_x = np.append(np.asarray(ev_name, i32), i32(n_u))  # event -1 → ""
    nm = ev_name_x[np.where(ev_v >= 0, ev_v, ev_u)]
    name = canon[name_at + nm]
    code = canon.dtype
    cause = np.full(m, at["cpu"], code)
    detail = np.zeros(m, code)
    category = np.zeros(m, code)
    # gpu edges: by the row's category
    g = np.flatnonzero(kind == K["gpu"])
    g_cat = np.asarray(ev_cat, np.int64)[ev_u[g]]
    category[g] = canon[cat_at + g_cat]
    cat_list = cats.tolist()
    comm = np.asarray([c == COMMUNICATION for c in cat_list], bool)[g_cat]
    mem = np.asarray([c == MEMORY for c in cat_list], bool)[g_cat] & ~comm
    comp = ~comm & ~mem
    cause[g[comm]], detail[g[comm]] = at["exposed_communication"], canon[comm_at + nm[g[comm]]]
    cause[g[mem]], detail[g[mem]] = at["memory"], canon[mem_at + nm[g[mem]]]
    cause[g[comp]], detail[g[comp]] = at["compute"], category[g[comp]]
    for k in ("launch", "stream"):
        e = np.flatnonzero(kind == K[k])
        late = unresolved[e]
        cause[e] = at["launch_gap"]
        detail[e] = np.where(late, at[k + UNRESOLVED], at[k]).astype(code)
    e = np.flatnonzero(kind == K["sync"])
    cause[e], detail[e] = at["synchronisation"], canon[name_at + nm[e]]
    e = np.flatnonzero(kind == K["wait"])
    cause[e], detail[e] = at["synchronisation"], at["cross-stream wait"]
    detail[kind == K["complete"]] = at["complete"]
    # host edges (both ends are host ops' boundaries; one block of edges as rank_graph adds them)
    h = np.flatnonzero((kind == K["host"]) & (ev_v >= 0))
    hs = slice(int(h[0]), int(h[-1]) + 1) if len(h) and h[-1] - h[0] + 1 == len(h) else h
    hn = nm[hs]
    is_sync = np.asarray([u in SYNC_CALL_NAMES for u in uniq] + [False], bool)[hn]
    cause[h[is_sync]], detail[h[is_sync]] = at["synchronisation"], canon[name_at + hn[is_sync]]
    data = np.asarray([DATA_LOADING.search(u) is not None for u in uniq] + [False], bool)[hn]
    data &= ~is_sync
    cause[h[data]], detail[h[data]] = at["data_loading"], canon[name_at + hn[data]]
    step_x = np.append(np.asarray(step_event, bool), False)  # event -1 → not a step
    gap = h[launching[hs] & ~is_sync & ~data]
    gap = gap[~(step_x[ev_u[gap]] | step_x[ev_v[gap]])]
    cause[gap], detail[gap] = at["launch_gap"], at["host"]
    return EdgeLabels(table, cause, detail, name, category)

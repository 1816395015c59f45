"""The normalized trace model: one :class:`Trace` per rank, whatever the source format.

Every collector (Kineto JSON, Nsight Systems SQLite, live capture) builds this once; every
analyzer reads only this.  Tables are pandas DataFrames with numpy integer columns; repeated
strings (names, categories) are ``category`` dtype, i.e. interned.

Times are **integer nanoseconds** (int64) on the source's own clock (Kineto: the µs
timestamps × 1000 exactly; nsys: the session's ns timestamps).  ``end_ns`` is exclusive in
the sense that ``dur = end_ns - start_ns``.  Unknown integers are ``-1``, unknown floats NaN,
unknown strings ``None``/NaN in object columns.

Tables
------
``gpu``  one row per device activity (kernels, memcpy, memset, synchronization):

    =====================  =======  ============================================================
    column                 dtype    meaning
    =====================  =======  ============================================================
    name                   category kernel name (demangled where the source has it)
    kind                   category ``kernel`` | ``memcpy`` | ``memset`` | ``sync`` | ``other``
    start_ns, end_ns       int64    activity interval
    device                 int64    device ordinal (-1 unknown)
    stream                 int64    stream id; **-1 = no stream** (HTA: not a GPU event)
    correlation            int64    links to the launching ``host`` row (-1 none)
    external_id            int64    Kineto ``External id`` (links to the CPU op), -1 none
    grid_x..grid_z         int64    grid dimensions (-1 unknown)
    block_x..block_z       int64    block dimensions (-1 unknown)
    registers_per_thread   int64    -1 unknown
    static_smem_bytes      int64    static shared memory per block (-1 unknown)
    dynamic_smem_bytes     int64    dynamic shared memory per block (-1 unknown)
    shared_mem_bytes       int64    total shared memory per block (-1 unknown)
    bytes                  int64    bytes moved/set by memcpy/memset (-1 otherwise)
    copy_kind              category memcpy direction (``HtoD``, ``DtoH``, ``DtoD``, ...) or NaN
    est_achieved_occupancy float64  CUPTI's estimate in % (Kineto ``est. achieved occupancy %``)
    blocks_per_sm          float64  as reported by the source, NaN if absent
    warps_per_sm           float64  as reported by the source, NaN if absent
    comm_args              object   dict of NCCL/collective metadata found on the event, or None
    wait_on_stream         int64    ``sync`` rows: the stream whose work is waited on (Kineto
                                    ``args.wait_on_stream``; -1 unknown or not a sync row)
    wait_on_event_         int64    ``sync`` rows: correlation of the ``cudaEventRecord`` call
    correlation                     whose event is waited on (Kineto
                                    ``args.wait_on_cuda_event_record_corr_id``; -1 unknown)
    event_index            int64    the event's position in the source's event list (Kineto:
                                    in ``traceEvents``, counting every event; HTA's tie-break
                                    for events that start at the same instant); -1 unknown
    =====================  =======  ============================================================

``host``  one row per host-side event: CPU ops, runtime/driver API calls, user annotations:

    name (category), cat (category: ``cpu_op``, ``cuda_runtime``, ``cuda_driver``,
    ``user_annotation``, ``python_function``, ...), start_ns, end_ns, pid, tid (int64),
    correlation (int64, -1), external_id (int64, -1), input_dims (object: str or None),
    input_types (object: str or None), concrete_inputs (object: str or None; Kineto
    ``Concrete Inputs``, the scalar arguments as strings), input_strides (object: str or None;
    Kineto ``Input Strides``), comm_args (object: dict or None), launch_kernel (category: on
    device API calls (:data:`LAUNCH_CATS`), the kernel the call launches as the source records
    it (Kineto ``args.kernel``; also while a CUDA graph is captured, when no kernel runs), None
    elsewhere or when not recorded), event_index (int64, as in ``gpu``).  The four argument
    columns are compact JSON text as recorded.

``annotations``  ranges that name a stretch of time: ``ProfilerStep#N``, user ranges, NVTX,
    GPU-side user annotations: name (category), kind (category: ``step`` | ``user`` |
    ``gpu_user`` | ``nvtx``), start_ns, end_ns, step (int64, -1 unless a step), domain
    (category or NaN), pid, tid, stream (int64, -1), payload (object: dict of an NVTX range's
    payload, e.g. NCCL's communicator and message size, or None).

``counters``  time series: name (category), ts_ns (int64), value (float64), device (int64).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from collectors.kinds import GPU_KINDS as GPU_KINDS
from collectors.kinds import GPU_WORK_KINDS as GPU_WORK_KINDS
from collectors.kinds import LAUNCH_CATS as LAUNCH_CATS

MODEL_VERSION = 4
"""Bumped whenever a column is added, removed or changes meaning (keys the parse cache)."""

GPU_INT_COLUMNS = (
    "start_ns",
    "end_ns",
    "device",
    "stream",
    "correlation",
    "external_id",
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "static_smem_bytes",
    "dynamic_smem_bytes",
    "shared_mem_bytes",
    "bytes",
    "wait_on_stream",
    "wait_on_event_correlation",
    "event_index",
)
GPU_FLOAT_COLUMNS = ("est_achieved_occupancy", "blocks_per_sm", "warps_per_sm")
GPU_COLUMNS = ("name", "kind", *GPU_INT_COLUMNS, "copy_kind", *GPU_FLOAT_COLUMNS, "comm_args")

HOST_INT_COLUMNS = (
    "start_ns",
    "end_ns",
    "pid",
    "tid",
    "correlation",
    "external_id",
    "event_index",
)
HOST_ARG_COLUMNS = ("input_dims", "input_types", "concrete_inputs", "input_strides")
HOST_COLUMNS = (
    "name",
    "cat",
    *HOST_INT_COLUMNS,
    *HOST_ARG_COLUMNS,
    "comm_args",
    "launch_kernel",
)
ANNOTATION_KINDS = ("step", "user", "gpu_user", "nvtx")
ANNOTATION_INT_COLUMNS = ("start_ns", "end_ns", "step", "pid", "tid", "stream")
ANNOTATION_COLUMNS = ("name", "kind", *ANNOTATION_INT_COLUMNS, "domain", "payload")

COUNTER_COLUMNS = ("name", "ts_ns", "value", "device")


@dataclass(frozen=True)
class DeviceInfo:
    """Properties of one GPU, as far as the source records them (None = unknown)."""

    id: int
    name: str | None = None
    vendor: str | None = None
    compute_major: int | None = None
    compute_minor: int | None = None
    sm_count: int | None = None
    total_memory_bytes: int | None = None
    memory_bandwidth_bytes_per_s: float | None = None
    l2_cache_bytes: int | None = None
    clock_rate_khz: int | None = None
    warp_size: int | None = None
    max_threads_per_block: int | None = None
    max_threads_per_sm: int | None = None
    max_warps_per_sm: int | None = None
    max_blocks_per_sm: int | None = None
    regs_per_block: int | None = None
    regs_per_sm: int | None = None
    smem_per_block_bytes: int | None = None
    smem_per_block_optin_bytes: int | None = None
    smem_per_sm_bytes: int | None = None

    @property
    def arch(self) -> str | None:
        """``sm_XY`` from the compute capability, or None."""
        if self.compute_major is None or self.compute_minor is None:
            return None
        return f"sm_{self.compute_major}{self.compute_minor}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the summary's ``device`` object)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["arch"] = self.arch
        return out


@dataclass
class TraceMeta:
    """Where a trace came from and which rank it is."""

    rank: int
    source_format: str
    """``kineto`` | ``nsys`` | ``synthetic`` | ``live``."""
    source_path: str | None = None
    source_version: str | None = None
    """Kineto ``schemaVersion``, nsys export/schema version, ..."""
    world_size: int | None = None
    rank_source: str = "unknown"
    """How the rank was found: distributedInfo, filename, default, argument or nsys."""
    hostname: str | None = None
    base_time_ns: int | None = None
    """Wall-clock (Unix epoch ns) of the trace's time origin, when known; for display only."""
    devices: list[DeviceInfo] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """Source-specific facts worth keeping (distributedInfo, pg_config, nsys session info...)."""

    def device(self, device_id: int | None = None) -> DeviceInfo | None:
        """The device with that id, or the device the trace's GPU work ran on, or None."""
        if not self.devices:
            return None
        if device_id is None:
            return self.devices[0]
        for d in self.devices:
            if d.id == device_id:
                return d
        return None


TABLES = ("gpu", "host", "annotations", "counters")
"""The names of a :class:`Trace`'s tables, in field order."""


@dataclass
class Trace:
    """One rank's normalized trace.  Build with :func:`make_trace`; never mutate tables.

    What analyses derive from it (e.g. the collectives table, :mod:`analyzers.collectives`) is
    memoised beside the analyzers (:mod:`analyzers.memo`), not stored here.
    """

    meta: TraceMeta
    gpu: pd.DataFrame
    host: pd.DataFrame
    annotations: pd.DataFrame
    counters: pd.DataFrame

    @property
    def rank(self) -> int:
        return self.meta.rank

    @property
    def nbytes(self) -> int:
        """Bytes of the four tables' columns (each column's array; an object column counts
        its pointers, not the objects)."""
        return sum(int(getattr(self, t).memory_usage(index=False).sum()) for t in TABLES)

    @property
    def gpu_device(self) -> DeviceInfo | None:
        """The device this rank's GPU work ran on (most frequent device id), if known."""
        if self.gpu.empty or not self.meta.devices:
            return self.meta.device()
        devs = self.gpu["device"]
        devs = devs[devs >= 0]
        if devs.empty:
            return self.meta.device()
        return self.meta.device(int(devs.mode().iloc[0])) or self.meta.device()

    def steps(self) -> pd.DataFrame:
        """Step annotations (``ProfilerStep#N``...) by start: step, start_ns, end_ns."""
        a = self.annotations
        s = a[a["kind"] == "step"][["step", "start_ns", "end_ns"]]
        return s.sort_values("start_ns", kind="stable").reset_index(drop=True)


def _frame(
    columns: dict[str, Any], order: tuple[str, ...], n: int, *, owned: bool = False
) -> pd.DataFrame:
    """The table of *columns*; *owned*: the arrays are the frame's own (no copy, one block per
    column), else copied into consolidated blocks.  An object column stays ``object``, as the
    model defines it (pandas ≥ 3 would otherwise store a column of strings and None as its
    ``str`` dtype: a copy of every string, on the MTIA trace about 0.02 s of the command, and
    NaN for None)."""
    data = {}
    for col in order:
        v = columns.get(col)
        if isinstance(v, np.ndarray) and v.dtype == object:
            v = pd.Series(v, index=pd.RangeIndex(n), dtype=object, copy=False)
        data[col] = v
    return pd.DataFrame(data, index=pd.RangeIndex(n), copy=not owned)


def _int_col(values: Any, n: int) -> np.ndarray:
    if values is None:
        return np.full(n, -1, dtype=np.int64)
    return np.asarray(values, dtype=np.int64)


def _float_col(values: Any, n: int) -> np.ndarray:
    if values is None:
        return np.full(n, np.nan, dtype=np.float64)
    return np.asarray(values, dtype=np.float64)


def _cat_col(values: Any, n: int) -> pd.Categorical:
    if values is None:
        return pd.Categorical([None] * n)
    if isinstance(values, pd.Categorical):
        return values
    return pd.Categorical(values)


def _obj_col(values: Any, n: int, owned: bool = False) -> np.ndarray:
    """An object column holding each value as it is (a list stays one list: no nested-sequence
    discovery, which a slice assignment of a list does per element); an object array handed
    over (*owned*) is kept as it is."""
    if values is None:
        return np.full(n, None, dtype=object)
    if isinstance(values, np.ndarray):
        if owned and values.dtype == object and values.ndim == 1:
            return values
        out = np.empty(n, dtype=object)
        out[:] = values
        return out
    return np.fromiter(values, dtype=object, count=n)


def _build(
    cols: dict[str, Any] | None,
    order: tuple[str, ...],
    ints: tuple[str, ...],
    floats: tuple[str, ...],
    cats: tuple[str, ...],
    *,
    owned: bool = False,
) -> pd.DataFrame:
    cols = dict(cols or {})
    unknown = set(cols) - set(order)
    if unknown:
        raise ValueError(f"unknown trace-model columns: {sorted(unknown)}")
    lengths = {len(v) for v in cols.values() if v is not None}
    if len(lengths) > 1:
        raise ValueError(f"columns of different lengths: {lengths}")
    n = lengths.pop() if lengths else 0
    out: dict[str, Any] = {}
    for c in order:
        v = cols.get(c)
        if c in ints:
            out[c] = _int_col(v, n)
        elif c in floats:
            out[c] = _float_col(v, n)
        elif c in cats:
            out[c] = _cat_col(v, n)
        else:
            out[c] = _obj_col(v, n, owned)
    return _frame(out, order, n, owned=owned)


def gpu_table(cols: dict[str, Any] | None = None, *, owned: bool = False) -> pd.DataFrame:
    """Build a ``gpu`` table from column arrays; missing columns get their unknown value.
    *owned*: the caller hands its arrays over (the table keeps them without a copy)."""
    cat_cols = ("name", "kind", "copy_kind")
    df = _build(cols, GPU_COLUMNS, GPU_INT_COLUMNS, GPU_FLOAT_COLUMNS, cat_cols, owned=owned)
    df["kind"] = (
        df["kind"].cat.set_categories(GPU_KINDS)
        if len(df)
        else pd.Categorical([], categories=GPU_KINDS)
    )
    return df


def host_table(cols: dict[str, Any] | None = None, *, owned: bool = False) -> pd.DataFrame:
    """Build a ``host`` table from column arrays (*owned*: as in :func:`gpu_table`)."""
    cat_cols = ("name", "cat", "launch_kernel")
    return _build(cols, HOST_COLUMNS, HOST_INT_COLUMNS, (), cat_cols, owned=owned)


def annotation_table(cols: dict[str, Any] | None = None, *, owned: bool = False) -> pd.DataFrame:
    """Build an ``annotations`` table from column arrays (*owned*: as in :func:`gpu_table`)."""
    cat_cols = ("name", "kind", "domain")
    df = _build(cols, ANNOTATION_COLUMNS, ANNOTATION_INT_COLUMNS, (), cat_cols, owned=owned)
    df["kind"] = (
        df["kind"].cat.set_categories(ANNOTATION_KINDS)
        if len(df)
        else pd.Categorical([], categories=ANNOTATION_KINDS)
    )
    return df


def counter_table(cols: dict[str, Any] | None = None, *, owned: bool = False) -> pd.DataFrame:
    """Build a ``counters`` table from column arrays (*owned*: as in :func:`gpu_table`)."""
    return _build(cols, COUNTER_COLUMNS, ("ts_ns", "device"), ("value",), ("name",), owned=owned)


def make_trace(
    meta: TraceMeta,
    gpu: dict[str, Any] | pd.DataFrame | None = None,
    host: dict[str, Any] | pd.DataFrame | None = None,
    annotations: dict[str, Any] | pd.DataFrame | None = None,
    counters: dict[str, Any] | pd.DataFrame | None = None,
    *,
    owned: bool = False,
) -> Trace:
    """Assemble a :class:`Trace`, normalizing dtypes and filling absent columns.

    *owned*: the column arrays of the dicts are handed over (a reader's fresh arrays): the
    tables keep them, one block per column, instead of copying them into consolidated blocks
    (which holds two copies at once)."""

    def norm(x: Any, build: Any) -> pd.DataFrame:
        if isinstance(x, pd.DataFrame):
            return build({c: x[c].to_numpy() if c in x else None for c in x.columns})
        return build(x, owned=owned)

    return Trace(
        meta=meta,
        gpu=norm(gpu, gpu_table),
        host=norm(host, host_table),
        annotations=norm(annotations, annotation_table),
        counters=norm(counters, counter_table),
    )


def object_values(col: pd.Series) -> np.ndarray:
    """``col.astype(object)`` as an array (missing values NaN in a categorical), made once per
    category of a categorical column instead of once per row."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        labels = np.append(col.cat.categories.to_numpy(dtype=object), np.nan)
        return labels[col.cat.codes.to_numpy()]
    return np.asarray(col.astype(object).to_numpy(), dtype=object)


def names_matching(col: pd.Series, match: Callable[[str], object]) -> np.ndarray:
    """Rows of a name column whose value, as ``str``, satisfies *match* (e.g. a compiled
    pattern's ``search``), each distinct value tested once; a missing value never matches."""
    cat = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    hits = [bool(match(str(c))) for c in cat.cat.categories]
    return np.asarray([*hits, False], dtype=bool)[cat.cat.codes.to_numpy()]


def str_values(col: pd.Series) -> np.ndarray:
    """``col.astype(str).to_numpy(dtype=object)`` (missing values NaN): for a categorical
    column of strings, :func:`object_values`."""
    if isinstance(col.dtype, pd.CategoricalDtype) and pd.api.types.is_string_dtype(
        col.cat.categories.dtype
    ):
        return object_values(col)
    return col.astype(str).to_numpy(dtype=object)


def str_array(col: pd.Series) -> np.ndarray | pd.api.extensions.ExtensionArray:
    """What a DataFrame or Series built from :func:`str_values` holds: pandas' default
    ``str`` column (missing values NaN).  For a categorical column of strings where that column
    is stored by pyarrow (pandas ≥ 3 with pyarrow installed), it is decoded from the categories
    by pyarrow without a Python object per row (about 30x faster on a million rows); otherwise
    it is :func:`str_values` itself, which the constructor converts as before."""
    dtype = _inferred_str_dtype()
    if (
        not isinstance(col.dtype, pd.CategoricalDtype)
        or not pd.api.types.is_string_dtype(col.cat.categories.dtype)
        or getattr(dtype, "storage", None) != "pyarrow"
    ):
        return str_values(col)
    codes = col.cat.codes.to_numpy()
    if not (codes >= 0).any():  # no string at all: the constructor keeps it an object column
        return str_values(col)
    import pyarrow as pa

    labels = pa.array(col.cat.categories.to_numpy(dtype=object), type=pa.large_string())
    decoded = pa.DictionaryArray.from_arrays(pa.array(codes, mask=codes < 0), labels)
    # pandas 3 takes the dtype (its na_value), which pandas-stubs does not list yet
    make: Any = pd.arrays.ArrowStringArray
    out: pd.api.extensions.ExtensionArray = make(decoded.dictionary_decode(), dtype=dtype)
    return out


@functools.cache
def _inferred_str_dtype() -> Any:
    """The dtype pandas infers for a column of Python strings (``object`` before pandas 3)."""
    return pd.Series(np.array(["a", None], dtype=object)).dtype

"""Exact JSON for the cache: object values of the trace tables and the trace meta, stored so
that they read back with the same types (tuples, non-string dict keys, big integers, NaN)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from collectors.cache.errors import UnencodableError
from collectors.model import DeviceInfo, TraceMeta


def _tag(v: Any) -> Any:
    t = type(v)
    if v is None or t is str or t is bool or t is int or t is float:
        return v
    if t is list:
        return [_tag(x) for x in v]
    if t is tuple:
        return {"__tuple__": [_tag(x) for x in v]}
    if t is dict:
        if all(type(k) is str and not k.startswith("__") for k in v):
            return {k: _tag(x) for k, x in v.items()}
        return {"__dict__": [[_tag(k), _tag(x)] for k, x in v.items()]}
    raise UnencodableError(f"cannot cache a value of type {t.__module__}.{t.__qualname__}")


def _untag(d: dict[str, Any]) -> Any:
    if len(d) == 1:
        if "__tuple__" in d:
            return tuple(d["__tuple__"])
        if "__dict__" in d:
            return {k: v for k, v in d["__dict__"]}
    return d


def dumps_exact(value: Any) -> str:
    """JSON text from which :func:`loads_exact` rebuilds *value* with the same types.

    Raises:
        UnencodableError: *value* holds something other than None, bool, int, float, str,
            list, tuple or dict.
    """
    return json.dumps(_tag(value), separators=(",", ":"), ensure_ascii=False, allow_nan=True)


def loads_exact(text: str) -> Any:
    """The value written by :func:`dumps_exact`."""
    return json.loads(text, object_hook=_untag)


def meta_to_dict(meta: TraceMeta) -> dict[str, Any]:
    """Every field of *meta* (devices as dicts of their fields)."""
    out = {f.name: getattr(meta, f.name) for f in dataclasses.fields(meta)}
    out["devices"] = [
        {f.name: getattr(d, f.name) for f in dataclasses.fields(d)} for d in meta.devices
    ]
    return out


def meta_from_dict(d: dict[str, Any]) -> TraceMeta:
    """Inverse of :func:`meta_to_dict`."""
    d = dict(d)
    d["devices"] = [DeviceInfo(**x) for x in d.get("devices", [])]
    return TraceMeta(**d)

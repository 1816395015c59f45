"""The garbage collector held off while ``gpuscope analyze`` imports its modules.

The command imports typer, rich, pandas, pyarrow and the analyses before its work: hundreds of
thousands of long-lived objects (modules, classes, functions) and no garbage, yet each of them
makes the collector run (about 30 ms of collections on the MTIA trace, none collecting
anything), and every later full collection walks them again.  The console script
(:mod:`cli.launch`) calls :func:`hold` first; the command calls :func:`release` when its
imports are done and its work begins: what the imports made is frozen (:func:`gc.freeze`: left
out of later collections until a forked helper's :func:`gc.unfreeze`,
:func:`collectors.forking.fork_helper`) and collections resume.  Interleaved, fresh
processes, medians: MTIA 0.665 → 0.621 s, 2 × 47 MB 1.005 → 0.977 s (7 each), 300 MB 2.026 →
1.979 s (5).  Neither changes what the command computes; reference counting frees every object
as before, only cycles wait for a collection.
"""

from __future__ import annotations

import gc

_held = [False]
"""Whether :func:`hold` stopped the collector (and :func:`release` has not restarted it)."""


def hold() -> None:
    """Stop automatic collections until :func:`release` (nothing where they are off already)."""
    if gc.isenabled():
        gc.disable()
        _held[0] = True


def release() -> None:
    """Freeze the objects made so far and restart automatic collections; nothing unless
    :func:`hold` stopped them."""
    if _held[0]:
        _held[0] = False
        gc.freeze()
        gc.enable()


def held() -> bool:
    """Whether collections are held off by :func:`hold`."""
    return _held[0]

"""gpuscope run's zero-code shim (this directory is put first on the child's PYTHONPATH).

Python imports ``sitecustomize`` at start-up.  Under ``gpuscope run`` (``GPUSCOPE_RUN_DIR``
set) this arms capture: it starts when the program imports torch, and steps are marked at
``torch.optim.Optimizer.step`` unless the program calls ``profiler.step()`` itself.  Then the
next ``sitecustomize`` on the path, if any, runs as it would have without gpuscope.  A Python
without gpuscope installed simply runs uncaptured.
"""

import os
import sys


def _gpuscope_boot() -> None:
    if os.environ.get("GPUSCOPE_RUN_DIR"):
        try:
            from profiler import autostart

            autostart.install()
        except Exception:
            pass
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import importlib.machinery
        import importlib.util

        path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is not None and spec.loader is not None and spec.origin != __file__:
            mod = importlib.util.module_from_spec(spec)
            sys.modules["sitecustomize"] = mod
            spec.loader.exec_module(mod)
    except Exception:
        pass


_gpuscope_boot()

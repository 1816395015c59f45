"""gpuscope's version: its one definition.

``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``, parsed from this file without
importing it), so the installed distribution's version is this string; the JSON summary's and
the compare document's ``tool.version``, the trace cache's entries, ``gpuscope run``'s
environment record and ``gpuscope version`` give it without reading
the distribution's metadata (``importlib.metadata`` and what it imports: about 15 ms before
the first section of every ``gpuscope analyze``)."""

VERSION = "0.1.0"

"""The JSON summary as a typed, validated interface: :mod:`.schema` (the shape of every
section, ``SCHEMA_VERSION``) and :mod:`.reader` (``read_summary``, the one validating reader)."""

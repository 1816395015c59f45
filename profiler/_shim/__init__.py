"""The zero-code shim that ``gpuscope run`` puts first on the child's ``PYTHONPATH``."""

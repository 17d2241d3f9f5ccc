"""A month of strangers (``python -m bench.strangers``): see ``__main__``."""

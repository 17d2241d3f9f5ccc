"""A year in an hour: the simulated year of a busy deployment (``python -m bench.year``)."""

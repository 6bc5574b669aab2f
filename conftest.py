"""Loaded by every pytest run in this repository (tests/ and the chapters under nbval):
registers tests/nbval_figures.py, which compares plotly figures numerically with a stated
tolerance and everything else exactly."""
pytest_plugins = ["tests.nbval_figures"]

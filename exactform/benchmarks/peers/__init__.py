"""Peers of the benchmarks, each run in its own virtual environment (never exactform dependencies)."""

"""The performance suite: each ``*_bench.py`` prints a table of ratios measured in one run."""

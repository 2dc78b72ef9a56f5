"""exactform: exact, machine-checked Transformer constructions of Maxout networks."""
__version__ = "0.1.0"

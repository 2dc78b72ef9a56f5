"""Constructions: Maxout → Transformer, CPWL front-ends, region-rich families."""

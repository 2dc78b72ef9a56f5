"""Exact geometry shared by the provers (``provers/``, ``search/``) and ``construct/``: intervals of affine forms over boxes,
cells and their refinement, exact LP, rigorous enclosures, convexity over boxes.  It imports
neither of them."""

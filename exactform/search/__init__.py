"""Deciding a property of one network, or the equivalence of two, by branch and bound: a float search
that decides nothing, leaves closed by exact witnesses, and a certificate the checker re-verifies.

``bab`` (the driver ``verify`` and ``equiv_relax`` both run, and its bisection), ``relaxation`` (the
linear relaxation of a node table in floating point, and the exact witnesses rounded from it), ``tree``
(a proof tree's entries as written); ``verify`` and ``exact_leaf`` (V1: a VNN-LIB property, ``unsat``
with its certificate or ``sat`` with an exact counterexample), ``equiv`` (E1 by exact cells, and
``--max-diff``), ``equiv_relax`` (E1 with a tolerance, by the differential linear relaxation),
``equiv_bound`` (a sound bound of |A − B|∞ over a box).  Geometry (cells, exact LP) is in ``geometry/``;
the checker in ``checker/``."""

"""The provers: they search for a claim's proof and write what the checker re-verifies.

``symbolic`` and ``smt`` (C1–C3: symbolic identities and SMT-LIB queries), ``softmax`` (C5: the
softmax error bound and the least λ meeting it), ``verify`` and ``exact_leaf`` (V1: branch and bound
over a VNN-LIB property, its leaves closed by exact Farkas witnesses), ``equiv``, ``equiv_relax`` and
``equiv_bound`` (E1: equivalence of two models, by exact cells, the differential relaxation, and a
differential bound).  Geometry (regions, cells, exact LP) lives in ``geometry/``; the claim scripts
and the Coq theorems in ``proofs/``; the independent checker in ``checker/``."""

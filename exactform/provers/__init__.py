"""Proving a construction: that a Transformer computes its Maxout net (C1–C3) and how far softmax
attention is from it (C5), and writing that proof as a certificate.

``symbolic`` (C1, C3: exact affine identities per block and token), ``smt`` (C1–C3 as SMT-LIB queries,
each required unsat), ``softmax`` (C5: the error bound and the least λ meeting it), ``write`` (the
canonical certificate: both models, the hints the checker verifies one by one, its statements).  The
independent checker (``checker/``) re-verifies every certificate; the claim scripts and the Coq
theorems are in ``proofs/``."""

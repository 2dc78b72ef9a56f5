"""Proofs: symbolic identities, SMT queries, softmax lemmas (geometry lives in ``geometry/``)."""

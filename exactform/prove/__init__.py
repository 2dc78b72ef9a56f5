"""Proofs: interval bounds, symbolic identities, SMT queries, softmax lemmas, region counts."""

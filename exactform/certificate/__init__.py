"""Writing the certificates of C1–C5 (``write``: the canonical document embedding both models, with
the hints the checker reads).  V1 and E1 certificates are written by their searches
(``prove.verify.certificate``, ``prove.equiv.certificate``); all are re-verified by ``checker/``."""

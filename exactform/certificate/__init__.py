"""Certificates (claim C8): writing them (write.py) and the independent checker (check.py)."""

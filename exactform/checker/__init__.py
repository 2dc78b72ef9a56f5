"""The independent certificate checker (claim C8, docs/spec.md §6): standard library only, nothing else
of exactform.  ``reader`` (formats, limits), ``cost`` (work bounds), ``walk`` (C1–C5), ``equiv`` (E1),
``smt`` (``--smt``), ``report`` (``--junit``), ``command`` (``exactform check``)."""

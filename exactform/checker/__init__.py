"""The independent certificate checker (claim C8, docs/spec.md §6–§8): standard library only, nothing else
of exactform.  ``reader`` (formats, limits, exact affine forms), ``cost`` (work bounds, before any
arithmetic), ``construction`` (C1–C5: the walk of a Transformer against its Maxout net), ``forms`` (the
node table E1 and V1 read), ``splits`` (the split records of their trees), ``equiv`` (E1), ``relax`` (a leaf's linear relaxation and Farkas test, V1
and E1), ``verify_cert`` (V1), ``vnnlib`` (properties), ``onnx_reader`` and ``nnet_reader`` (the network
files a certificate binds to), ``smt`` (``--smt``), ``report`` (``--junit``), ``command`` (``exactform
check``)."""

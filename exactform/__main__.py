"""``python -m exactform``: the ``exactform`` command."""
import sys

from .cli import main

sys.exit(main())

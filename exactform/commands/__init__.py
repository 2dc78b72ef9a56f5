"""One module per ``exactform`` sub-command, and the note the certificate writers share."""
import sys


def note_work(path, needed: int) -> int:
    """Say on stderr when ``exactform check`` needs more than its default work bound for the certificate
    written to ``path`` (``needed``: the checker's own figure), with the option that checks it; return
    ``needed`` (``--json`` reports it as ``check_work``)."""
    from ..checker.cost import MAX_WORK
    if needed > MAX_WORK:
        print(f"exactform: note: {path} is beyond the checker's default work bound ({needed:.1e} > {MAX_WORK:.3g}): "
              f"check it with `exactform check {path} --max-work {needed}`", file=sys.stderr)
    return needed

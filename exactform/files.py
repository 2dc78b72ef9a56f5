"""Writing files safely (standard library only): outputs are
checked before any work, and written atomically, so a failed or stopped command never leaves a
half-written file and never replaces a folder, device or FIFO."""
from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
from pathlib import Path

from .errors import InputError

WRITTEN: list[str] = []
"""Files ``write_text`` has completed in this process (the CLI reports them if ``--timeout`` stops it)."""


def write_text(path: str | os.PathLike, text) -> None:
    """Write ``text`` (a string, or an iterable of strings written as they come) as UTF-8,
    gzip-compressed (reproducibly: no time, no name) when the name ends in ``.gz``, atomically
    (``replacing``)."""
    with replacing(path) as raw, (gzip.GzipFile("", "wb", 9, raw, mtime=0) if Path(path).name.endswith(".gz")
                                  else contextlib.nullcontext(raw)) as f:
        for chunk in [text] if isinstance(text, str) else text:
            f.write(chunk.encode("utf-8"))


@contextlib.contextmanager
def replacing(path: str | os.PathLike):
    """``with replacing(path) as f:`` writes a temporary binary file (same folder, seekable) renamed
    over ``path`` if the block ends normally, else removed.  Only a regular file is replaced."""
    target = output_file(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
        os.chmod(tmp, 0o666 & ~_umask())   # mkstemp makes 0600; give the mode a plain open() would
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    WRITTEN.append(str(path))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def output_file(path: str | os.PathLike, option: str = "") -> Path:
    """``path`` as a place for a new or replaced regular file, checked before any work: not empty,
    its folder exists, and it is not a folder, device, FIFO or socket (``InputError`` otherwise)."""
    target = _checked(path, option, Path.is_file, "a regular file")
    if not target.resolve().parent.is_dir():
        raise _refused(path, option, f": no folder {target.parent}")
    return target


OUTPUT_FILES = {"output": "-o", "cert": "--cert", "junit": "--junit", "plot": "--plot", "cells": "--cells",
                "counterexample": "--counterexample"}
"""The command-line options that name an output file (argparse ``dest`` → option)."""


def outputs_apart(args: object) -> None:
    """Refuse, before any work, an output file of ``args`` (``OUTPUT_FILES``) that is one of the
    command's inputs (any other argument naming an existing file) or another output: the same
    path, or the same file through a link (``os.path.samefile``)."""
    values = vars(args)
    outputs = [(option, v) for dest, option in OUTPUT_FILES.items() if isinstance(v := values.get(dest), str) and v]
    inputs = [v for dest, value in values.items() if dest not in OUTPUT_FILES
              for v in (value if isinstance(value, list) else [value]) if isinstance(v, str) and os.path.isfile(v)]
    for n, (option, out) in enumerate(outputs):
        for other, what in [(v, "an input") for v in inputs] + [(v, f"{o}'s file") for o, v in outputs[:n]]:
            if os.path.realpath(out) == os.path.realpath(other) or _same_file(out, other):
                also = "" if out == other else f" ({other})"
                raise InputError(option, "", f"{out} is also {what}{also}; write to another file")


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def output_folder(path: str | os.PathLike, option: str = "") -> Path:
    """``path`` as a folder to write into (created later if missing), checked before any work."""
    return _checked(path, option, Path.is_dir, "a folder")


def _checked(path, option: str, is_kind, noun: str) -> Path:
    """``path``, not empty and, where something already exists there, ``noun``."""
    if not str(path):
        raise InputError(option or str(path), "", "empty path")
    target = Path(path)
    if target.exists() and not is_kind(target):
        raise _refused(path, option, f" is {_file_kind(target)}, not {noun}")
    return target


def _refused(path, option: str, why: str) -> InputError:
    """The error about an output, naming its option (if any) and its path once."""
    return InputError(option, "", f"{path}{why}") if option else InputError(str(path), "", why.lstrip(": "))


def _file_kind(path: Path) -> str:
    for test, kind in ((Path.is_dir, "a folder"), (Path.is_file, "a file"), (Path.is_fifo, "a FIFO"),
                       (Path.is_char_device, "a device"), (Path.is_block_device, "a device"),
                       (Path.is_socket, "a socket")):
        if test(path):
            return kind
    return "not a regular file"

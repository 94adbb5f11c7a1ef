"""Command-line flags read from a dataclass: one ``--field-name`` per field, typed by the field's annotation
(``int``, ``float``, ``str``, ``bool`` as a switch, ``X | None`` as an optional ``X``). The CLIs of core.train,
core.training.experiment and core.variants.xl build their parsers with :func:`add_fields`, so a new config field is a
new flag."""
from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import types
import typing


_ASCII_INT = re.compile(r"[+-]?[0-9]{1,20}")


def ascii_int(text: str) -> int:
    """An integer flag written in ASCII digits: Python's int() also reads '٣' (Arabic-Indic three), '３' and
    '1_000', which no one types on purpose."""
    if not isinstance(text, str) or not _ASCII_INT.fullmatch(text.strip()):
        raise ValueError(f"not an integer in ASCII digits: {text!r}")
    return int(text)


ascii_int.__name__ = "int"  # argparse names the type in its message: "invalid int value: '٣'"


def _flag_type(hint):
    """The type argparse converts a flag to, from a field's annotation (``int | None`` → ``int``)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _flag_type(args[0]) if len(args) == 1 else str
    return ascii_int if hint is int else hint if hint in (float, str) else str


def add_fields(parser: argparse.ArgumentParser, cls, skip=()) -> argparse.ArgumentParser:
    """Add a flag for every field of dataclass ``cls`` not in ``skip``, with the field's default."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip or not f.init:
            continue
        flag = "--" + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else None
        if hints[f.name] is bool:
            parser.add_argument(flag, action="store_true", default=default)
        else:
            parser.add_argument(flag, type=_flag_type(hints[f.name]), default=default)
    return parser


def refuse(e: Exception) -> int:
    """A CLI's answer to a bad request: one ``error:`` line on stderr, exit status 2."""
    print("error: " + (" ".join(str(e).split()) or e.__class__.__name__), file=sys.stderr)
    return 2

"""The one command-line layer of ``python -m core.…``: :class:`Parser` (a bad flag is one ``error:`` line on stderr,
exit 2), :func:`refuse` (the same for a bad request found after parsing), and flags read from a dataclass
(:func:`add_fields`: one ``--field-name`` per field, typed by the field's annotation — ``int``, ``float``, ``str``,
``bool`` as ``--x`` / ``--no-x``, ``X | None`` as an optional ``X``), so a new config field is a new flag.

It is also the ``attention-lab`` command (pyproject.toml's entry point, :func:`main`): ``attention-lab COMMAND
[FLAGS]`` runs ``python -m MODULE [FLAGS]`` for the modules in :data:`COMMANDS`, with their own flags and help. The
table names the modules as strings and imports only the one chosen, when it is chosen: this module stays in io's
imports (the model core, data, io), and ``serve`` reaches app/ (streamlit) only when a teacher starts the app."""
from __future__ import annotations

import argparse
import dataclasses
import importlib
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


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` that refuses like every other refusal of the project's commands: one ``error:``
    line naming ``--help``, exit status 2 (argparse prints its whole usage block first)."""

    def error(self, message):
        self.exit(2, f"error: {message} (see {self.prog} --help)\n")


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
        if hints[f.name] is bool:  # --x and --no-x: a field that defaults to True can be turned off
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=bool(default))
        else:
            parser.add_argument(flag, type=_flag_type(hints[f.name]), default=default)
    return parser


def as_flags(cfg) -> str:
    """The flags that give dataclass ``cfg`` back through :func:`add_fields` (the inverse, quoted in cards and
    results): every non-None field as ``--name value``, a bool as ``--name`` / ``--no-name``."""
    out = []
    for f in dataclasses.fields(cfg):
        value, flag = getattr(cfg, f.name), "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            out.append(flag if value else "--no-" + flag[2:])
        elif value is not None and f.init:
            out.append(f"{flag} {value}")
    return " ".join(out)


def refuse(e: Exception) -> int:
    """A CLI's answer to a bad request: one ``error:`` line on stderr, exit status 2."""
    print("error: " + (" ".join(str(e).split()) or e.__class__.__name__), file=sys.stderr)
    return 2


# ------------------------------------------------------------------ the ``attention-lab`` command
PROG = "attention-lab"
# command -> (module run as ``python -m module``, one line for ``attention-lab --help``). Every ``if __name__ ==
# "__main__"`` of core/ and app/ is here (tests/core/test_packaging.py checks it), in the order a student meets them.
COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("app.serve", "start the app (Streamlit's flags; --no-warm: no warm-up visits)"),
    "train": ("core.train", "train a model on a task (one flag per TrainConfig field)"),
    "evaluate": ("core.evaluate", "score a translator on a split or your TSV: BLEU, chrF, pronouns"),
    "inspect": ("core.inspect", "one sentence's tokens, attention weights and output as JSON"),
    "heads": ("core.find_heads", "previous-token, duplicate-token and induction score of every head"),
    "patch": ("core.probes.patch_board", "activation patching: which heads carry the il/elle decision"),
    "stability": ("core.training.stability", "post-LN vs pre-LN, with and without warmup"),
    "choices": ("core.training.choices", "ReLU vs GELU vs SwiGLU, and averaging the last checkpoints"),
    "recurrence": ("core.variants.recurrence", "an LSTM seq2seq without attention vs a Transformer"),
    "xl": ("core.variants.xl", "train the small Transformer-XL language model"),
    "vision": ("core.variants.vision", "train the small Vision Transformer on procedural shapes"),
    "extrapolation": ("core.variants.extrapolation", "train five small LMs on 64 tokens, one per positional encoding"),
    "hierarchy": ("core.variants.hierarchy", "a causal Transformer vs an LSTM on PARITY and balanced brackets"),
    "corpus-english": ("core.data.english", "re-extract the lm's English text, compare with the frozen copy"),
    "corpus-english-large": ("core.data.english_large", "the same for the larger English corpus (english-large)"),
    "corpus-english-xl": ("core.data.english_xl", "the same for the part english-xl (release 2) adds to it"),
    "corpus-parallel": ("core.data.parallel", "re-align the human translations, compare with the frozen copy"),
}


def usage(prog: str = PROG) -> str:
    """``attention-lab --help``: the usage line and every command with its one line and its ``python -m`` form."""
    width = max(map(len, COMMANDS)) + 2
    lines = [f"usage: {prog} COMMAND [FLAGS]", "",
             "Attention Lab's command lines. Each COMMAND is `python -m MODULE` (MODULE in brackets) with the same",
             f"flags; `{prog} COMMAND --help` shows them.", "", "commands:"]
    lines += [f"  {name:<{width}}{line} [{module}]" for name, (module, line) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """``attention-lab COMMAND [FLAGS]``: run COMMAND's module's ``main`` with FLAGS and return its exit status;
    ``--help`` (or ``-h``) lists the commands; no command or an unknown one is one ``error:`` line on stderr, exit 2."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(usage(prog))
        return 0
    if not args:
        print(f"error: no command given (see {prog} --help)", file=sys.stderr)
        return 2
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}, choose from {', '.join(COMMANDS)} (see {prog} --help)",
              file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    sys.argv = [f"{prog} {name}", *rest]  # what the module would see under ``python -m`` (its own flags after it)
    return module.main(rest)


if __name__ == "__main__":
    sys.exit(main())

"""A small experiment's command line: flags from its config dataclass, the result saved as JSON with the
exact command that produced it, a short summary printed as the last line."""
from __future__ import annotations

from datetime import datetime
from pathlib import Path

from ..io import cli, jsonio


def command(module: str, cfg, out: str) -> str:
    """The command line that reproduces ``cfg`` (every non-None field as a flag)."""
    return f"python -m {module} --out {out} {cli.as_flags(cfg)}"


def main(module: str, description: str, config_cls, run, summary_keys, argv=None) -> int:
    """Parse ``argv`` into ``config_cls``, call ``run(cfg)``, write its dict (plus command and date) to
    ``--out`` and print ``summary_keys`` of it as JSON."""
    p = cli.Parser(prog=f"python -m {module}", description=description)
    p.add_argument("--out", required=True)
    cli.add_fields(p, config_cls)
    args = vars(p.parse_args(argv))
    out = args.pop("out")
    cfg = config_cls(**args)
    result = run(cfg)
    result |= {"command": command(module, cfg, out), "date": datetime.now().isoformat(timespec="seconds")}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(jsonio.dumps(result))
    print(jsonio.dumps({k: result[k] for k in summary_keys}))
    return 0

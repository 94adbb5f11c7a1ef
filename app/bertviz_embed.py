"""Self-contained, offline and injection-safe HTML for bertviz's head view and model view.

bertviz (``head_view`` / ``model_view`` with ``html_action='return'``) produces an HTML
fragment that

* pulls require.js from cdnjs with a ``<script src=...>`` tag, and d3 5.7.0 and jQuery
  2.0.0 from cdnjs through ``require.config({paths: ...})`` -- so it is blank offline;
* pastes ``json.dumps(params)`` (tokens included) into an inline ``<script>`` *twice*
  (its template's ``PYTHON_PARAMS`` marker also appears in a ``//`` comment), with no
  escaping, so a token such as ``</script><img src=x onerror=...>`` ends the script
  element and runs markup of the token's choosing;
* applies the ``include_layers`` / ``include_heads`` of the first attention stack to
  every stack, which silently drops layers of a deeper decoder or raises IndexError
  for a shallower one.

This module calls bertviz, then rewrites its output: the CDN tag and the
``require.config`` block are removed (and it raises ``BertvizTemplateError`` if they
are not found exactly as expected, so a bertviz upgrade is noticed), the params JSON
is escaped for an HTML script context and its duplicate in the comment is dropped,
and d3, jQuery and require.js are inlined from ``assets/vendor/``. Stacks of different
depth (or head count) are drawn as separate visualisations, each with its own layers.

No streamlit import here: the module is used by the app page and by tests alike.
"""
from __future__ import annotations

import functools
import html as html_lib
import json
import re
from pathlib import Path
from typing import Callable

__all__ = [
    "head_view_html",
    "model_view_html",
    "escape_script_json",
    "BertvizTemplateError",
    "VENDOR_DIR",
    "VENDOR_SCRIPTS",
]

VENDOR_DIR = Path(__file__).resolve().parent.parent / "assets" / "vendor"

# Load order matters. d3's UMD wrapper calls ``define(["exports"], ...)`` -- an
# *anonymous* AMD module -- whenever a ``define.amd`` exists, and require.js rejects an
# anonymous define that it did not load itself ("Mismatched anonymous define()"), so
# d3 would never reach ``window.d3``. d3 and jQuery therefore run first and set their
# globals, then require.js, then two named defines hand those globals to bertviz's
# ``requirejs(['jquery', 'd3'], ...)``.
VENDOR_SCRIPTS: tuple[tuple[str, str], ...] = (
    ("d3", "d3-5.7.0.min.js"),
    ("jquery", "jquery-2.2.4.min.js"),
    ("requirejs", "require-2.3.6.js"),
)

# Runs after require.js. Errors from the AMD loader (or from bertviz's callback, which
# require.js reports through onError) are shown in the page instead of a blank frame.
_AMD_SHIM = """\
define('d3', [], function () { return window.d3; });
define('jquery', [], function () { return window.jQuery; });
requirejs.onError = function (err) {
  var box = document.getElementById('attnlab-error');
  if (box) { box.textContent = 'Visualisation failed: ' + (err && err.message ? err.message : err); box.hidden = false; }
  if (window.console) { console.error(err); }
};"""

# Everything is inline; nothing may be fetched. This also neuters any markup that
# slipped through (no images, frames, remote scripts or connections).
_CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
        "img-src data:; font-src data:; base-uri 'none'; form-action 'none'")

# ---- what we expect in bertviz 1.4.x output -------------------------------------------
_CDN_REQUIRE_TAG = re.compile(
    r'<script\s+src="https://cdnjs\.cloudflare\.com/ajax/libs/require\.js/[0-9.]+/require(?:\.min)?\.js">'
    r"\s*</script>"
)
_REQUIRE_CONFIG = re.compile(r"require\.config\(\s*\{\s*paths\s*:\s*\{(?P<body>[^{}]*)\}\s*,?\s*\}\s*\)\s*;?")
_PARAMS_START = "const params = "
_SCRIPT_OPEN = '<script type="text/javascript">'
_SCRIPT_CLOSE = "</script>"
_CDN_HINTS = ("cdnjs", "jsdelivr", "unpkg", "googleapis", "code.jquery.com")

_KINDS = ("encoder", "decoder", "cross")
_TITLES = {"encoder": "Encoder self-attention", "decoder": "Decoder self-attention",
           "cross": "Cross-attention (decoder → encoder)"}
_DECIMALS = 4  # weights are rounded for a smaller page; 1e-4 is far below one opacity step


class BertvizTemplateError(RuntimeError):
    """bertviz's generated HTML no longer looks the way this module expects."""


def escape_script_json(s: str) -> str:
    """Make JSON text safe to place inside an HTML ``<script>`` element.

    ``<``, ``>`` and ``&`` become ``\\u003c``, ``\\u003e`` and ``\\u0026`` so that no
    ``</script>``, ``<!--`` or ``<script`` sequence can be formed, and U+2028/U+2029
    (line terminators in older JavaScript) become ``\\u2028``/``\\u2029``. In JSON these
    characters can only occur inside string literals, where the escapes decode to the
    very same characters, so the data is unchanged.
    """
    return (s.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def head_view_html(tokens: dict, attention: dict, *, height: int | None = None) -> str:
    """Standalone HTML document with bertviz's head view (one layer, all heads, as lines)."""
    from bertviz import head_view

    return _render(head_view, {}, "bertviz head view", tokens, attention, height)


def model_view_html(tokens: dict, attention: dict, *, height: int | None = None) -> str:
    """Standalone HTML document with bertviz's model view (a thumbnail per layer and head)."""
    from bertviz import model_view

    return _render(model_view, {"display_mode": "light"}, "bertviz model view", tokens, attention, height)


# ---- input handling ----------------------------------------------------------------


def _as_layers(kind: str, layers) -> list:
    import torch

    if layers is None or isinstance(layers, (str, bytes)) or len(layers) == 0:
        raise ValueError(f"attention[{kind!r}] must be a non-empty list with one tensor per layer")
    out = []
    for i, t in enumerate(layers):
        t = torch.as_tensor(t).detach().to("cpu", torch.float64)
        if t.dim() == 3:
            t = t.unsqueeze(0)
        if t.dim() != 4 or t.shape[0] != 1:
            raise ValueError(f"attention[{kind!r}][{i}] must have shape [1, heads, query, key], "
                             f"got {list(t.shape)}")
        t = torch.nan_to_num(t, nan=0.0, posinf=1.0, neginf=0.0)  # fully masked rows
        out.append(torch.round(t, decimals=_DECIMALS))
    if len({tuple(t.shape) for t in out}) != 1:
        raise ValueError(f"attention[{kind!r}]: all layers must have the same shape, got "
                         f"{[list(t.shape) for t in out]}")
    return out


def _token_list(tokens: dict, side: str, needed_by: str) -> list[str]:
    if side not in tokens or tokens[side] is None:
        raise ValueError(f"attention[{needed_by!r}] needs tokens[{side!r}]")
    seq = list(tokens[side])
    bad = [type(t).__name__ for t in seq if not isinstance(t, str)]
    if bad:
        raise TypeError(f"tokens[{side!r}] must be strings, found {bad[0]}")
    return seq


def _validate(tokens: dict, attention: dict) -> dict[str, list]:
    if not isinstance(tokens, dict) or not isinstance(attention, dict):
        raise TypeError("tokens and attention must be dicts")
    unknown = (set(attention) - set(_KINDS)) | (set(tokens) - {"encoder", "decoder"})
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}; attention takes {list(_KINDS)}, "
                         "tokens takes ['encoder', 'decoder']")
    stacks = {k: _as_layers(k, attention[k]) for k in _KINDS if attention.get(k) is not None}
    if not stacks:
        raise ValueError("attention needs at least one of 'encoder', 'decoder', 'cross'")
    sides = {"encoder": ("encoder", "encoder"), "decoder": ("decoder", "decoder"), "cross": ("decoder", "encoder")}
    for kind, layers in stacks.items():
        q_side, k_side = sides[kind]
        tq, tk = layers[0].shape[2], layers[0].shape[3]
        nq = len(_token_list(tokens, q_side, kind))
        nk = len(_token_list(tokens, k_side, kind))
        if (tq, tk) != (nq, nk):
            raise ValueError(f"attention[{kind!r}] is {tq}x{tk} (query x key) but there are "
                             f"{nq} {q_side} and {nk} {k_side} tokens")
    return stacks


def _sections(stacks: dict[str, list]) -> list[list[str]]:
    """Group stacks that bertviz can show in one widget: same layer count and head count.

    bertviz shares one layer (and head) list between all stacks of a widget, so e.g. a
    2-layer encoder and a 3-layer decoder must be separate widgets. Cross-attention has
    the decoder's depth and normally joins the decoder.
    """
    groups: dict[tuple[int, int], list[str]] = {}
    for kind, layers in stacks.items():
        groups.setdefault((len(layers), layers[0].shape[1]), []).append(kind)
    return list(groups.values())


# ---- bertviz output rewriting --------------------------------------------------------


def _rewrite_bertviz(fragment: str) -> tuple[str, str]:
    """Split bertviz's fragment into (markup, script body) with CDN use removed and the
    params JSON escaped. Raises BertvizTemplateError if the layout is not the known one."""
    # Tokens only ever occur inside the params JSON, which sits after the start of the
    # inline script, so the first occurrence of each landmark below is bertviz's own.
    open_at = fragment.find(_SCRIPT_OPEN)
    if open_at < 0:
        raise BertvizTemplateError(f"no {_SCRIPT_OPEN!r} in bertviz output")
    markup, rest = fragment[:open_at], fragment[open_at + len(_SCRIPT_OPEN):]
    tags = _CDN_REQUIRE_TAG.findall(markup)
    if len(tags) != 1:
        raise BertvizTemplateError(
            f"expected exactly one require.js CDN <script> tag in bertviz output, found {len(tags)}")
    markup = _CDN_REQUIRE_TAG.sub("", markup, count=1)
    if "<script" in markup.lower():
        raise BertvizTemplateError("bertviz output has a <script> element this module does not know")
    rest = rest.rstrip()
    if not rest.endswith(_SCRIPT_CLOSE):
        raise BertvizTemplateError("bertviz's inline script is not the last element of its output")
    script = rest[: -len(_SCRIPT_CLOSE)]

    # The params JSON may hold anything a token holds, "</script>" included. Cut it out
    # first, so that the checks below look at bertviz's own code only.
    start = script.find(_PARAMS_START)
    if start < 0:
        raise BertvizTemplateError(f"no {_PARAMS_START!r} in bertviz's script")
    start += len(_PARAMS_START)
    try:
        _, end = json.JSONDecoder().raw_decode(script, start)
    except json.JSONDecodeError as exc:
        raise BertvizTemplateError(f"could not parse the params JSON bertviz embedded: {exc}") from exc
    params_json = script[start:end]
    # bertviz's template repeats its PYTHON_PARAMS marker in a trailing line comment, so
    # a second full (unescaped) copy of the params follows. Drop that comment.
    duplicate = f"; // HACK: {params_json} is a template marker that is replaced by actual params."
    if not script.startswith(duplicate, end):
        raise BertvizTemplateError("unexpected text after bertviz's params (expected its '// HACK' comment)")
    script = script[:start] + "__ATTNLAB_PARAMS__;" + script[end + len(duplicate):]

    configs = _REQUIRE_CONFIG.findall(script)
    paths = dict(re.findall(r"""(\w+)\s*:\s*['"]([^'"]*)['"]""", configs[0])) if len(configs) == 1 else {}
    if set(paths) != {"d3", "jquery"}:
        raise BertvizTemplateError(
            "expected exactly one require.config({paths: {d3: ..., jquery: ...}}) block in bertviz's "
            f"script, found {len(configs)} with paths {sorted(paths)}")
    script = _REQUIRE_CONFIG.sub("/* attnlab: d3 and jQuery are inlined above */", script, count=1)
    if "requirejs(['jquery', 'd3']" not in script:
        raise BertvizTemplateError("bertviz's script no longer calls requirejs(['jquery', 'd3'], ...)")

    leftovers = [h for h in _CDN_HINTS if h in script.lower() or h in markup.lower()]
    if leftovers or re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", script + markup, re.I):
        raise BertvizTemplateError(f"bertviz output still references a remote resource ({leftovers})")

    script = script.replace("__ATTNLAB_PARAMS__", escape_script_json(params_json), 1)
    return markup, script


@functools.lru_cache(maxsize=None)
def _vendor_scripts() -> tuple[tuple[str, str], ...]:
    out = []
    for name, filename in VENDOR_SCRIPTS:
        path = VENDOR_DIR / filename
        if not path.is_file():
            raise FileNotFoundError(f"vendored {name} missing: {path} (see assets/vendor/README.md)")
        out.append((name, path.read_text(encoding="utf-8")))
    return tuple(out)


def _script(body: str, label: str) -> str:
    low = body.lower()
    if "</script" in low or "<!--" in low:
        raise BertvizTemplateError(f"{label} would break out of its inline <script>")
    return f'<script data-src="{html_lib.escape(label)}">\n{body}\n</script>\n'


# ---- document assembly -----------------------------------------------------------------

_STYLE = """\
body { margin: 0; padding: 8px; background: #fff; color: #222;
       font-family: 'Helvetica Neue', Helvetica, Arial, sans-serif; }
.attnlab-section + .attnlab-section { margin-top: 24px; }
.attnlab-section h3 { font-size: 14px; font-weight: 600; margin: 0 0 6px; }
#attnlab-error { color: #b00020; font-weight: 600; margin: 8px 0; }"""


def _render(view_fn: Callable, extra: dict, title: str, tokens: dict, attention: dict,
            height: int | None) -> str:
    if height is not None and (isinstance(height, bool) or not isinstance(height, int) or height <= 0):
        raise ValueError(f"height must be a positive int or None, got {height!r}")
    stacks = _validate(tokens, attention)

    parts = []
    for kinds in _sections(stacks):
        layers = stacks[kinds[0]]
        kw = dict(extra, include_layers=list(range(len(layers))), html_action="return")
        for kind in kinds:
            kw[f"{kind}_attention"] = stacks[kind]
        if {"encoder", "cross"} & set(kinds):
            kw["encoder_tokens"] = list(tokens["encoder"])
        if {"decoder", "cross"} & set(kinds):
            kw["decoder_tokens"] = list(tokens["decoder"])
        markup, script = _rewrite_bertviz(view_fn(**kw).data)
        heading = " · ".join(_TITLES[k] for k in kinds)
        n_layers, n_heads = len(layers), layers[0].shape[1]
        heading += f" — {n_layers} layer{'s' * (n_layers != 1)}, {n_heads} head{'s' * (n_heads != 1)}"
        parts.append((html_lib.escape(heading), markup, script))

    vendor = "".join(_script(body, name) for name, body in _vendor_scripts())
    body = "".join(
        f'<section class="attnlab-section">\n<h3>{heading}</h3>\n{markup}\n'
        f"{_script(script, 'bertviz')}</section>\n"
        for heading, markup, script in parts
    )
    if height is not None:
        body = f'<div style="max-height:{height}px;overflow:auto">\n{body}</div>\n'
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        f"<title>{html_lib.escape(title)}</title>\n<style>\n{_STYLE}\n</style>\n"
        f"{vendor}{_script(_AMD_SHIM, 'amd-shim')}</head>\n<body>\n"
        '<div id="attnlab-error" role="alert" hidden></div>\n'
        f"{body}</body>\n</html>\n"
    )

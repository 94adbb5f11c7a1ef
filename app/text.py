"""Text a user or a model produced (a sentence, a token, a decoded output, a model or file name, an error message
that quotes any of those) is shown as text: neither HTML nor Markdown is interpreted.

``md(text)`` is the one helper for every Streamlit call that renders Markdown (``st.markdown``, ``st.caption``,
``st.info``/``warning``/``error``/``success``, headers, widget labels): every Markdown and HTML character is
backslash-escaped, so ``![p](http://host/t.png)`` stays those characters and never becomes an ``<img>`` that
fetches an outside address. Escapes are not enough for bare addresses: Streamlit's renderer (GitHub-flavoured
Markdown) finds ``http://…``, ``www.…`` and ``name@host`` in the text *after* resolving escapes and links them, so a
word joiner (U+2060, invisible) is put inside each (``http:⁠//``, ``www⁠.``, ``name⁠@host``). Plotly labels are HTML, not Markdown: ``app.figures.label`` escapes them for that.
tests/app/test_text_rendering.py parses pages/ and app/ for calls that render such text without ``md``.
"""
from __future__ import annotations

import re

# CommonMark's escapable punctuation, plus Streamlit's own syntax (:red[…], :material/…:, $math$, emoji :x:)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&=^\"'%@/;?,])")


# where GitHub-flavoured Markdown starts an extended autolink: a scheme's "//", "www" before its dot, an "@"
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?=@)", re.IGNORECASE)
WORD_JOINER = "\u2060"


def quoted(text, limit: int = 120) -> str:
    """``text`` to quote back in a message: whole up to ``limit`` characters, else its start and "…" (a 200-word
    sentence repeated in full pushed the page it explained down by a screen)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def code(text) -> str:
    """``text`` as Markdown inline code, shown as typed. Nothing inside backticks is markup, so :func:`md`'s
    backslashes would show there; the fence is one backtick longer than the longest run of backticks in ``text``,
    with a space inside it where ``text`` starts or ends with one (CommonMark's rule); lines joined by spaces."""
    t = " ".join(str(text).splitlines()) or " "
    fence = "`" * (max((len(run) for run in re.findall(r"`+", t)), default=0) + 1)
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def md(text) -> str:
    """``text`` for a Markdown-rendering call, shown literally (no link, image or markup); lines kept as lines."""
    return "  \n".join(_MD_SPECIAL.sub(r"\\\1", _AUTOLINK.sub(WORD_JOINER, line))
                       for line in str(text).splitlines() or [""])

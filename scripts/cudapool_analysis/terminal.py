# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/terminal.py: text from a log made safe to print on a terminal, by the rule of
the C++ side's config/terminal_text.h (which the conf diagnostics and the replay's `conf:` line
use): a C0 control or DEL as \\xNN (\\n, \\t, \\r by name), a C1 control (U+0080..U+009F) or a
bidirectional control (U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) as \\uNNNN, a byte that is
not UTF-8 (a str holds it as a surrogateescape code, U+DC80..U+DCFF, as Python decodes file names)
as \\xNN, any other lone surrogate as \\uNNNN, a backslash as \\\\ (so that an escape is never
ambiguous), and the quote, when one is given, as \\". Everything else passes unchanged. A string
longer than a limit is cut (on a character: a str is cut between code points) and ends in "...".

Every string of a log that the package prints on stdout or stderr passes through shown(): the
text report's (text.py), the export's notes (exportcli.py). JSON output stays JSON (json.dumps
escapes). Not here: what is printed (text.py), HTML (the page sets text, never markup).
"""

import re

MAX_SHOWN = 1000     # characters of one string of the log printed before it is cut
MAX_NOTE = 2000      # characters of a note or a problem (text with strings of the log in it)

# The characters escaped: C0, DEL, C1, the bidirectional controls, surrogates, the backslash.
_ACTS = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069"
                   "\ud800-\udfff\\\\]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}


def _escape(m):
    c = m.group()
    named = _NAMED.get(c)
    if named is not None:
        return named
    code = ord(c)
    if code < 0x80:
        return "\\x%02x" % code
    if 0xDC80 <= code <= 0xDCFF:           # a byte that is not UTF-8 (surrogateescape)
        return "\\x%02x" % (code - 0xDC00)
    return "\\u%04x" % code


def escape(text, quote=None):
    """text (a str, or bytes read as UTF-8 with surrogateescape) with every character a terminal
    could act on escaped; quote, a character, is escaped too."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "surrogateescape")
    out = _ACTS.sub(_escape, text)
    return out.replace(quote, "\\" + quote) if quote else out


def cut(text, limit=MAX_SHOWN):
    """text cut to at most limit characters, the last three being "..." when it was cut."""
    return text if len(text) <= limit else text[:max(0, limit - 3)] + "..."


def shown(text, limit=MAX_SHOWN, quote=None):
    """A string of a log as printed: cut to limit characters, then escaped (escape())."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", "surrogateescape")
    return escape(cut(str(text), limit), quote)

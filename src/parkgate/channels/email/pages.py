"""The pages a link opens, in the console's look (its style sheet, and a few rules of
the channel's own at :data:`STYLE_PATH`), with no script and nothing from another
origin: the page's policy (:data:`CONTENT_SECURITY_POLICY`) allows this origin's style
sheets and the form's POST back to it, and nothing else.

Every value shown (the prompt, an option, an address, a reply) is escaped.
"""

from __future__ import annotations

from html import escape

from parkgate.channels.email import phrases as E
from parkgate.channels.email.links import CANCEL, Link

#: Where a link's page is (the token follows), where its form posts, and the channel's
#: own style rules, served beside the console's (each under the public URL's path).
LINK_PATH = "/email/l/"
CONFIRM_PATH = "/email/confirm"
STYLE_PATH = "/email/email.css"
CONSOLE_STYLE_PATH = "/console/console.css"
#: What a page may load: style sheets from this origin; its form posts to this origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
#: The headers of every page: no caching of a page made for one link, the link never
#: sent on as a referrer to another site (with none at all, a browser sends the form's POST
#: from the origin "null", which the guard refuses as cross-site), and no indexing.
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
    "X-Robots-Tag": "noindex, nofollow",
}
STYLE = """main.email { display: block; max-width: 40rem; margin: 1.5rem auto; }
main.email section { display: flex; flex-direction: column; gap: .8rem; }
.question { white-space: pre-wrap; font-size: 1.1rem; margin: 0; }
.chosen { margin: 0; }
.chosen strong { font-size: 1.05rem; }
.note { color: var(--muted); font-size: .9rem; margin: 0; }
.outcome { margin: 0; font-weight: 600; }
.outcome.refused { color: var(--warn); }
textarea { font: inherit; padding: .4rem .5rem; border: 1px solid var(--line); border-radius: 6px; min-height: 5rem;
  width: 100%; box-sizing: border-box; }
form.confirm { flex-direction: column; align-items: flex-start; }
"""


def _page(title: str, body: str, root: str) -> str:
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n  <meta charset="utf-8">\n'
        '  <meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '  <meta name="referrer" content="same-origin">\n'
        f"  <title>{escape(title)} · {E.PAGE_TITLE}</title>\n"
        '  <link rel="icon" href="data:,">\n'
        f'  <link rel="stylesheet" href="{escape(root)}{CONSOLE_STYLE_PATH}">\n'
        f'  <link rel="stylesheet" href="{escape(root)}{STYLE_PATH}">\n'
        "</head>\n<body>\n"
        f'  <header><h1>{E.PAGE_TITLE} <span class="sub">{E.PAGE_SUB}</span></h1></header>\n'
        f'  <main class="email"><section>\n{body}\n  </section></main>\n'
        "</body>\n</html>\n"
    )


def _question(prompt: str) -> str:
    return f'    <p class="question">{escape(prompt)}</p>'


def confirm_page(prompt: str, link: Link, label: str, token: str, csrf: str, root: str = "") -> str:
    """The page of a link to an option or to Cancel: the question, the choice, and the
    button that POSTs it (with the link and its CSRF token)."""
    cancel = link.choice == CANCEL
    chosen = E.CANCEL_CHOSEN if cancel else label
    button = E.CONFIRM_CANCEL if cancel else E.CONFIRM.format(label=label)
    css = ' class="cancel"' if cancel else ""
    body = "\n".join(
        [
            _question(prompt),
            f'    <p class="chosen">{E.YOU_CHOSE}: <strong id="choice">{escape(chosen)}</strong></p>',
            _form(token, csrf, f'<button type="submit" id="confirm"{css}>{escape(button)}</button>', root),
            f'    <p class="note">{escape(E.CONFIRM_HINT.format(address=link.address))}</p>',
        ]
    )
    return _page(button, body, root)


def answer_page(prompt: str, link: Link, token: str, csrf: str, said: str | None = None, root: str = "") -> str:
    """The answer form of a text ask (``said``: a reply to show above it, such as a retry)."""
    shown = [f'    <p class="outcome refused" id="outcome">{escape(said)}</p>'] if said else []
    fields = (
        f'<label for="text">{E.YOUR_ANSWER}</label>'
        '<textarea id="text" name="text" required maxlength="4000"></textarea>'
        f'<button type="submit" id="confirm">{E.SEND_ANSWER}</button>'
    )
    body = "\n".join(
        [
            _question(prompt),
            *shown,
            _form(token, csrf, fields, root),
            f'    <p class="note">{escape(E.CONFIRM_HINT.format(address=link.address))}</p>',
        ]
    )
    return _page(E.ANSWER_LINK, body, root)


def _form(token: str, csrf: str, inner: str, root: str) -> str:
    return (
        f'    <form class="confirm" method="post" action="{escape(root)}{CONFIRM_PATH}">'
        f'<input type="hidden" name="t" value="{escape(token)}">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">{inner}</form>'
    )


def outcome_page(
    prompt: str | None, line: str, *, refused: bool = False, note: str | None = None, root: str = ""
) -> str:
    """A page that says one thing: what a confirmation did, how the ask closed, or why a
    link answers nothing."""
    parts = [_question(prompt)] if prompt is not None else []
    kind = "outcome refused" if refused else "outcome"
    parts.append(f'    <p class="{kind}" id="outcome">{escape(line)}</p>')
    if note:
        parts.append(f'    <p class="note" id="note">{escape(note)}</p>')
    return _page(E.DONE, "\n".join(parts), root)

"""The output policy every surface shares: off-policy links made inert, prompt leaks caught."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from rag import prompts

# Invisible characters split a URL for a filter yet vanish when a platform renders it.
INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff]")
# Full stops some clients treat as dots in a host name.
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
_HTML_A = re.compile(r"<a\b[^>]*?\bhref\s*=\s*(['\"]?)(?P<url>[^'\"\s>]*)\1[^>]*>"
                     r"(?P<label>.*?)</a\s*>", re.I | re.S)
_HTML_SRC = re.compile(r"<(?:img|iframe|script|source|video|audio|embed|object|link|form)\b"
                       r"[^>]*?\b(?:src|href|data|action)\s*=\s*(['\"]?)(?P<url>[^'\"\s>]*)\1"
                       r"[^>]*>", re.I)
_MARKDOWN = re.compile(r"(?P<bang>!?)\[(?P<label>[^\[\]\n]*)\]\(\s*<?(?P<url>[^)\s>]*)>?"
                       r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?\s*\)")
_REFERENCE = re.compile(r"^(?P<lead> {0,3}\[[^\]\n]+\]:[ \t]*)<?(?P<url>[^\s>]+)>?", re.M)
_SLACK = re.compile(r"<(?P<url>[a-z][a-z0-9+.\-]*:[^|>\s]*|www\.[^|>\s]*)"
                    r"(?:\|(?P<label>[^>\n]*))?>", re.I)
_BARE = re.compile(r"(?<![\w\[])(?:(?:https?|ftp|file)://|//(?=[\w-]+\.\w)|www\.|"
                   r"(?:mailto|javascript|vbscript|data|tel|sms|intent):)[^\s<>\"'`]*", re.I)
_TAG_OPEN = re.compile(r"<(?=/?(?:a|img|iframe|script|source|video|audio|embed|object|link|"
                       r"form|svg|base|meta)\b)", re.I)
_TRAILING = ".,;:!?)]*_'\""
_KEPT = re.compile("\x00(\\d+)\x00")
_PROMPT_LINE_MIN = 40  # shorter prompt lines could occur in an honest answer


@dataclass(frozen=True)
class Policed:
    text: str
    leaked: bool  # the canary or a system-prompt line was in the text


def defang(url: str) -> str:
    """An address no platform renders as a link: no scheme slashes, dots and colons bracketed."""
    shown = re.sub(r"^(?:https?:)?//", "", url, flags=re.I)
    shown = shown.replace(".", "[.]").replace(":", "[:]").replace("@", "[@]")
    return shown if len(shown) <= 80 else shown[:79] + "…"


def _flat(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


def _spaced(text: str) -> str:
    return " ".join(INVISIBLE.sub("", text).split()).casefold()


class OutputPolicy:
    """What may leave Sift: links to cited sources and allowed hosts; never the prompts."""

    def __init__(self, allowed_hosts: Iterable[str] = (), canary: str = prompts.CANARY,
                 prompt_texts: Iterable[str] | None = None) -> None:
        self._hosts = frozenset(h.strip().lower().rstrip(".") for h in allowed_hosts
                                if h.strip())
        self._canary = _flat(canary)
        texts = prompts.all_texts() if prompt_texts is None else tuple(prompt_texts)
        self._lines = tuple({_spaced(line) for text in texts for line in text.splitlines()
                             if len(_spaced(line)) >= _PROMPT_LINE_MIN})

    @property
    def allowed_hosts(self) -> frozenset[str]:
        return self._hosts

    def leaks(self, text: str) -> bool:
        """Whether `text` carries the canary (however spaced) or a system-prompt line."""
        if self._canary and self._canary in _flat(text):
            return True
        spaced = _spaced(text)
        return any(line in spaced for line in self._lines)

    def police(self, text: str, cited_urls: Iterable[str] = ()) -> Policed:
        return Policed(self.links(text, cited_urls), self.leaks(text))

    def allowed(self, url: str, cited_urls: frozenset[str]) -> bool:
        """Only plain http(s) addresses, to a cited source or an allowed host."""
        if url.lower().startswith("www."):
            url = "http://" + url
        if "\\" in url or any(c.isspace() or ord(c) < 32 for c in url):
            return False
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").rstrip(".")
        except ValueError:
            return False
        if parts.scheme.lower() not in ("http", "https") or parts.username or parts.password:
            return False
        return url in cited_urls or host in self._hosts

    def links(self, text: str, cited_urls: Iterable[str] = ()) -> str:
        """`text` with every off-policy link (any syntax) turned into inert text."""
        cited = frozenset(cited_urls)
        kept: list[str] = []

        def shield(original: str) -> str:
            # Allowed links are set aside so that later passes cannot re-read them.
            kept.append(original)
            return f"\x00{len(kept) - 1}\x00"

        def judge(m: re.Match[str], url: str, label: str) -> str:
            if self.allowed(url, cited):
                return shield(m.group(0))
            return _inert(label, url)

        text = INVISIBLE.sub("", text.replace("\x00", "")).translate(_DOTS)
        text = _HTML_A.sub(lambda m: judge(m, m["url"], re.sub(r"<[^>]*>", "", m["label"])),
                           text)
        text = _HTML_SRC.sub(lambda m: judge(m, m["url"], "embedded content"), text)
        text = _until_stable(text, lambda t: _MARKDOWN.sub(
            lambda m: judge(m, m["url"], ("image: " if m["bang"] else "") + m["label"]), t))
        text = _REFERENCE.sub(lambda m: m["lead"] + shield(m["url"]) if self.allowed(
            m["url"], cited) else m["lead"].replace("]:", "] :") + defang(m["url"]), text)
        text = _SLACK.sub(lambda m: judge(m, m["url"], m["label"] or ""), text)
        text = _BARE.sub(lambda m: self._bare(m.group(0), cited, shield), text)
        # What still reads as `[label](…)` is no link we accepted: break the syntax.
        text = _TAG_OPEN.sub("< ", text.replace("](", "] ("))  # and no half-written tag
        return _KEPT.sub(lambda m: kept[int(m.group(1))], text)

    def _bare(self, found: str, cited: frozenset[str], shield: Callable[[str], str]) -> str:
        url = found.rstrip(_TRAILING)
        tail = found[len(url):]
        if self.allowed(url, cited):
            return shield(url) + tail
        return defang(url) + tail

    def hold_back(self, text: str) -> str:
        """A streamed preview without a last word that may still grow into the canary."""
        words = text.rsplit(None, 1)
        last = words[-1] if words and not text[-1:].isspace() else ""
        if last and self._canary and self._canary.startswith(_flat(last)) and _flat(last):
            return text[: len(text) - len(last)]
        return text


def _inert(label: str, url: str) -> str:
    label = label.strip()
    if not label or label == url:
        return defang(url)
    return f"{label} ({defang(url)})"


def _until_stable(text: str, step: Callable[[str], str], rounds: int = 4) -> str:
    for _ in range(rounds):
        changed = step(text)
        if changed == text:
            break
        text = changed
    return text


def hosts_of(urls: Iterable[str]) -> tuple[str, ...]:
    """The host names of configured source URLs (the default allowlist)."""
    hosts = []
    for url in urls:
        try:
            host = urlsplit(url if "//" in url else f"//{url}").hostname
        except ValueError:
            continue
        if host:
            hosts.append(host)
    return tuple(dict.fromkeys(hosts))

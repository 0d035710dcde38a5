"""Where a callback may go: one set of rules, for parking an ask and for delivering to it.

A ``callback_url`` is an ``http://`` or ``https://`` URL that parses as a client will
send it (no control or invisible characters, a host that IDNA encodes, a port from 1
to 65535), without userinfo (``http://a@b/`` names host ``b`` where a reader sees
``a``). Its host is read as the client reads it: the full stops IDNA takes for dots
(``。``, ``．``, ``｡``) are dots, so ``127。0。0。1`` is ``127.0.0.1`` and fenced as
loopback; a host the client cannot encode is refused when the ask is parked, never
sent and retried; and the ``Host`` a callback carries is the host as checked
(:attr:`CallbackTarget.authority`, ASCII). By default it may not reach an internal address: loopback, private, shared,
link-local, multicast, unspecified or reserved (IPv4 inside IPv6, as ``::ffff:127.0.0.1``,
6to4 or NAT64, is read as the IPv4 address it carries). An :class:`AllowList` lets
internal receivers in on purpose: host names or addresses (any port), ``host:port``
pairs, and CIDR networks.

Two checks use the rules:

- :func:`check_callback_url`, when an ask is parked: the URL parses, and a host that is
  an address (in any form a resolver takes, ``127.1`` or ``2130706433`` too) or a
  ``localhost`` name is internal only if allowed. Other names are not resolved here:
  what a name points to can change before delivery.
- :func:`address_allowed`, when a callback is delivered: the address the host name
  resolved to, and its port, under the same rules.

This module only computes: it resolves no name and opens no connection.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from parkgate.errors import CallbackRefused as CallbackRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: The environment variable the HTTP service reads its allow-list from.
ENV_CALLBACK_ALLOW = "PARKGATE_CALLBACK_ALLOW"
#: The longest callback URL accepted, in characters.
MAX_URL_CHARS = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
#: The full stops IDNA (UTS #46) reads as the label separator, as the client does: the
#: ideographic, the fullwidth and the halfwidth ideographic full stop.
FULL_STOPS = {"\u3002": ".", "\uff0e": ".", "\uff61": "."}
_DOTS = str.maketrans(FULL_STOPS)


@dataclass(frozen=True)
class CallbackTarget:
    """Where a callback URL points: its scheme, host (lower case, IDNA-encoded, no
    brackets or trailing dot), effective port, and the address when the host is one."""

    scheme: str
    host: str
    port: int
    address: IPAddress | None

    @property
    def authority(self) -> str:
        """The host and port as a request names them in its ``Host`` header: the checked
        host (IPv6 in brackets), with the port when it is not the scheme's default. ASCII
        always: a header is sent as bytes, and a host as written (``127。0。0。1``) is not."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


@dataclass(frozen=True)
class AllowList:
    """Internal receivers allowed on purpose (see :func:`parse_allow_list`); empty by default."""

    hosts: frozenset[str] = frozenset()
    host_ports: frozenset[tuple[str, int]] = frozenset()
    networks: tuple[IPNetwork, ...] = ()

    def names(self, host: str, port: int) -> bool:
        """Whether ``host`` (any port) or ``host:port`` is listed."""
        return host in self.hosts or (host, port) in self.host_ports

    def covers(self, address: IPAddress, port: int) -> bool:
        """Whether ``address`` is listed (any port, or this port) or inside a listed network."""
        return self.names(address.compressed, port) or any(address in network for network in self.networks)

    def __bool__(self) -> bool:
        return bool(self.hosts or self.host_ports or self.networks)


def parse_allow_list(text: str | None) -> AllowList:
    """An allow-list from comma-separated entries: ``host``, ``host:port``, ``[v6]:port``,
    or a CIDR network (``10.0.0.0/8``, ``fd00::/8``; a bare address is one host).

    Raises ``ValueError`` naming the first entry that is none of these.
    """
    hosts: set[str] = set()
    host_ports: set[tuple[str, int]] = set()
    networks: list[IPNetwork] = []
    for raw in (text or "").split(","):
        entry = raw.strip()
        if not entry:
            continue
        try:
            if "/" in entry:
                networks.append(ipaddress.ip_network(entry, strict=False))
                continue
            host, port = _split_host_port(entry)
        except ValueError as error:
            raise ValueError(
                f"{entry!r} is not a host, host:port or CIDR network ({error}); "
                "separate entries with commas, as in 127.0.0.1:9000,receiver.internal,10.0.0.0/8"
            ) from None
        if port is None:
            hosts.add(host)
        else:
            host_ports.add((host, port))
    return AllowList(frozenset(hosts), frozenset(host_ports), tuple(networks))


def _split_host_port(entry: str) -> tuple[str, int | None]:
    """``host``, ``host:port``, ``v6``, ``[v6]`` or ``[v6]:port``, normalised as URLs are."""
    port: int | None = None
    if entry.startswith("["):
        inside, bracket, rest = entry[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError("an IPv6 address goes in brackets: [::1]:9000")
        host = inside
        if rest:
            port = _port(rest[1:])
    elif entry.count(":") == 1:
        host, _, number = entry.partition(":")
        port = _port(number)
    else:
        host = entry  # a name, an IPv4 address, or a bare IPv6 address
    return _normal_host(host), port


def _port(text: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"the port {text!r} is not a number from 1 to 65535")
    return int(text)


def _normal_host(host: str) -> str:
    """A host as compared: an address in its compressed form, a name lower case and IDNA-encoded.

    The full stops IDNA reads as dots (:data:`FULL_STOPS`) are dots first, so a host is
    an address here when the client would connect to that address (``127。1``).
    """
    dotted = host.translate(_DOTS)
    address = literal_address(dotted)
    if address is not None:
        return address.compressed
    name = dotted.rstrip(".").lower()
    import httpx  # here, not at the top: `import parkgate` loads no HTTP client library

    try:
        name = httpx.URL(f"http://{name}/").raw_host.decode("ascii")
    except (httpx.InvalidURL, ValueError, UnicodeError) as error:
        raise ValueError(f"the host {host!r} is not a valid name") from error
    if not name or not all(_LABEL.match(label) for label in name.split(".")):
        raise ValueError(f"the host {host!r} is not a valid name")
    encoded = literal_address(name)  # an IDNA name can spell an address once encoded
    return encoded.compressed if encoded is not None else name


def literal_address(host: str) -> IPAddress | None:
    """The address ``host`` spells, in any form a resolver reads as one, else ``None``.

    IPv6 in or out of brackets; IPv4 also as ``127.1``, ``2130706433`` or ``0x7f.1``
    (which ``getaddrinfo`` resolves without asking DNS).
    """
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if bare and bare.isascii() and all(char.isalnum() or char == "." for char in bare):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None


def is_internal(address: IPAddress) -> bool:
    """Whether ``address`` is not a public unicast address (or carries one that is not)."""
    if isinstance(address, ipaddress.IPv6Address):
        carried = address.ipv4_mapped or address.sixtofour
        if carried is None and address in _NAT64:
            carried = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if carried is not None and is_internal(carried):
            return True
    return not address.is_global or address.is_multicast or address.is_reserved


def parse_callback_url(url: object, name: str = "callback_url") -> CallbackTarget:
    """Where ``url`` points, or :class:`CallbackRefused` saying why it is not a usable URL.

    ``name`` is what the refusal calls the URL (the field, or the variable it came from).
    """
    if not isinstance(url, str):
        raise CallbackRefused(f"{name} must be a string, not {type(url).__name__}")
    if len(url) > MAX_URL_CHARS:
        raise CallbackRefused(f"{name} is longer than {MAX_URL_CHARS} characters")
    for position, char in enumerate(url):
        if not char.isprintable():  # CR/LF, tabs, NUL, direction marks: a space is percent-encoded
            raise CallbackRefused(
                f"{name} holds a control or invisible character (U+{ord(char):04X} at position {position})"
            )
    import httpx  # here, not at the top: `import parkgate` loads no HTTP client library

    try:
        parsed = httpx.URL(url)
        parsed.host  # noqa: B018 (decoding an IDNA host can fail: "xn--a")
    except (httpx.InvalidURL, ValueError, UnicodeError) as error:
        # A host IDNA cannot encode (``１２７.0.0.1``, ``☃.com``) is refused here, once:
        # the client could never send it, so a delivery would only fail and be retried.
        raise CallbackRefused(f"{name} is not a URL that can be sent to ({error})") from None
    if parsed.scheme not in DEFAULT_PORTS or not url.lower().startswith(f"{parsed.scheme}://"):
        raise CallbackRefused(f"{name} must be an http:// or https:// URL")
    if parsed.userinfo or "@" in urlsplit(url).netloc:
        raise CallbackRefused(f"{name} may not carry a user name or password (user@host)")
    raw_host = parsed.raw_host.decode("ascii", "replace")
    if not raw_host:
        raise CallbackRefused(f"{name} has no host")
    # ``parsed.port`` is None when the URL names no port; 0 is a port it names (and refused).
    port = DEFAULT_PORTS[parsed.scheme] if parsed.port is None else parsed.port
    if not 1 <= port <= 65535:
        raise CallbackRefused(f"{name}'s port {port} is not from 1 to 65535")
    try:
        host = _normal_host(raw_host)
    except ValueError:
        raise CallbackRefused(f"{name}'s host {parsed.host!r} is not a valid host name or address") from None
    return CallbackTarget(parsed.scheme, host, port, literal_address(host))


def receiver_host(url: str) -> str | None:
    """The host a callback to ``url`` goes to, as compared (lower case, IDNA-encoded, an
    address in its compressed form); ``None`` for a URL that does not parse.

    Deliverers take turns between these hosts and cap the deliveries in flight to each.
    """
    try:
        return parse_callback_url(url).host
    except CallbackRefused:
        return None


def loggable_url(url: str) -> str:
    """``url`` as a log line may show it: ``scheme://host[:port]/path``, without its query,
    fragment or user name and password, which may hold a receiver's capability token."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(a URL that does not parse)"
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def check_callback_url(url: object, allow: AllowList = AllowList(), name: str = "callback_url") -> CallbackTarget:
    """The park-time check: ``url`` parses (:func:`parse_callback_url`), and a host that is
    an address or a ``localhost`` name is internal only if ``allow`` lets it in.

    Raises :class:`CallbackRefused` (an :class:`InputError`) naming the rule and ``name``.
    """
    target = parse_callback_url(url, name)
    if target.address is not None:
        if is_internal(target.address) and not allow.covers(target.address, target.port):
            raise CallbackRefused(
                f"{name} points at an internal address ({target.address.compressed}): loopback, private, "
                "link-local, multicast and unspecified addresses are refused unless the server allows them "
                f"({ENV_CALLBACK_ALLOW})"
            )
    elif (target.host == "localhost" or target.host.endswith(".localhost")) and not allow.names(
        target.host, target.port
    ):
        raise CallbackRefused(
            f"{name} points at {target.host}, this machine: refused unless the server allows it ({ENV_CALLBACK_ALLOW})"
        )
    return target


def address_allowed(address: str | IPAddress, port: int, allow: AllowList, host: str | None = None) -> bool:
    """The delivery-time check: may a callback connect to ``address``:``port``?

    ``address`` is what the URL's host resolved to; ``host`` is the URL's host as
    written (an allow-list entry may name it). A public address is always allowed; an
    internal one only when the allow-list names the address, a network holding it, or
    the host (any port, or this port).
    """
    resolved = ipaddress.ip_address(address) if isinstance(address, str) else address
    if not is_internal(resolved):
        return True
    if allow.covers(resolved, port):
        return True
    if host is None:
        return False
    try:
        name = _normal_host(host)
    except ValueError:
        return False
    return allow.names(name, port)


__all__ = [
    "ENV_CALLBACK_ALLOW",
    "AllowList",
    "CallbackRefused",
    "CallbackTarget",
    "address_allowed",
    "check_callback_url",
    "is_internal",
    "literal_address",
    "loggable_url",
    "parse_allow_list",
    "parse_callback_url",
    "receiver_host",
]

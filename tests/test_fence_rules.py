"""Where a callback may go (:mod:`parkgate.core.fence`): the rules, without a server or a socket.

A callback URL parses as a client sends it or is refused with the rule it broke; an
address in any spelling a resolver reads is fenced when internal (IPv4 carried inside
IPv6 included); ``localhost`` names are this machine; the allow-list lets named hosts,
host:port pairs and networks in; other names are not resolved at park time. A host is read
as the client reads it (IDNA's full stops are dots) and named in the ``Host`` header as
checked, in ASCII. The attacks through a real server are in tests/security/test_callback_fence.py.
"""

from __future__ import annotations

import ipaddress

import pytest

from parkgate.core.fence import (
    MAX_URL_CHARS,
    AllowList,
    CallbackRefused,
    address_allowed,
    check_callback_url,
    is_internal,
    literal_address,
    parse_allow_list,
    parse_callback_url,
)
from parkgate.errors import InputError


@pytest.mark.parametrize(
    ("address", "port", "allowed"),
    [
        ("93.184.216.34", 443, True),
        ("2606:2800:220:1::", 443, True),
        ("127.0.0.1", 80, False),
        ("10.1.2.3", 80, False),
        ("169.254.169.254", 80, False),
        ("100.64.0.1", 80, False),
        ("::1", 80, False),
        ("::ffff:10.0.0.1", 80, False),
        ("64:ff9b::a00:1", 80, False),
        ("fe80::1", 80, False),
        ("ff02::1", 80, False),
        ("0.0.0.0", 80, False),
    ],
)
def test_a_resolved_address_is_allowed_only_when_public(address: str, port: int, allowed: bool) -> None:
    assert address_allowed(address, port, AllowList()) is allowed


def test_the_allow_list_lets_in_hosts_ports_and_networks_it_names() -> None:
    allow = parse_allow_list(" receiver.internal , 127.0.0.1:9000, 10.0.0.0/8, [::1]:8080 ")
    assert address_allowed("10.9.9.9", 1, allow)
    assert address_allowed("127.0.0.1", 9000, allow) and not address_allowed("127.0.0.1", 9001, allow)
    assert address_allowed("::1", 8080, allow) and not address_allowed("::1", 8081, allow)
    assert address_allowed("192.168.0.5", 443, allow, host="Receiver.Internal.")
    assert not address_allowed("192.168.0.5", 443, allow, host="other.internal")
    assert check_callback_url("http://127.0.0.1:9000/hook", allow).port == 9000
    with pytest.raises(CallbackRefused):
        check_callback_url("http://127.0.0.1:9001/hook", allow)
    for bad in ("10.0.0.0/33", "host:0", "host:x", "[::1", "a b"):
        with pytest.raises(ValueError, match="not a host"):
            parse_allow_list(bad)


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("10.0.0.1", "10.0.0.1"),
        ("example.com", None),
        ("999.1.1.1", None),
    ],
)
def test_an_address_is_read_in_every_spelling_a_resolver_reads(host: str, address: str | None) -> None:
    found = literal_address(host)
    assert (found.compressed if found is not None else None) == address


@pytest.mark.parametrize(
    ("address", "internal"),
    [
        ("8.8.8.8", False),
        ("2002:5db8:d822::", False),  # 6to4 carrying a public address
        ("2002:7f00:1::", True),  # 6to4 carrying 127.0.0.1
        ("::ffff:127.0.0.1", True),
        ("64:ff9b::7f00:1", True),  # NAT64 carrying 127.0.0.1
        ("240.0.0.1", True),  # reserved
        ("224.0.0.1", True),  # multicast
    ],
)
def test_ipv4_carried_inside_ipv6_is_fenced_as_the_address_it_carries(address: str, internal: bool) -> None:
    assert is_internal(ipaddress.ip_address(address)) is internal


@pytest.mark.parametrize(
    ("url", "rule"),
    [
        (5, "must be a string"),
        ("http://a.example/" + "x" * MAX_URL_CHARS, "longer than"),
        ("http://a.example/\u200b", "U\\+200B"),
        ("http://a.example/\r\n", "U\\+000D"),
        ("ftp://a.example/", "http:// or https://"),
        ("javascript://a.example/", "http:// or https://"),
        ("http:/a.example/", "http:// or https://"),
        ("http://user:secret@a.example/", "user name or password"),
        ("http:///hook", "no host"),
        ("http://xn--a.com/", "not a URL that can be sent to"),
        ("http://a_b-.example/", "not a valid host name"),
    ],
)
def test_a_url_that_does_not_parse_as_sent_is_refused_naming_the_rule(url: object, rule: str) -> None:
    with pytest.raises(CallbackRefused, match=rule):
        parse_callback_url(url)
    assert issubclass(CallbackRefused, InputError)  # a 422 over HTTP, a ValueError in the library


def test_a_target_is_compared_as_a_client_sends_it() -> None:
    assert parse_callback_url("HTTPS://Example.COM./hook") == parse_callback_url("https://example.com:443/hook")
    target = parse_callback_url("http://bücher.example/hook")
    assert (target.host, target.port, target.address) == ("xn--bcher-kva.example", 80, None)
    v6 = parse_callback_url("http://[::1]:8080/hook")
    assert (v6.host, v6.port, v6.address) == ("::1", 8080, ipaddress.ip_address("::1"))


@pytest.mark.parametrize("url", ["http://localhost/hook", "http://api.localhost:81/hook", "http://2130706433/hook"])
def test_this_machine_is_refused_at_park_time_in_any_spelling(url: str) -> None:
    with pytest.raises(CallbackRefused, match="refused unless the server allows"):
        check_callback_url(url)


def test_a_name_is_not_resolved_at_park_time_and_a_listed_localhost_name_is_let_in() -> None:
    assert check_callback_url("http://receiver.example/hook").address is None  # checked again at delivery
    allow = parse_allow_list("api.localhost:81")
    assert check_callback_url("http://api.localhost:81/hook", allow).host == "api.localhost"
    with pytest.raises(CallbackRefused):
        check_callback_url("http://api.localhost:82/hook", allow)


def test_an_empty_allow_list_is_false_and_an_unparsable_host_is_never_let_in() -> None:
    assert not AllowList() and not parse_allow_list(" , ") and parse_allow_list("receiver.internal")
    assert not address_allowed("127.0.0.1", 80, parse_allow_list("receiver.internal"), host="bad host")


@pytest.mark.parametrize(
    "url",
    [
        "http://127\u30020\u30020\u30021/hook",  # ideographic full stop
        "http://127\uff0e0\uff0e0\uff0e1/hook",  # fullwidth full stop
        "http://127\uff610\uff610\uff611/hook",  # halfwidth ideographic full stop
        "http://127\u30021:9/hook",  # and the short spelling, 127.1
        "http://0x7f\u30021/hook",
        "http://10\u30020\u30020\u30027/hook",  # private, not only loopback
    ],
)
def test_a_host_spelt_with_idna_full_stops_is_fenced_as_the_address_the_client_connects_to(url: str) -> None:
    with pytest.raises(CallbackRefused, match="internal address"):
        check_callback_url(url)
    assert parse_callback_url(url).address == literal_address(parse_callback_url(url).host)


@pytest.mark.parametrize(
    "url",
    [
        "http://\uff11\uff12\uff17.0.0.1/hook",
        "http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/",
        "http://ex\u2044ample\u3002com/",
    ],
)
def test_a_host_the_client_cannot_encode_is_refused_when_parked(url: str) -> None:
    with pytest.raises(CallbackRefused, match="not a URL that can be sent to"):
        check_callback_url(url, parse_allow_list("127.0.0.1,localhost"))


def test_the_host_header_is_the_host_as_checked_in_ascii() -> None:
    allow = parse_allow_list("127.0.0.1:9000")
    spelt = check_callback_url("http://127\u30020\uff0e0\uff611:9000/hook", allow)
    assert (spelt.host, spelt.authority) == ("127.0.0.1", "127.0.0.1:9000")
    assert address_allowed("127.0.0.1", 9000, parse_allow_list("127\u30020\u30020\u30021:9000"))
    assert parse_callback_url("https://B\u00fccher\u3002Example:443/").authority == "xn--bcher-kva.example"
    assert parse_callback_url("http://[::1]:8080/").authority == "[::1]:8080"
    assert parse_callback_url("http://example.com:\uff18\uff11/").authority == "example.com:81"
    assert all(
        parse_callback_url(url).authority.isascii() for url in ("http://b\u00fccher.example/", "http://127\u30021/")
    )

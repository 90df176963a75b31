"""The address and host rules of the SSRF guard, and signing, without a running system."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress

import pytest

from libs.common.errors import ValidationFailed
from services.webhooks.sender import sign
from services.webhooks.targets import check_target_url, host_key, is_public


@pytest.mark.parametrize(
    "addr",
    [
        "127.0.0.1",
        "10.0.0.1",
        "172.31.255.255",
        "192.168.0.1",
        "169.254.169.254",
        "0.0.0.0",
        "224.0.0.251",
        "255.255.255.255",
        "100.64.0.1",
        "192.0.2.2",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:10.0.0.1",
        "::ffff:127.0.0.1",
        "2002:7f00:1::",
        # gaps of Python 3.11's is_global, from the IANA registries
        "192.0.0.8",
        "192.0.0.9",
        "192.88.99.1",
        "198.18.0.1",
        "fec0::1",
        "3fff::1",
        "5f00::1",
        "64:ff9b:1::1",
        "100::1",
        "100:0:0:1::1",
        "2001:4:112::1",
        "2001::1",
        "::a00:1",
        "64:ff9b::7f00:1",
        "64:ff9b::a00:1",
        "fe80::1%1",
    ],
)
def test_non_public_addresses(addr: str) -> None:
    """Loopback, private, link-local, site-local, multicast, reserved, documentation and the
    other special-purpose ranges, and forms that embed such an IPv4 address, are refused."""
    assert not is_public(ipaddress.ip_address(addr))


@pytest.mark.parametrize(
    "addr",
    [
        "93.184.216.34",
        "8.8.8.8",
        "2606:2800:220:1::1",
        "::ffff:8.8.8.8",
        "2002:808:808::1",
        "64:ff9b::808:808",
    ],
)
def test_public_addresses(addr: str) -> None:
    """Public addresses pass."""
    assert is_public(ipaddress.ip_address(addr))


def test_url_rules() -> None:
    """Scheme, host and port are checked; private literals only when not allowed."""
    ok = dict(field="targetUrl", schemes=("https",), allow_private=False)
    check_target_url("https://example.com/hook", **ok)  # type: ignore[arg-type]
    for bad in (
        "http://example.com/",
        "https:///x",
        "https://example.com:99999/",
        "https://10.0.0.1/",
        "https://[::1]:8443/",
    ):
        with pytest.raises(ValidationFailed):
            check_target_url(bad, **ok)  # type: ignore[arg-type]
    check_target_url("https://10.0.0.1/", field="t", schemes=("https",), allow_private=True)


@pytest.mark.parametrize(
    ("key", "urls"),
    [
        (
            "example.com:443",
            [
                "https://example.com/x",
                "https://Example.COM/",
                "https://example.com./",
                "https://EXAMPLE.com.:443/y",
                "https://user@example.com:443",
            ],
        ),
        ("example.com:8443", ["https://example.com:8443/", "https://Example.Com.:8443/"]),
        ("example.com:80", ["http://example.com/", "http://example.com.:80/"]),
        (
            "xn--bcher-kva.example:443",
            [
                "https://bücher.example/",
                "https://BÜCHER.example./",
                "https://xn--bcher-kva.example/",
                "https://XN--BCHER-KVA.EXAMPLE./",
            ],
        ),
        ("xn--fa-hia.de:443", ["https://faß.de/", "https://FAß.DE./"]),
        (
            "[2001:db8::1]:443",
            [
                "https://[2001:db8::1]/",
                "https://[2001:DB8::1]:443/",
                "https://[2001:0db8:0000:0000:0000:0000:0000:0001]/",
                "https://[2001:db8:0::0:1]/",
            ],
        ),
        ("[::1]:8080", ["http://[::1]:8080/", "http://[0:0:0:0:0:0:0:1]:8080/"]),
        ("[::ffff:7f00:1]:443", ["https://[::ffff:127.0.0.1]/", "https://[::FFFF:7F00:1]/"]),
        ("127.0.0.1:8080", ["http://127.0.0.1:8080/"]),
        ("a.b:8080", ["http://a.b:8080/", "http://A.B.:8080/"]),
    ],
)
def test_host_key_one_per_host(key: str, urls: list[str]) -> None:
    """Every spelling of a host and port is one key of the per-host share: lower case, no
    trailing dot, IDNA A-labels, IPv6 compressed in brackets, the default port written."""
    assert {host_key(u) for u in urls} == {key}


def test_host_key_tells_hosts_and_ports_apart() -> None:
    keys = [
        host_key(u)
        for u in (
            "https://example.com/",
            "http://example.com/",
            "https://example.com:8443/",
            "https://www.example.com/",
            "https://example.co/",
            "https://[::1]/",
            "https://[::2]/",
        )
    ]
    assert len(set(keys)) == len(keys)


def test_host_key_of_an_old_row_never_raises() -> None:
    """Rows older than the URL rules may hold anything: their attempts are refused as
    `target refused`, and keying them must not fail the batch that holds them."""
    assert host_key("https://a_b.example:99999/") == "a_b.example:443"
    assert host_key("https://xn--a.example/") == "xn--a.example:443"
    assert host_key("https://a..b/") == "a..b:443"


COMPATIBILITY_HOSTS = [
    "１２７.０.０.１",
    "127。0。0。1",
    "０．０．０．０",
    "𝟏𝟐𝟕.𝟎.𝟎.𝟏",
    "127｡0｡0｡1",
    "ｅｘａｍｐｌｅ.com",
    "ex\u00adample.com",
]
INVALID_HOSTS = [
    "a..b.example.com",
    "a" * 64 + ".example.com",
    "ex_ample.com",
    "-a.example.com",
    "xn--zz.example",
    "127.1",
    "0x7f.1",
    "2130706433",
    "1.2.3.04",
    "[fe80::1%25eth0]",
    ("a" * 60 + ".") * 5 + "com",
]


@pytest.mark.parametrize("host", COMPATIBILITY_HOSTS + INVALID_HOSTS)
def test_hosts_the_client_would_read_otherwise_are_refused(host: str) -> None:
    """Compatibility forms and invalid DNS/IDNA names are refused, private targets allowed
    or not (docs/api.md)."""
    with pytest.raises(ValidationFailed) as err:
        check_target_url(
            f"https://{host}/hook", field="hookUrl", schemes=("https",), allow_private=True
        )
    assert err.value.field == "hookUrl"


@pytest.mark.parametrize(
    "host",
    [
        "bücher.example",
        "xn--bcher-kva.example",
        "EXAMPLE.com",
        "example.com.",
        "a-b.example.co",
        "[2606:2800:220:1::1]",
        "93.184.216.34",
    ],
)
def test_valid_names_and_public_literals_pass(host: str) -> None:
    """IDNA names in either form, any case, a final dot and public literals are fine."""
    check_target_url(
        f"https://{host}:8443/hook", field="targetUrl", schemes=("https",), allow_private=False
    )


def test_signature_recipe() -> None:
    """sign() is HMAC-SHA256 over timestamp + "." + body, lowercase hex."""
    body = b'{"id":"1"}'
    want = hmac.new(b"whsec_x", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert sign("whsec_x", 1700000000, body) == want

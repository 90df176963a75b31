"""The address rules of the SSRF guard, and signing, without a running system."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress

import pytest

from libs.common.errors import ValidationFailed
from services.webhooks.sender import sign
from services.webhooks.targets import check_target_url, host_key, is_public


@pytest.mark.parametrize("addr", ["127.0.0.1", "10.0.0.1", "172.31.255.255", "192.168.0.1",
                                  "169.254.169.254", "0.0.0.0", "224.0.0.251", "255.255.255.255",
                                  "100.64.0.1", "192.0.2.2", "::1", "::", "fe80::1", "fc00::1",
                                  "ff02::1", "::ffff:10.0.0.1", "::ffff:127.0.0.1",
                                  "2002:7f00:1::"])
def test_non_public_addresses(addr: str) -> None:
    """Loopback, private, link-local, multicast, reserved and mapped forms are refused."""
    assert not is_public(ipaddress.ip_address(addr))


@pytest.mark.parametrize("addr", ["93.184.216.34", "8.8.8.8", "2606:2800:220:1::1",
                                  "::ffff:8.8.8.8"])
def test_public_addresses(addr: str) -> None:
    """Public addresses pass."""
    assert is_public(ipaddress.ip_address(addr))


def test_url_rules() -> None:
    """Scheme, host and port are checked; private literals only when not allowed."""
    ok = dict(field="targetUrl", schemes=("https",), allow_private=False)
    check_target_url("https://example.com/hook", **ok)  # type: ignore[arg-type]
    for bad in ("http://example.com/", "https:///x", "https://example.com:99999/",
                "https://10.0.0.1/", "https://[::1]:8443/"):
        with pytest.raises(ValidationFailed):
            check_target_url(bad, **ok)  # type: ignore[arg-type]
    check_target_url("https://10.0.0.1/", field="t", schemes=("https",), allow_private=True)
    assert host_key("https://Example.com/x") == "example.com:443"
    assert host_key("http://a.b:8080/") == "a.b:8080"


def test_signature_recipe() -> None:
    """sign() is HMAC-SHA256 over timestamp + "." + body, lowercase hex."""
    body = b'{"id":"1"}'
    want = hmac.new(b"whsec_x", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert sign("whsec_x", 1700000000, body) == want

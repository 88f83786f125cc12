"""The class server's addresses, read as the system reads them, before they reach a socket or nginx.

A listening address is what getaddrinfo makes of it: Linux reads `0`, `0x0`, `000.0.0.0` and
`0.0.0.0` alike as every interface, `::` and `[::]` too, and a name can resolve to any of them; a
string comparison with "0.0.0.0" misses all but one. An upstream goes into nginx's configuration,
where a `;`, a brace or a space starts a directive of its own: it is a DNS name or an IP address and
a port, checked character by character, and nothing else reaches the file.
"""

import ipaddress
import re
import socket

LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
NUMERIC_LOOKING = re.compile(r"(0x[0-9a-f]*|[0-9]+)", re.IGNORECASE)  # what inet_aton reads as a number
PORT = re.compile(r"[0-9]{1,5}")
# inet_aton's forms: one to four parts, each decimal, octal (leading 0) or hex (0x)
NUMERIC_ADDRESS = re.compile(r"(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}", re.IGNORECASE)


def is_dns_name(host: str) -> bool:
    """A name of letters, digits and hyphens in dot-separated labels, whose last label is not a number
    (`10.1` or `0x0` would be read as an address, not looked up)."""
    labels = host.removesuffix(".").split(".")
    return (0 < len(host) <= 253 and all(LABEL.fullmatch(label) for label in labels)
            and not NUMERIC_LOOKING.fullmatch(labels[-1]))


def ip_literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host written as an IP literal names (IPv6 with or without brackets); None for a name."""
    inner = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if "%" in inner:  # a scope (fe80::1%eth0) is text of any kind after the address: not taken
        return None
    try:
        return ipaddress.ip_address(inner)
    except ValueError:
        return None


def resolved(host: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Every address getaddrinfo gives for host, as a server binding to it would ask; [] if none."""
    inner = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        infos = socket.getaddrinfo(inner or None, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError, ValueError):
        return []
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]


def listen_address(text: str, *, private: bool) -> str:
    """The address to listen on, canonical (0x0 becomes 0.0.0.0; an IPv6 address bare); ValueError in one line.

    `private` (a backend host's app processes): any form of every interface is refused, as is a name
    that resolves to it."""
    what = "--address"
    if not text:
        if private:
            raise ValueError("--backends-only needs --address: the private interface the front host reaches "
                             "(the app ports must not face the students)")
        return "0.0.0.0"
    if (ip_literal(text) is None and not is_dns_name(text) and not NUMERIC_ADDRESS.fullmatch(text)):
        raise ValueError(f"{what} takes an IP address or a host name, got {text[:60]!r}")
    addresses = resolved(text)
    if not addresses:
        raise ValueError(f"{what} {text[:60]!r} is not an address this host can resolve")
    if private and (any(a.is_unspecified for a in addresses)):
        raise ValueError(f"--backends-only needs --address: the private interface the front host reaches, not one "
                         f"that means every interface ({text[:60]!r} is read as {addresses[0]}; the app ports must "
                         "not face the students)")
    literal = ip_literal(text)
    if literal is not None:
        return str(literal)
    if NUMERIC_ADDRESS.fullmatch(text):  # 0, 0x0, 000.0.0.0, 10.1: the address the system reads
        return str(addresses[0])
    return text



def upstream(text: str) -> str:
    """'HOST:PORT' (an IPv6 host in brackets) as nginx's upstream line takes it; ValueError in one line.

    HOST is a DNS name or an IP address that is not every interface; PORT 1 to 65535."""
    usage = f"--upstream takes HOST:PORT of another host's app process (10.0.0.2:8601), got {text[:60]!r}"
    host, sep, port = text.rpartition(":")
    if not sep or not host or not PORT.fullmatch(port) or not 0 < int(port) < 65536:
        raise ValueError(usage)
    literal = ip_literal(host)
    if literal is not None:
        if literal.is_unspecified:
            raise ValueError(f"{usage}: {host} means every interface, not a host")
        if literal.version == 6 and not host.startswith("["):
            raise ValueError(f"{usage}: an IPv6 address goes in brackets, [{literal}]:{int(port)}")
        return f"{f'[{literal}]' if literal.version == 6 else literal}:{int(port)}"
    if not is_dns_name(host):
        raise ValueError(f"{usage}: the host is neither a DNS name nor an IP address")
    return f"{host}:{int(port)}"

"""Why a webhook attempt failed, as one sentence for the people who read it.

A failed attempt's `error` is shown as it is by `payorch listen`, the deliveries endpoint, the
TUI and the MCP tools. aiohttp's own text is written for its maintainers
(`ClientConnectorError: Cannot connect to host 127.0.0.1:9999 ssl:default [Connect call failed
('127.0.0.1', 9999)]`): the sentence says what happened to the request, and where.
"""

from __future__ import annotations

import errno
import re
import socket
import ssl

import aiohttp


def failure_sentence(exc: BaseException, timeout: float) -> str:
    """The sentence for what sending an attempt raised; the exception's own text, with its
    type, for a failure none of the cases below knows."""
    if isinstance(exc, TimeoutError):
        return f"timed out after {timeout:g} s"
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return f"TLS handshake failed: {_reason(exc.certificate_error)}"
    if isinstance(exc, aiohttp.ClientSSLError | ssl.SSLError):
        return f"TLS handshake failed: {_reason(_os_error(exc))}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return _not_connected(exc)
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the endpoint closed the connection before it answered"
    if isinstance(exc, aiohttp.ClientConnectionResetError | ConnectionResetError):
        return "the endpoint reset the connection before it answered"
    if isinstance(exc, aiohttp.InvalidUrlClientError):
        return f"not a URL that can be sent to: {exc.url}"
    return f"{type(exc).__name__}: {exc}".rstrip(": ")


def _not_connected(exc: aiohttp.ClientConnectorError) -> str:
    where = f"{exc.host}:{exc.port}"
    cause = exc.os_error
    if isinstance(cause, socket.gaierror) or isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"could not resolve {exc.host} ({_reason(cause)})"
    if isinstance(cause, ConnectionRefusedError) or _all_refused(cause):
        return f"connection refused by {where}"
    if isinstance(cause, TimeoutError):
        return f"could not connect to {where}: timed out"
    return f"could not connect to {where}: {_reason(cause)}"


def _all_refused(cause: OSError) -> bool:
    """A name with several addresses (localhost: ::1 and 127.0.0.1), each refusing: the OS
    errors come folded into one `OSError("Multiple exceptions: ...")` without an errno."""
    if cause.errno is not None:
        return cause.errno == errno.ECONNREFUSED
    numbers = set(_ERRNO.findall(str(cause)))
    return numbers == {str(errno.ECONNREFUSED)}


_ERRNO = re.compile(r"\[Errno (\d+)\]")


def _os_error(exc: BaseException) -> BaseException:
    cause = getattr(exc, "os_error", None)
    return cause if isinstance(cause, BaseException) else exc


def _reason(exc: BaseException) -> str:
    """An OS or TLS error's own reason, without the errno and the tuple around it."""
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
        return f"certificate verify failed: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason).replace("_", " ").lower()
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:1].lower() + exc.strerror[1:]
    return str(exc) or type(exc).__name__

"""A stand-in for the part of requests the vendor's samples use (see ../README.md)."""

import json as _json
import socket
import urllib.error
import urllib.request

from requests.exceptions import (  # noqa: F401  (re-exported, as requests does)
    ConnectionError,
    InvalidJSONError,
    JSONDecodeError,
    RequestException,
    Timeout,
)
from requests import exceptions  # noqa: F401


class Response:
    """What a request answered."""

    def __init__(self, url, status_code, reason, headers, content):
        self.url = url
        self.status_code = status_code
        self.reason = reason
        self.headers = headers
        self.content = content

    @property
    def text(self):
        return self.content.decode("utf-8", errors="replace")

    @property
    def ok(self):
        return self.status_code < 400

    def json(self, **kwargs):
        try:
            return _json.loads(self.text, **kwargs)
        except _json.JSONDecodeError as e:
            raise JSONDecodeError(e.msg, e.doc, e.pos)


def request(method, url, headers=None, json=None, data=None, timeout=None):
    hdrs = dict(headers or {})
    body = None
    if json is not None:
        body = _json.dumps(json, allow_nan=False).encode("utf-8")
        hdrs.setdefault("Content-Type", "application/json")
    elif data is not None:
        body = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    elif method in ("POST", "PUT", "PATCH"):
        body = b""
    req = urllib.request.Request(url, data=body, headers=hdrs, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return Response(url, resp.status, resp.reason, dict(resp.headers), resp.read())
    except urllib.error.HTTPError as e:
        return Response(url, e.code, e.reason, dict(e.headers), e.read())
    except (socket.timeout, TimeoutError) as e:
        raise Timeout(e)
    except (urllib.error.URLError, OSError) as e:
        raise ConnectionError(e)


def get(url, params=None, **kwargs):
    if params:
        raise NotImplementedError("params: the samples build their own query strings")
    return request("GET", url, **kwargs)


def post(url, data=None, json=None, **kwargs):
    return request("POST", url, data=data, json=json, **kwargs)

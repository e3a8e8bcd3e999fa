"""Exceptions of the requests stand-in, in requests' hierarchy."""

import json


class RequestException(IOError):
    def __init__(self, *args, response=None, request=None):
        self.response = response
        self.request = request
        super().__init__(*args)


class ConnectionError(RequestException):
    pass


class Timeout(RequestException):
    pass


class InvalidJSONError(RequestException):
    pass


class JSONDecodeError(InvalidJSONError, json.JSONDecodeError):
    """A body that is not JSON: both a RequestException and a json.JSONDecodeError."""

    def __init__(self, msg, doc, pos):
        json.JSONDecodeError.__init__(self, msg, doc, pos)
        InvalidJSONError.__init__(self, *self.args)

"""Ed25519 signing keys with PyNaCl's interface, in pure Python.

The arithmetic is RFC 8032 section 6 ("Ed25519 Python Illustration"). It is
slow and not constant-time: for tests against a simulated venue only.
"""

import hashlib
import os

from nacl.exceptions import BadSignatureError

_p = 2**255 - 19
_d = -121665 * pow(121666, _p - 2, _p) % _p
_q = 2**252 + 27742317777372353535851937790883648493
_sqrt_m1 = pow(2, (_p - 1) // 4, _p)


def _sha512(b):
    return hashlib.sha512(b).digest()


def _inv(x):
    return pow(x, _p - 2, _p)


def _add(P, Q):
    A = (P[1] - P[0]) * (Q[1] - Q[0]) % _p
    B = (P[1] + P[0]) * (Q[1] + Q[0]) % _p
    C = 2 * P[3] * Q[3] * _d % _p
    D = 2 * P[2] * Q[2] % _p
    E, F, G, H = B - A, D - C, D + C, B + A
    return (E * F % _p, G * H % _p, F * G % _p, E * H % _p)


def _mul(s, P):
    Q = (0, 1, 1, 0)
    while s > 0:
        if s & 1:
            Q = _add(Q, P)
        P = _add(P, P)
        s >>= 1
    return Q


def _equal(P, Q):
    if (P[0] * Q[2] - Q[0] * P[2]) % _p != 0:
        return False
    return (P[1] * Q[2] - Q[1] * P[2]) % _p == 0


def _recover_x(y, sign):
    if y >= _p:
        return None
    x2 = (y * y - 1) * _inv(_d * y * y + 1)
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (_p + 3) // 8, _p)
    if (x * x - x2) % _p != 0:
        x = x * _sqrt_m1 % _p
    if (x * x - x2) % _p != 0:
        return None
    if (x & 1) != sign:
        x = _p - x
    return x


_gy = 4 * _inv(5) % _p
_gx = _recover_x(_gy, 0)
_G = (_gx, _gy, 1, _gx * _gy % _p)


def _compress(P):
    zinv = _inv(P[2])
    x = P[0] * zinv % _p
    y = P[1] * zinv % _p
    return int.to_bytes(y | ((x & 1) << 255), 32, "little")


def _decompress(s):
    if len(s) != 32:
        raise BadSignatureError("a point is 32 bytes")
    y = int.from_bytes(s, "little")
    sign = y >> 255
    y &= (1 << 255) - 1
    x = _recover_x(y, sign)
    if x is None:
        raise BadSignatureError("not a point")
    return (x, y, 1, x * y % _p)


def _expand(seed):
    if len(seed) != 32:
        raise ValueError("the seed must be exactly 32 bytes long")
    h = _sha512(seed)
    a = int.from_bytes(h[:32], "little")
    a &= (1 << 254) - 8
    a |= 1 << 254
    return a, h[32:]


class SignedMessage(bytes):
    """The signature followed by the message, as PyNaCl returns it."""

    @property
    def signature(self):
        return bytes(self[:64])

    @property
    def message(self):
        return bytes(self[64:])


class VerifyKey:
    """An Ed25519 public key."""

    def __init__(self, key):
        key = bytes(key)
        if len(key) != 32:
            raise ValueError("the key must be exactly 32 bytes long")
        self._key = key

    def encode(self):
        return self._key

    def __bytes__(self):
        return self._key

    def verify(self, smessage, signature=None):
        if signature is None:
            smessage, signature = smessage[64:], smessage[:64]
        smessage, signature = bytes(smessage), bytes(signature)
        if len(signature) != 64:
            raise BadSignatureError("a signature is 64 bytes")
        A = _decompress(self._key)
        R = _decompress(signature[:32])
        s = int.from_bytes(signature[32:], "little")
        if s >= _q:
            raise BadSignatureError("Signature was forged or corrupt")
        h = int.from_bytes(_sha512(signature[:32] + self._key + smessage), "little") % _q
        if not _equal(_mul(s, _G), _add(R, _mul(h, A))):
            raise BadSignatureError("Signature was forged or corrupt")
        return smessage


class SigningKey:
    """An Ed25519 private key, made from its 32-byte seed."""

    def __init__(self, seed):
        seed = bytes(seed)
        self._a, self._prefix = _expand(seed)
        self._seed = seed
        self.verify_key = VerifyKey(_compress(_mul(self._a, _G)))

    @classmethod
    def generate(cls):
        return cls(os.urandom(32))

    def encode(self):
        return self._seed

    def __bytes__(self):
        return self._seed

    def sign(self, message):
        message = bytes(message)
        A = self.verify_key.encode()
        r = int.from_bytes(_sha512(self._prefix + message), "little") % _q
        R = _compress(_mul(r, _G))
        h = int.from_bytes(_sha512(R + A + message), "little") % _q
        s = (r + h * self._a) % _q
        return SignedMessage(R + int.to_bytes(s, 32, "little") + message)

"""Exceptions of the nacl stand-in, named as PyNaCl names them."""


class CryptoError(Exception):
    pass


class BadSignatureError(CryptoError):
    pass

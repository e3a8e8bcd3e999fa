"""A stand-in for the part of PyNaCl the vendor's samples use (see ../README.md)."""

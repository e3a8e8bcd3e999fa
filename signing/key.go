package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

const redacted = "[REDACTED]"

// KeyError reports a private key that could not be loaded. It never holds
// key material: Reason says what was wrong in words.
type KeyError struct {
	// Source names where the key came from: "base64" or a file path.
	Source string
	// Reason says what was wrong and, where it can, how to fix it.
	Reason string
}

// Error implements error.
func (e *KeyError) Error() string {
	return fmt.Sprintf("signing: private key from %s: %s", e.Source, e.Reason)
}

// PrivateKey is an Ed25519 private key that redacts itself when printed,
// marshalled or logged. The zero value holds no key and cannot sign.
// A PrivateKey is immutable and safe for concurrent use.
type PrivateKey struct {
	// m holds the key two pointers away, so that no print path reaches
	// it. fmt skips Format for %p, for a bad verb's echo and for an
	// unexported field, and then prints by reflection: a struct's fields,
	// and what a pointer at the top points to, but a pointer one level
	// down only as an address.
	m *keyMaterial
}

// keyMaterial holds the key bytes; see PrivateKey.m.
type keyMaterial struct {
	key *ed25519.PrivateKey
}

func newPrivateKey(k ed25519.PrivateKey) *PrivateKey { return &PrivateKey{m: &keyMaterial{key: &k}} }

// bytes returns the key, nil for the zero PrivateKey.
func (k *PrivateKey) bytes() ed25519.PrivateKey {
	if k == nil || k.m == nil || k.m.key == nil {
		return nil
	}
	return *k.m.key
}

// ParsePrivateKey decodes a private key from standard base64 of either a
// 32-byte seed or a 64-byte seed followed by its public key. For the
// 64-byte form the embedded public key must match the seed.
func ParsePrivateKey(b64 string) (*PrivateKey, error) {
	return parseBase64("base64", b64)
}

func parseBase64(source, b64 string) (*PrivateKey, error) {
	if len(b64) > maxKeyFileSize {
		return nil, &KeyError{Source: source, Reason: fmt.Sprintf("%d bytes long; a key is at most %d", len(b64), maxKeyFileSize)}
	}
	s := strings.TrimSpace(b64)
	if s == "" {
		return nil, &KeyError{Source: source, Reason: "empty"}
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		// Do not wrap err: base64.CorruptInputError is harmless, but
		// keep errors free of anything derived from the input.
		return nil, &KeyError{Source: source, Reason: "not valid standard base64"}
	}
	return fromRaw(source, raw)
}

func fromRaw(source string, raw []byte) (*PrivateKey, error) {
	switch len(raw) {
	case ed25519.SeedSize:
		return newPrivateKey(ed25519.NewKeyFromSeed(raw)), nil
	case ed25519.PrivateKeySize:
		k := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
		if !bytes.Equal(k[ed25519.SeedSize:], raw[ed25519.SeedSize:]) {
			return nil, &KeyError{Source: source, Reason: "the public key embedded in the 64-byte key does not match its seed"}
		}
		return newPrivateKey(k), nil
	default:
		return nil, &KeyError{Source: source, Reason: fmt.Sprintf("decodes to %d bytes; want a 32-byte seed or a 64-byte seed and public key", len(raw))}
	}
}

// maxKeyFileSize bounds a private key file: a key in any accepted form
// fits in a few hundred bytes, so anything larger is not a key.
const maxKeyFileSize = 64 << 10

// LoadPrivateKeyFile reads a private key from a file holding base64 of a
// 32- or 64-byte key, or a PKCS#8 PEM block ("PRIVATE KEY"). Like OpenSSH,
// it refuses a file that group or others may read or write. A file larger
// than maxKeyFileSize is refused without being read.
func LoadPrivateKeyFile(path string) (*PrivateKey, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, &KeyError{Source: path, Reason: describeFSError(err)}
	}
	if !info.Mode().IsRegular() {
		return nil, &KeyError{Source: path, Reason: "not a regular file"}
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, &KeyError{Source: path, Reason: fmt.Sprintf(
			"permissions %04o are too open: group or others can access it; run: chmod 600 %s", perm, path)}
	}
	if info.Size() > maxKeyFileSize {
		return nil, tooLarge(path, info.Size())
	}
	data, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	if block, _ := pem.Decode(data); block != nil {
		if block.Type != "PRIVATE KEY" {
			return nil, &KeyError{Source: path, Reason: fmt.Sprintf("PEM block is %q; want a PKCS#8 \"PRIVATE KEY\"", block.Type)}
		}
		parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, &KeyError{Source: path, Reason: "PEM block is not a valid PKCS#8 private key"}
		}
		k, ok := parsed.(ed25519.PrivateKey)
		if !ok {
			return nil, &KeyError{Source: path, Reason: fmt.Sprintf("PKCS#8 key is %T; want Ed25519", parsed)}
		}
		return newPrivateKey(k), nil
	}
	return parseBase64(path, string(data))
}

// readBounded reads at most maxKeyFileSize bytes of path, refusing a file
// that grew past the bound since it was checked.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &KeyError{Source: path, Reason: describeFSError(err)}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, &KeyError{Source: path, Reason: describeFSError(err)}
	}
	if len(data) > maxKeyFileSize {
		return nil, tooLarge(path, -1)
	}
	return data, nil
}

func tooLarge(path string, size int64) error {
	what := "is larger than"
	if size >= 0 {
		what = fmt.Sprintf("is %d bytes, more than", size)
	}
	return &KeyError{Source: path, Reason: fmt.Sprintf("%s the %d bytes (64 KiB) a key file may hold; it is not a private key", what, maxKeyFileSize)}
}

func describeFSError(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	default:
		return "cannot read the file"
	}
}

// Public returns the public key that verifies this key's signatures.
func (k *PrivateKey) Public() ed25519.PublicKey {
	key := k.bytes()
	if len(key) != ed25519.PrivateKeySize {
		return nil
	}
	return append(ed25519.PublicKey(nil), key[ed25519.SeedSize:]...)
}

func (k *PrivateKey) valid() bool { return len(k.bytes()) == ed25519.PrivateKeySize }

// String returns a redacted placeholder, never key material.
func (k PrivateKey) String() string { return "signing.PrivateKey" + redacted }

// Format writes a redacted placeholder for every fmt verb and flag, %#v
// included (fmt prefers a Formatter to a GoStringer). fmt itself handles
// %T (the type's name) and %p (an address, or for a value that is not a
// pointer "%!p(signing.PrivateKey={0xc…})"), neither of which reaches the
// key.
func (k PrivateKey) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, k.String()) }

// MarshalText encodes the key as a redacted placeholder. encoding/json
// uses it (a JSON string), and so do zerolog's Interface and Any and
// log/slog, which go through encoding/json or encoding.TextMarshaler.
func (k PrivateKey) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// Package signing signs requests to the venue with Ed25519.
//
// The venue authenticates every request with three headers: x-api-key,
// x-timestamp (Unix seconds) and x-signature, the standard base64 of an
// Ed25519 signature over
//
//	api_key + timestamp + request-target + METHOD + body
//
// with no separators. The request-target is the path with its query string,
// exactly as sent; the body is the exact bytes sent (empty when there is
// none). A Signer never re-serialises anything: marshal once, sign those
// bytes, send those bytes.
//
// A signature is valid for about 30 seconds after its timestamp, so a
// request that is sent again must be signed again; see package transport.
//
// # Secrets
//
// PrivateKey and Signer redact themselves in every print path with three
// methods: String (for a fmt.Stringer), Format (every fmt verb and flag,
// %#v included) and MarshalText (encoding/json, and zerolog's Interface,
// Any and Fields and log/slog, which go through it). fmt's own %p and %T,
// a bad verb's echo and a field fmt cannot call methods on (unexported, or
// inside one) print only a type name or an address: the secrets are held
// two pointers away, where fmt's reflection never follows. Nothing in this package puts key material in an error.
package signing

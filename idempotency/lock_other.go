//go:build !unix

package idempotency

// lockedElsewhere cannot tell here; Open then reports the file as found.
func lockedElsewhere(string) bool { return false }

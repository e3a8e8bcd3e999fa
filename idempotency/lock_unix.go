//go:build unix

package idempotency

import (
	"os"
	"syscall"
)

// lockedElsewhere reports whether another open file holds the advisory
// lock bbolt takes on path, without waiting for it.
func lockedElsewhere(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return err == syscall.EWOULDBLOCK
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

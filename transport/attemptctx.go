package transport

import (
	"context"
	"sync"
	"sync/atomic"
)

// attemptCtx is one attempt's context when the caller's can never end
// (its Done is nil, as context.Background's is): the attempt timeout, or a
// replay the rate budget refused (replay.go), is then all that ends it. It
// does what context.WithCancelCause would, for a fraction of the cost on
// every request: it needs no registration with its parent, and nothing
// needs to end it when the attempt is over, so it is simply dropped. (context.WithCancelCause's, with the child net/http
// derives from it, cost about 1.5 % of a loopback GET in
// BenchmarkSignedGET/paired: five allocations, a map of children and a
// cancel that contends with net/http's own.)
//
// net/http derives its own cancelable context from the request's; for a
// parent that is neither a context.Context of package context nor one
// with an AfterFunc method, package context would start a goroutine per
// child to watch it. attemptCtx has the AfterFunc method package context
// looks for, so a child registers its cancel with it instead.
type attemptCtx struct {
	context.Context // the caller's; its Done is nil

	done  chan struct{}
	ended atomic.Bool // set, once, before done is closed
	// cause is why the context ended early (a refused replay), nil when
	// the attempt timed out; set before ended.
	cause error

	mu sync.Mutex
	// after holds what AfterFunc registered, run once when the attempt
	// times out; buf backs it for the usual one or two.
	after []func()
	buf   [2]func()
}

func (a *attemptCtx) init(parent context.Context) {
	a.Context = parent
	a.done = make(chan struct{})
	a.after = a.buf[:0]
}

// Done implements context.Context.
func (a *attemptCtx) Done() <-chan struct{} { return a.done }

// Err implements context.Context: context.Canceled once the attempt timed
// out (as context.WithCancelCause's Err would say), nil before.
func (a *attemptCtx) Err() error {
	if a.ended.Load() {
		return context.Canceled
	}
	return nil
}

// timedOut reports whether the attempt timeout ended the context.
func (a *attemptCtx) timedOut() bool { return a.ended.Load() && a.cause == nil }

// end ends the context, once: it closes Done and runs what AfterFunc
// registered, outside the lock (a child's cancel reads Err).
func (a *attemptCtx) end() { a.endWith(nil) }

// endWith is end for a reason other than the attempt timeout, cause.
func (a *attemptCtx) endWith(cause error) {
	a.mu.Lock()
	if a.ended.Load() {
		a.mu.Unlock()
		return
	}
	a.cause = cause
	a.ended.Store(true)
	close(a.done)
	after := a.after
	a.after = nil
	a.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// AfterFunc arranges for f to run once the context ends, as package
// context expects of a parent it does not know (afterFuncer): f cancels a
// child context. It runs at once, in a goroutine of its own, when the
// context has already ended (the caller may hold the child's lock).
//
// stop does not take f back, and says so by returning false: package
// context calls it only once the child is done (and ignores the result),
// when a later run of f is a no-op; and context.AfterFunc, whose own
// stop is the one its callers use, guards its function with a sync.Once
// of its own. Taking f back would cost an allocation per attempt; keeping
// it costs nothing, as the context is dropped with its attempt.
func (a *attemptCtx) AfterFunc(f func()) (stop func() bool) {
	a.mu.Lock()
	if a.ended.Load() {
		a.mu.Unlock()
		go f()
		return keep
	}
	a.after = append(a.after, f)
	a.mu.Unlock()
	return keep
}

func keep() bool { return false }

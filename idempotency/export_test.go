package idempotency

// SetSync turns the bolt store's fsyncs on or off, for benchmarks that
// build a history fast and then measure with every commit synced.
func SetSync(s Store, on bool) { s.(*boltStore).db.NoSync = !on }

// Commits returns the bolt store's transaction id: one more per commit.
func Commits(s Store) int { return commits(s) }

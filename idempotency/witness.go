package idempotency

// Witness is implemented by a Store that can vouch for newness: when its
// Create reports created == true, no create for that client_order_id was
// sent by any process recently, because every such send would have been
// recorded in this store first and the store cannot have lost that
// record (it is not wiped, restored from an old copy or failed over to a
// replica that lacks recent writes while in use).
//
// A Store that does not implement Witness, or whose VouchesNew returns
// false, does not vouch: package orders then looks the order up at the
// venue before the first send of an intent, since a create sent by a
// process whose record was lost may have landed.
type Witness interface {
	// VouchesNew reports whether the store vouches for newness as
	// described above. It is constant for the life of the store.
	VouchesNew() bool
}

// VouchesNew implements Witness: true. The store Open returns is one file
// held under an exclusive lock by one process at a time, and every change
// is synced before Create or Update returns, so a record the Placer wrote
// before a send is there for whoever opens the file next.
func (s *boltStore) VouchesNew() bool { return true }

// VouchesNew implements Witness: false. The store NewMemoryStore returns
// forgets everything when its process ends, so a fresh one cannot tell
// whether an earlier process, with its own store, sent a create for the
// same key.
func (m *memoryStore) VouchesNew() bool { return false }

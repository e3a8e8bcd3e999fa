package idempotency

import (
	"context"
	"errors"
	"time"
)

// State is where an intent stands.
type State string

// The states of an intent.
const (
	// Pending: recorded, and the create may have been sent; its outcome
	// has not been learned.
	Pending State = "pending"
	// Unknown: the create was sent and its answer was ambiguous (429, 5xx,
	// timeout, connection lost), or was a 2xx whose order could not be
	// read (Record.Answered2xx); only a lookup can tell.
	Unknown State = "unknown"
	// Acknowledged: the venue holds the order (OrderID).
	Acknowledged State = "acknowledged"
	// Rejected: the venue refused the create; nothing was placed.
	Rejected State = "rejected"
	// NotPlaced: no order exists and none can appear any more: every
	// signature the create was sent with has expired and a lookup after
	// that found nothing, or nothing was ever sent.
	NotPlaced State = "not_placed"
)

// resolved reports whether s is final for the create that was sent:
// acknowledged or rejected. NotPlaced is settled too, but a later Place
// with the same key may send again.
func (s State) resolved() bool { return s == Acknowledged || s == Rejected }

// Open reports whether an intent in state s may have an order at the venue
// that nobody has seen yet.
func (s State) Open() bool { return s == Pending || s == Unknown }

// Record is one intent to place one order.
type Record struct {
	// ClientOrderID identifies the record and the order at the venue.
	ClientOrderID string `json:"client_order_id"`
	// Key is the caller's idempotency key; empty for a create sent once
	// under a random id.
	Key           string `json:"key,omitempty"`
	Namespace     string `json:"namespace,omitempty"`
	AccountNumber string `json:"account_number"`
	Symbol        string `json:"symbol"`
	// Fingerprint identifies the request; a key names one request only.
	Fingerprint string `json:"fingerprint"`
	// Notional is the order's value in the quote currency as judged when
	// it was sent (a decimal string), for limits that count the store's
	// intents; kept once settled. Empty: not judged.
	Notional string `json:"notional,omitempty"`
	State    State  `json:"state"`
	// OrderID is the venue's id once acknowledged.
	OrderID string `json:"order_id,omitempty"`
	// Order is the venue's JSON of the order when acknowledged.
	Order []byte `json:"order,omitempty"`
	// Reason says why it was rejected or not placed.
	Reason string `json:"reason,omitempty"`
	// Body is the exact create body, so that a resend sends the same bytes.
	Body []byte `json:"body"`
	// Target is the create's request-target.
	Target string `json:"target"`
	// Sends counts the signatures a create was sent with.
	Sends int `json:"sends"`
	// Answered2xx: the venue answered a send of the create with a 2xx, so
	// an order exists, but its body could not be read (undecodable, too
	// large, or naming another client_order_id). Such an intent is never
	// sent again and never taken as not placed: it stays Unknown until a
	// lookup finds its order.
	Answered2xx bool `json:"answered_2xx,omitempty"`
	// CreatedAt is when the intent was recorded.
	CreatedAt time.Time `json:"created_at"`
	// FirstSentAt is the time of the first signature; zero if never sent.
	FirstSentAt time.Time `json:"first_sent_at,omitzero"`
	// LastSignedAt is the time of the latest signature.
	LastSignedAt time.Time `json:"last_signed_at,omitzero"`
	UpdatedAt    time.Time `json:"updated_at"`
	// Holder is the claim a Create or Update is made under: a token the
	// caller draws afresh for each piece of work on the intent (one Place,
	// one Recover), never shared with another. See Store.
	Holder string `json:"-"`
}

// Errors a Store returns.
var (
	// ErrNotFound: no record has that client_order_id.
	ErrNotFound = errors.New("idempotency: no such intent")
	// ErrLocked: another process holds the store.
	ErrLocked = errors.New("idempotency: store is in use by another process")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("idempotency: store is closed")
	// ErrInProgress: Create refused because another holder (another
	// Place or Recover, in this process or another) holds the intent's
	// claim.
	ErrInProgress = errors.New("idempotency: the intent is in progress elsewhere")
	// ErrClaimLost: Update refused because the caller no longer holds the
	// intent's claim.
	ErrClaimLost = errors.New("idempotency: the caller no longer holds the intent's claim")
)

// Store keeps intents. Implementations are safe for concurrent use and
// make every successful Create, Update and Release durable before
// returning.
//
// # Claims
//
// The store, not its callers, keeps two holders off one intent, whoever
// they are: goroutines, Placers and Clients sharing one Store value, or
// processes sharing one database. Every Create and Update names its
// holder (Record.Holder, a token drawn afresh for each piece of work):
//
//   - Create of a new ClientOrderID writes the record, held by the caller.
//   - Create of an existing, open or not placed intent hands its claim to
//     the caller only when nobody holds it: its holder released it,
//     settled it, or is known to be gone (a process that held a bbolt
//     file and ended; a Redis claim whose lease lapsed once every
//     signature it sent has expired). Otherwise it writes nothing and
//     returns an error matching ErrInProgress. An acknowledged or
//     rejected record is returned to anyone and claimed by nobody.
//   - Update succeeds only for the holder; anyone else gets ErrClaimLost.
//     An update to a final state (acknowledged, rejected, not placed)
//     releases the claim.
//   - Release drops the caller's claim and leaves the record as it is.
//
// So a record held by nobody was last written by a holder that can write
// no more: whatever it sent is recorded in it (every signature is
// recorded before it is sent).
type Store interface {
	// Create records rec, held by rec.Holder, unless a record with its
	// ClientOrderID exists; then it returns that record with created ==
	// false, claimed for rec.Holder as described above, or an error
	// matching ErrInProgress.
	Create(ctx context.Context, rec Record) (existing Record, created bool, err error)
	// Get returns the record for a client_order_id, or ErrNotFound.
	Get(ctx context.Context, clientOrderID string) (Record, error)
	// Update replaces an existing record held by rec.Holder, or returns
	// ErrNotFound or an error matching ErrClaimLost.
	Update(ctx context.Context, rec Record) error
	// Release drops holder's claim on the intent, if it holds it.
	Release(ctx context.Context, clientOrderID, holder string) error
	// List returns the records in the given states (all when none are
	// given), oldest first.
	List(ctx context.Context, states ...State) ([]Record, error)
	// Close releases the store.
	Close() error
}

package idempotency

import (
	"encoding/binary"

	"github.com/google/uuid"
)

// namespaceID is the UUIDv5 namespace of every client_order_id tradewire
// derives. It is fixed forever: changing it would change every id.
var namespaceID = uuid.MustParse("4a0f6a0e-1d5c-5b8e-9d1a-7a3c2b1e0f42")

// ClientOrderID returns the client_order_id for an idempotency key: a
// UUIDv5 over (account number, namespace, key), each part length-prefixed
// so that no two different triples encode alike. namespace may be empty.
func ClientOrderID(accountNumber, namespace, key string) string {
	name := make([]byte, 0, len("tradewire/v1")+len(accountNumber)+len(namespace)+len(key)+4*binary.MaxVarintLen64)
	name = append(name, "tradewire/v1"...)
	for _, part := range []string{accountNumber, namespace, key} {
		name = binary.AppendUvarint(name, uint64(len(part)))
		name = append(name, part...)
	}
	return uuid.NewSHA1(namespaceID, name).String()
}

package broker

import "context"

// For package broker_test: the lookup by client_order_id behind
// OrderByKey, and the error it returns when no order is found.

type NoSuchClientOrderError = noSuchClientOrderError

// OrderByClientOrderID looks id up as OrderByKey does once it has derived
// it, in the store the Client has open, if any.
func (c *Client) OrderByClientOrderID(ctx context.Context, id string) (*Order, error) {
	c.place.mu.Lock()
	store := c.place.store
	c.place.mu.Unlock()
	return c.orderByClientOrderID(ctx, id, store)
}

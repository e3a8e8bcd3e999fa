package orders

// ErrLookupIncomplete is errLookupIncomplete, for package orders_test.
var ErrLookupIncomplete = errLookupIncomplete

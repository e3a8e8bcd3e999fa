// Package redisurl prints a Redis URL fit for messages and logs.
package redisurl

import "net/url"

// Redact returns raw with its password, if any, replaced, or a placeholder
// when raw does not parse (it may hold a password anywhere).
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable Redis URL)"
	}
	return u.Redacted()
}

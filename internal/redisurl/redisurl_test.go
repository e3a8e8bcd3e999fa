package redisurl

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"redis://:hunter2@10.0.0.5:6379/0", "redis://:xxxxx@10.0.0.5:6379/0"},
		{"rediss://fleet:hunter2@cache.example:6380", "rediss://fleet:xxxxx@cache.example:6380"},
		{"redis://127.0.0.1:6379", "redis://127.0.0.1:6379"},
		{"redis://:hunter2@[::1", "(unparsable Redis URL)"},
	} {
		got := Redact(tc.raw)
		if got != tc.want || strings.Contains(got, "hunter2") {
			t.Errorf("Redact(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

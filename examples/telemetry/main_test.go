package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// The Place is the trace's root; its three requests (the account, the
	// trading pairs, the create) are its children; the quote read before
	// it made no span.
	root := regexp.MustCompile(`(?m)^span tradewire\.Place ([0-9a-f]{16})$`).FindStringSubmatch(got)
	if root == nil {
		t.Fatalf("no root span tradewire.Place:\n%s", got)
	}
	for _, child := range []string{"HTTP GET", "HTTP GET", "HTTP POST"} {
		line := "span " + child + ", child of " + root[1] + "\n"
		if !strings.Contains(got, line) {
			t.Fatalf("no %q:\n%s", line, got)
		}
		got = strings.Replace(got, line, "", 1)
	}
	if n := strings.Count(got, "span "); n != 1 {
		t.Errorf("%d spans besides the Place's children, want the Place's alone:\n%s", n, out.String())
	}
	for _, want := range []string{`tradewire_outcome="placed"} 1`, `url_template="/api/v2/crypto/marketdata/best_bid_ask/"} 1`,
		`http_request_method="POST",http_response_status_code="201"`} {
		if !strings.Contains(got, want) {
			t.Errorf("metrics without %s:\n%s", want, out.String())
		}
	}
}

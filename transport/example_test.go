package transport_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/tradewire/tradewire/signing"
	"github.com/tradewire/tradewire/transport"
)

// A bot reads through a Client; a 404 is told apart with errors.Is.
func Example() {
	venue := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v2/crypto/trading/accounts/" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"type":"client_error","errors":[{"detail":"Not found.","attr":null}]}`)
			return
		}
		fmt.Fprint(w, `{"results":[{"account_number":"AB1234567890"}]}`)
	}))
	defer venue.Close()

	key, err := signing.ParsePrivateKey("xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU=")
	if err != nil {
		panic(err)
	}
	signer, err := signing.New("rh-api-6148effc-c0b1-486c-8940-a1d099456be6", key)
	if err != nil {
		panic(err)
	}
	client, err := transport.New(venue.URL, signer, transport.Config{})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	resp, err := client.Get(ctx, "/api/v2/crypto/trading/accounts/")
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, string(resp.Body))

	_, err = client.Get(ctx, "/api/v2/crypto/trading/orders/00000000-0000-0000-0000-000000000000/")
	fmt.Println(errors.Is(err, transport.ErrNotFound))
	// Output:
	// 200 {"results":[{"account_number":"AB1234567890"}]}
	// true
}

// A create that meets a 503 is never sent again: the caller learns that
// the outcome is unknown and must look the order up. The 503 behind it
// does not read as "unavailable, retry later".
func Example_unknownOutcome() {
	sent := 0
	venue := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sent++
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer venue.Close()

	key, _ := signing.ParsePrivateKey("xQnTJVeQLmw1/Mg2YimEViSpw/SdJcgNXZ5kQkAXNPU=")
	signer, _ := signing.New("rh-api-6148effc-c0b1-486c-8940-a1d099456be6", key)
	client, _ := transport.New(venue.URL, signer, transport.Config{})

	_, err := client.Do(context.Background(), "POST", "/api/v2/crypto/trading/orders/", []byte(`{"client_order_id":"131de903-5a9c-4260-abc1-28d562a5dcf0"}`))
	fmt.Println(errors.Is(err, transport.ErrUnknownOutcome), errors.Is(err, transport.ErrUnavailable), "sent", sent, "time(s)")
	// Output:
	// true false sent 1 time(s)
}
